"""End to end in headless chromium: an assessor judges with the keyboard; a coordinator sets up."""

from __future__ import annotations

import math
import time
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest
from django.contrib.auth.models import AbstractBaseUser

from labeling.models import Campaign, Judgment, System
from labeling.services.campaigns import (
    campaign_update,
)
from tests.e2e.conftest import DOCUMENTS, run_file
from tests.e2e.helpers import judge_with_key, log_in, shown_item

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]


def wait_for_new_item(page: Any, previous: str) -> None:
    page.wait_for_function(
        """previous => {
            const now = document.getElementById('topic-id').textContent + '|' +
                        document.getElementById('doc-docno').textContent;
            const ready = !document.querySelector('#grades button').disabled;
            return ready && now !== previous && !document.getElementById('item').hidden;
        }""",
        arg=previous,
    )


def stored_judgments(user: AbstractBaseUser) -> dict[str, tuple[int, float]]:
    rows = Judgment.objects.filter(assessor=user).values_list(
        "topic__qid", "document__docno", "grade", "seconds"
    )
    return {f"Topic {qid}|{docno}": (grade, seconds) for qid, docno, grade, seconds in rows}


def test_it_stores_three_keyboard_judgments_without_reloading(
    browser_page: Any,
    live_server: Any,
    running_campaign: Campaign,
    people: dict[str, AbstractBaseUser],
    screenshot_dir: Path,
) -> None:
    page = browser_page
    progress_calls: list[float] = []

    def count_progress(request: Any) -> None:
        if "/progress/" in request.url:
            progress_calls.append(time.monotonic())

    page.on("request", count_progress)
    log_in(page, live_server.url, "alice", "/judge/")
    assert page.url.endswith(f"/judge/{running_campaign.pk}/")
    wait_for_new_item(page, "")
    page.evaluate("window.stillTheSamePage = 42")
    assert page.locator("#doc-body mark").count() > 0, "query terms are highlighted in the document"

    page.keyboard.press("?")
    assert page.locator("#help").is_visible()
    page.keyboard.press("Escape")
    assert not page.locator("#help").is_visible()

    page.wait_for_timeout(400)
    page.screenshot(path=str(screenshot_dir / "judge.png"))
    first = judge_with_key(page, "2")
    # The count shows the assessor's own judgment at once, within the 10 s the bar waits to ask.
    page.wait_for_function(
        "document.getElementById('progress-text').textContent.startsWith('1 judgment ')", timeout=3000
    )
    # So does the share of the budget it spent (a budget of judgments: one each).
    assert running_campaign.budget_unit == "judgments"
    used = math.floor(100 / running_campaign.budget + 0.5)
    assert page.locator("#progress-text").inner_text() == f"1 judgment · {used}% of the budget used"

    # Pause for a second on the second item: the veil shows, grade keys do nothing, and the
    # paused second is not counted.
    wait_for_new_item(page, first)
    started = time.monotonic()
    page.keyboard.press("p")
    assert page.locator(".paused-veil").is_visible()
    assert "paused" in (page.locator("#timer").get_attribute("class") or "")
    page.keyboard.press("1")
    page.wait_for_timeout(1000)
    assert len(stored_judgments(people["assessor"])) == 1, "a grade key while paused stores nothing"
    page.keyboard.press("p")
    assert not page.locator(".paused-veil").is_visible()
    page.wait_for_timeout(300)
    second = judge_with_key(page, "0")
    second_wall = time.monotonic() - started

    wait_for_new_item(page, second)
    page.wait_for_timeout(300)
    third = judge_with_key(page, "1")

    assert page.evaluate("window.stillTheSamePage") == 42, "judging never reloads the page"
    stored = stored_judgments(people["assessor"])
    assert {item: grade for item, (grade, _) in stored.items()} == {first: 2, second: 0, third: 1}
    assert all(seconds is not None and seconds > 0.2 for _, seconds in stored.values())
    assert stored[second][1] < second_wall - 0.8, "the paused second is not counted"
    page.wait_for_function("document.getElementById('progress-text').textContent.startsWith('3 judgments')")
    # The bar follows the campaign at most every 10 s (one trailing call), not after every item;
    # the count above is the page's own until that call comes.
    deadline = time.monotonic() + 15
    while len(progress_calls) < 2 and time.monotonic() < deadline:
        page.wait_for_timeout(200)
    assert 2 <= len(progress_calls) <= 3, progress_calls
    gaps = [later - earlier for earlier, later in zip(progress_calls, progress_calls[1:], strict=False)]
    assert all(gap >= 9.0 for gap in gaps), gaps

    # The coordinator's view of the same campaign, for the screenshot.
    page.context.clear_cookies()
    log_in(page, live_server.url, "carl", f"/campaigns/{running_campaign.pk}/")
    assert page.locator("text=Assessor throughput").is_visible()
    assert page.locator("td", has_text="alice").count() == 1
    page.screenshot(path=str(screenshot_dir / "campaign.png"), full_page=True)


