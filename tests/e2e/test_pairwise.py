"""End to end in headless chromium: an assessor completes a top-3 of 6 documents with the
keyboard; the coordinator's results page shows the resulting order."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import AbstractBaseUser

from labeling.models import Campaign
from labeling.services.campaigns import campaign_assessors_assign, campaign_create, campaign_start
from pairwise.models import Comparison, TopKHeap
from tests.e2e.helpers import log_in
from uploads.imports import documents_import, topics_import
from uploads.run_imports import runs_import

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]

TOPIC = {
    "id": "501",
    "title": "solar panel recycling",
    "description": "How are old solar panels recycled?",
    "narrative": "Relevant documents describe recycling processes for photovoltaic panels.",
}
# docno -> (title, how relevant it truly is); the assessor below answers by this truth.
DOCUMENTS = {
    "SP-1": ("Recycling silicon panels step by step", 6),
    "SP-2": ("Glass recovery from old solar panels", 5),
    "SP-3": ("EU rules on panel waste", 4),
    "SP-4": ("Solar panel prices fall", 3),
    "SP-5": ("Rooftop installation guide", 2),
    "SP-6": ("History of the photovoltaic effect", 1),
}


@pytest.fixture
def topk_campaign(people: dict[str, AbstractBaseUser]) -> Campaign:
    """One topic, six documents from one run (ranked worst first), k = 3, alice assigned."""
    campaign = campaign_create(
        creator=people["coordinator"],
        name="Solar",
        metric="DCG@6",
        budget=50,
        budget_unit="judgments",
        judging_mode="topk",
        mode_settings={"k": 3},
    )
    topics_import(campaign=campaign, files=[("topics.jsonl", io.BytesIO(json.dumps(TOPIC).encode()))])
    records = "".join(
        json.dumps({"docno": docno, "title": title, "text": f"{title}. Solar panels are discussed here."})
        + "\n"
        for docno, (title, _) in DOCUMENTS.items()
    )
    documents_import(campaign=campaign, files=[("docs.jsonl", io.BytesIO(records.encode()))])
    worst_first = sorted(DOCUMENTS, key=lambda docno: DOCUMENTS[docno][1])
    run = "".join(f"501 Q0 {docno} {rank} {10 - rank}.0 naive\n" for rank, docno in enumerate(worst_first, 1))
    runs_import(campaign=campaign, files=[("naive.run", io.BytesIO(run.encode()))])
    campaign_assessors_assign(campaign=campaign, usernames=["alice"])
    return campaign_start(campaign=campaign)


def shown(page: Any) -> tuple[str, str, str]:
    """(task id, left docno, right docno) of the pair on screen."""
    return tuple(
        page.evaluate(
            "[document.getElementById('item').dataset.task || '', "
            "document.getElementById('left-docno').textContent, "
            "document.getElementById('right-docno').textContent]"
        )
    )


def wait_for_pair_other_than(page: Any, task: str) -> None:
    page.wait_for_function(
        """previous => {
            const item = document.getElementById('item');
            const empty = !document.getElementById('empty').hidden;
            const ready = !item.hidden && !document.querySelector('#answers button').disabled;
            return empty || (ready && item.dataset.task !== previous);
        }""",
        arg=task,
    )


def key_for(left: str, right: str) -> str:
    difference = DOCUMENTS[left][1] - DOCUMENTS[right][1]
    return "ArrowLeft" if difference > 0 else "ArrowRight" if difference < 0 else "ArrowDown"


def test_it_completes_a_top_3_of_6_with_the_keyboard_and_shows_the_order(
    browser_page: Any,
    live_server: Any,
    topk_campaign: Campaign,
    people: dict[str, AbstractBaseUser],
    screenshot_dir: Path,
) -> None:
    page = browser_page
    # The app's judging URL shows the campaign's own mode: the pair page, with no redirect.
    log_in(page, live_server.url, "alice", f"/judge/{topk_campaign.pk}/")
    assert page.url.endswith(f"/judge/{topk_campaign.pk}/")
    assert page.locator("#left-doc").count() == 1, "the top-k campaign's judge page shows pairs"
    wait_for_pair_other_than(page, "")
    page.evaluate("window.stillTheSamePage = 42")
    assert "solar panel recycling" in page.locator("#topic-title").text_content()
    page.screenshot(path=str(screenshot_dir / "pairwise.png"))

    # Answer once with the wrong key, undo it, and answer the same pair again correctly.
    task, left, right = shown(page)
    wrong = "ArrowRight" if key_for(left, right) == "ArrowLeft" else "ArrowLeft"
    page.keyboard.press(wrong)
    wait_for_pair_other_than(page, task)
    page.keyboard.press("u")
    page.wait_for_function("task => document.getElementById('item').dataset.task === task", arg=task)
    assert shown(page) == (task, left, right), "undo shows the same pair, same sides"

    answered = 0
    while page.locator("#empty").is_hidden():
        task, left, right = shown(page)
        page.keyboard.press(key_for(left, right))
        wait_for_pair_other_than(page, task)
        answered += 1
        assert answered < 40, "a top-3 of 6 needs far fewer comparisons"

    assert page.evaluate("window.stillTheSamePage") == 42, "judging never reloads the page"
    heap = TopKHeap.objects.get(campaign=topk_campaign)
    assert heap.done and heap.judgments == answered == Comparison.objects.count()
    assert heap.order == ["SP-1", "SP-2", "SP-3"]
    assert all(seconds > 0 for seconds in Comparison.objects.values_list("seconds", flat=True))

    page.context.clear_cookies()
    log_in(page, live_server.url, "carl", f"/pairwise/{topk_campaign.pk}/results/")
    row = page.locator('#topk tr[data-topic="501"][data-assessor="alice"]')
    assert row.locator(".topk-order li").all_text_contents() == ["SP-1", "SP-2", "SP-3"]
    assert "done" in row.text_content()

    # The campaign dashboard shows the same order in its pairwise section.
    page.goto(f"{live_server.url}/campaigns/{topk_campaign.pk}/")
    section = page.locator('#pairwise-section tr[data-topic="501"]')
    assert "SP-1, SP-2, SP-3" in section.text_content()
    page.locator("#pairwise-section").screenshot(path=str(screenshot_dir / "pairwise-dashboard.png"))
    page.screenshot(path=str(screenshot_dir / "pairwise-results.png"))


def test_it_lets_the_coordinator_release_a_list_whose_assessor_left(
    browser_page: Any,
    live_server: Any,
    topk_campaign: Campaign,
    people: dict[str, AbstractBaseUser],
    screenshot_dir: Path,
) -> None:
    from pairwise import services as pairwise_services

    alice = people["assessor"]
    for _ in range(2):  # alice answers two pairs, then leaves
        task = pairwise_services.pair_next(campaign=topk_campaign, assessor=alice)
        pairwise_services.pair_answer(task=task, assessor=alice, outcome="tie", seconds=2.0)
    page = browser_page
    log_in(page, live_server.url, "carl", f"/pairwise/{topk_campaign.pk}/results/")
    row = page.locator('#topk tr[data-topic="501"][data-assessor="alice"]')
    assert "in progress" in row.text_content() and "last answer" in row.text_content()
    page.screenshot(path=str(screenshot_dir / "pairwise-release.png"))
    row.get_by_role("button", name="Release").click()
    page.wait_for_selector(".messages")
    assert "released; the next assessor continues" in page.locator(".messages").text_content()
    assert page.locator('#topk tr[data-topic="501"][data-assessor="alice"]').count() == 0
    heap = TopKHeap.objects.get(campaign=topk_campaign)
    assert heap.assessor_id is None and heap.judgments == 2


def test_it_skips_a_pairwise_pair_with_the_keyboard(
    browser_page: Any, live_server: Any, people: dict[str, AbstractBaseUser]
) -> None:
    from labeling.models import Skip

    campaign = campaign_create(
        creator=people["coordinator"], name="Solar pairs", metric="DCG@6", budget=20, judging_mode="pairwise"
    )
    for kind, name, body in (
        ("topics", "topics.jsonl", json.dumps(TOPIC)),
        (
            "documents",
            "docs.jsonl",
            "".join(json.dumps({"docno": d, "title": t}) + "\n" for d, (t, _) in DOCUMENTS.items()),
        ),
    ):
        {"topics": topics_import, "documents": documents_import}[kind](
            campaign=campaign, files=[(name, io.BytesIO(body.encode()))]
        )
    run = "".join(f"501 Q0 {docno} {rank} {10 - rank}.0 naive\n" for rank, docno in enumerate(DOCUMENTS, 1))
    runs_import(campaign=campaign, files=[("naive.run", io.BytesIO(run.encode()))])
    campaign_assessors_assign(campaign=campaign, usernames=["alice"])
    campaign_start(campaign=campaign)
    page = browser_page
    log_in(page, live_server.url, "alice", f"/judge/{campaign.pk}/")
    wait_for_pair_other_than(page, "")
    task, _, _ = shown(page)
    page.keyboard.press("s")
    page.locator("#skip-form").wait_for(state="visible")
    page.keyboard.press("2")
    page.keyboard.press("Enter")
    wait_for_pair_other_than(page, task)
    skip = Skip.objects.get()
    assert (skip.kind, str(skip.unit), skip.reason) == ("pair", task, "not_sure")


def test_it_skips_a_top_k_comparison_by_handing_the_list_on(
    browser_page: Any, live_server: Any, topk_campaign: Campaign
) -> None:
    from labeling.models import Skip

    page = browser_page
    log_in(page, live_server.url, "alice", f"/judge/{topk_campaign.pk}/")
    wait_for_pair_other_than(page, "")
    task, left, right = shown(page)
    page.keyboard.press(key_for(left, right))
    wait_for_pair_other_than(page, task)
    task, _, _ = shown(page)
    page.keyboard.press("s")
    page.locator("#skip-form").wait_for(state="visible")
    assert "continues this query's sort where you stopped" in page.locator("#skip-form legend").text_content()
    page.keyboard.press("1")
    page.keyboard.press("Enter")
    # The only topic's list went on: nothing is left for alice.
    page.locator("#empty").wait_for(state="visible")
    skip = Skip.objects.get()
    assert (skip.kind, str(skip.unit), skip.reason) == ("pair", task, "cannot_judge")
    heap = TopKHeap.objects.get(campaign=topk_campaign)
    assert heap.assessor_id is None and heap.judgments == 1 and not heap.done