def test_it_undoes_the_last_judgment_with_u(
    browser_page: Any,
    live_server: Any,
    running_campaign: Campaign,
    people: dict[str, AbstractBaseUser],
) -> None:
    page = browser_page
    log_in(page, live_server.url, "alice", f"/judge/{running_campaign.pk}/")
    wait_for_new_item(page, "")
    judged = judge_with_key(page, "2")
    assert len(stored_judgments(people["assessor"])) == 1

    page.keyboard.press("u")
    page.wait_for_function(
        "item => document.getElementById('topic-id').textContent + '|' + "
        "document.getElementById('doc-docno').textContent === item",
        arg=judged,
    )
    assert stored_judgments(people["assessor"]) == {}

    page.wait_for_function("!document.querySelector('#grades button').disabled")
    judge_with_key(page, "0")
    stored = stored_judgments(people["assessor"])
    assert {item: grade for item, (grade, _) in stored.items()} == {judged: 0}

    # A session that ends mid-work sends the assessor to the login page, and back afterwards.
    page.context.clear_cookies()
    page.wait_for_function("!document.querySelector('#grades button').disabled")
    page.keyboard.press("1")
    page.wait_for_url(lambda url: "/accounts/login/" in url)
    query = parse_qs(urlsplit(page.url).query)
    assert query["next"] == [f"/judge/{running_campaign.pk}/"]
    assert len(stored_judgments(people["assessor"])) == 1


def test_it_lets_a_coordinator_create_a_campaign_and_upload_runs(
    browser_page: Any,
    live_server: Any,
    people: dict[str, AbstractBaseUser],
    tmp_path: Path,
    screenshot_dir: Path,
) -> None:
    page = browser_page
    log_in(page, live_server.url, "carl", "/")
    page.click("text=New campaign")
    page.fill("#id_name", "Robust replay")
    page.fill("#id_metric", "ERR@10")
    page.select_option("#id_goal", "difference")
    page.fill("#id_grades", "Not relevant\nRelevant\nHighly relevant")
    page.fill("#id_budget", "250")
    page.select_option("#id_budget_unit", "judgments")
    page.fill("#id_overlap", "2")
    page.click("button:has-text('Create campaign')")
    page.wait_for_load_state()
    campaign = Campaign.objects.get(name="Robust replay")
    assert page.url.endswith(f"/campaigns/{campaign.pk}/")
    assert (campaign.metric, campaign.goal, campaign.budget, campaign.overlap) == (
        "ERR@10",
        "difference",
        250,
        2,
    )
    assert [grade["name"] for grade in campaign.grades] == ["Not relevant", "Relevant", "Highly relevant"]

    broken = tmp_path / "broken.run"
    broken.write_text("301 Q0 WT-1 1 9.5 good\n301 Q0 WT-2 two 8.5 good\n")
    page.set_input_files("#upload-runs", [str(broken)])
    page.click("form:has(#upload-runs) button[type=submit]")
    page.wait_for_load_state()
    error_table = page.locator("table", has_text="broken.run")
    assert error_table.is_visible()
    assert error_table.locator("td.num").first.inner_text().strip() == "2", "the error names line 2"
    assert not System.objects.filter(campaign=campaign).exists(), "nothing is half-imported"

    good = tmp_path / "good.run"
    good.write_text(run_file("good", [d for d, _, _ in DOCUMENTS]).getvalue().decode())
    poor = tmp_path / "poor.run"
    poor.write_text(run_file("poor", [d for d, _, _ in DOCUMENTS][::-1]).getvalue().decode())
    page.set_input_files("#upload-runs", [str(good), str(poor)])
    # Keep the first submit from leaving the page: meanwhile the form says what it is doing and
    # cannot be sent twice. Then send it for real.
    form = "form:has(#upload-runs)"
    page.evaluate(f"document.querySelector('{form}').addEventListener('submit', e => e.preventDefault())")
    page.click(f"{form} button[type=submit]")
    status = page.locator(f"{form} .upload-status")
    status.wait_for(state="visible")
    assert "Uploading 2 files" in status.inner_text() and "checking every line" in status.inner_text()
    page.wait_for_function(f"document.querySelector('{form} button[type=submit]').disabled")
    page.screenshot(path=str(screenshot_dir / "upload.png"))
    with page.expect_navigation():
        page.evaluate(f"document.querySelector('{form}').submit()")
    assert page.locator(".messages .success").is_visible()
    systems = dict(System.objects.filter(campaign=campaign).values_list("name", "filename"))
    assert sorted(systems) == ["good", "poor"]

    page.fill("#id_usernames", "alice")
    page.click("button:has-text('Assign')")
    page.wait_for_load_state()
    page.click("button:has-text('Start judging')")
    page.wait_for_load_state()
    # No topics file was uploaded: the pre-flight list says so, and Start asks to confirm.
    assert page.locator("#preflight li[data-kind='topics_missing']").is_visible()
    page.screenshot(path=str(screenshot_dir / "preflight.png"), full_page=True)
    campaign.refresh_from_db()
    assert campaign.status == Campaign.Status.DRAFT
    page.click("#start-anyway")
    page.wait_for_load_state()
    campaign.refresh_from_db()
    assert campaign.status == Campaign.Status.RUNNING
    assert campaign.members.filter(user__username="alice", role="assessor").exists()
    page.screenshot(path=str(screenshot_dir / "campaign-setup.png"), full_page=True)


def test_it_tells_the_assessor_when_the_budget_is_spent(
    browser_page: Any,
    live_server: Any,
    running_campaign: Campaign,
    people: dict[str, AbstractBaseUser],
    screenshot_dir: Path,
) -> None:
    campaign_update(campaign=running_campaign, budget=3)
    page = browser_page
    log_in(page, live_server.url, "alice", f"/judge/{running_campaign.pk}/")
    presses = 0
    while presses < 10:
        page.wait_for_function(
            "!document.getElementById('empty').hidden || !document.querySelector('#grades button').disabled"
        )
        if page.locator("#empty").is_visible():
            break
        judge_with_key(page, "1")
        presses += 1
    page.screenshot(path=str(screenshot_dir / "judge-budget-spent.png"))
    assert page.locator("#empty-title").inner_text() in {"The budget is spent", "All done"}
    assert 0 < presses <= 3
    assert len(stored_judgments(people["assessor"])) == presses


def test_it_skips_with_the_keyboard_and_saves_a_note_with_the_next_grade(
    browser_page: Any,
    live_server: Any,
    running_campaign: Campaign,
    people: dict[str, AbstractBaseUser],
    screenshot_dir: Path,
) -> None:
    from labeling.models import Skip

    page = browser_page
    log_in(page, live_server.url, "alice", f"/judge/{running_campaign.pk}/")
    wait_for_new_item(page, "")
    skipped = shown_item(page)
    page.keyboard.press("s")
    page.locator("#skip-form").wait_for(state="visible")
    page.keyboard.press("3")  # document broken
    page.fill("#skip-note", "the page is empty")
    page.screenshot(path=str(screenshot_dir / "skip.png"))
    page.click("#skip-submit")
    wait_for_new_item(page, skipped)
    skip = Skip.objects.get()
    assert (skip.reason, skip.note, skip.assessor.username) == ("broken", "the page is empty", "alice")
    assert f"Topic {skip.topic.qid}|{skip.document.docno}" == skipped

    page.keyboard.press("n")
    page.fill("#note", "second paragraph only")
    page.keyboard.press("Enter")
    judged = judge_with_key(page, "1")
    assert judged != skipped
    note = Judgment.objects.get(assessor=people["assessor"]).note
    assert note == "second paragraph only"
    assert page.locator("#note-row").is_hidden()


def test_a_reloaded_judge_page_keeps_its_item_and_judges_it(
    browser_page: Any, live_server: Any, running_campaign: Campaign, people: dict[str, AbstractBaseUser]
) -> None:
    page = browser_page
    leases: list[str] = []
    page.on(
        "request",
        lambda request: leases.append(request.post_data or "") if "/lease/" in request.url else None,
    )
    log_in(page, live_server.url, "alice", "/judge/")
    wait_for_new_item(page, "")
    before = shown_item(page)
    page.reload()
    wait_for_new_item(page, "")
    after = shown_item(page)
    assert after == before, "the reloaded page is served the item it showed"
    # Back in view, the page reports the lease it was served (the closing page's "left" named its
    # own, older one: tests/labeling/test_leases.py shows that it changes nothing).
    page.evaluate("document.dispatchEvent(new Event('visibilitychange'))")
    page.wait_for_timeout(500)
    assert any('"state":"active"' in body and '"lease":"' in body for body in leases), leases
    qid, docno = after.removeprefix("Topic ").split("|")
    task = running_campaign.tasks.get(topic__qid=qid, document__docno=docno)
    assert task.assessor_id == people["assessor"].pk and task.answered_at is None
    judge_with_key(page, "2")
    assert stored_judgments(people["assessor"]).get(after, (None,))[0] == 2
