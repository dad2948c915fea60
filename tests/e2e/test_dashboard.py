"""End to end in headless chromium: the coordinator's dashboard shows the running estimates and
their chart, and its numbers change, without a reload, after an assessor judges more."""

from __future__ import annotations

import io
import json
import zlib
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import AbstractBaseUser
from playwright.sync_api import expect
from rest_framework.test import APIClient

from labeling.models import Campaign
from labeling.recompute import recompute
from labeling.services.campaigns import (
    campaign_assessors_assign,
    campaign_create,
    campaign_start,
)
from sampling.models import EstimateSnapshot
from tests.e2e.helpers import log_in
from uploads.imports import documents_import, topics_import
from uploads.run_imports import runs_import

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]

N_TOPICS = 12
DOCS_PER_TOPIC = 6
SYSTEMS = ("bm25", "dense", "rerank")


def true_grade(qid: str, docno: str) -> int:
    """The oracle assessor's grade: fixed by the pair, 0-2, skewed toward 0 like real qrels."""
    value = zlib.crc32(f"{qid}|{docno}".encode()) % 10
    return 0 if value < 5 else 1 if value < 8 else 2


def _run(tag: str, offset: int) -> io.BytesIO:
    """Each system ranks the topic's documents in its own rotation of the same list."""
    lines = []
    for topic in range(1, N_TOPICS + 1):
        docnos = [f"D{topic}-{d}" for d in range(DOCS_PER_TOPIC)]
        shift = (offset * topic) % DOCS_PER_TOPIC
        ranked = docnos[shift:] + docnos[:shift]
        lines += [f"{topic} Q0 {docno} {rank} {100 - rank} {tag}\n" for rank, docno in enumerate(ranked, 1)]
    return io.BytesIO("".join(lines).encode())


@pytest.fixture
def active_campaign(people: dict[str, AbstractBaseUser]) -> Campaign:
    """Twelve topics, documents of varying length, three runs; active sampling for bm25 - dense."""
    return campaign_of(people["coordinator"], strategy="active", goal="difference")


@pytest.fixture
def item_campaign(people: dict[str, AbstractBaseUser]) -> Campaign:
    """The same data with item-level importance sampling for one system."""
    return campaign_of(people["coordinator"], strategy="items", goal="one")


def campaign_of(coordinator: AbstractBaseUser, *, strategy: str, goal: str) -> Campaign:
    campaign = campaign_create(
        creator=coordinator,
        name="Web track replay",
        metric="DCG@5",
        grades=["Not relevant", "Relevant", "Highly relevant"],
        goal=goal,
        strategy=strategy,
        focus_systems=["bm25", "dense"] if goal == "difference" else ["bm25"],
        budget=60,
        budget_unit="judgments",
        seed=20130613,
    )
    topics = [{"id": str(t), "title": f"topic {t}", "description": "", "narrative": ""} for t in range(1, 13)]
    documents = [
        {"docno": f"D{t}-{d}", "title": f"document {d}", "text": "text", "length": 40 + 97 * ((t * d) % 11)}
        for t in range(1, N_TOPICS + 1)
        for d in range(DOCS_PER_TOPIC)
    ]
    topics_import(campaign=campaign, files=[("topics.jsonl", _jsonl(topics))])
    documents_import(campaign=campaign, files=[("docs.jsonl", _jsonl(documents))])
    runs_import(
        campaign=campaign,
        files=[(f"{tag}.run", _run(tag, offset)) for offset, tag in enumerate(SYSTEMS)],
    )
    campaign_assessors_assign(campaign=campaign, usernames=["alice"])
    return campaign_start(campaign=campaign)


def _jsonl(records: list[dict[str, Any]]) -> io.BytesIO:
    return io.BytesIO("".join(json.dumps(record) + "\n" for record in records).encode())


def judge_through_the_api(campaign: Campaign, assessor: AbstractBaseUser, count: int) -> int:
    """The oracle assessor answers up to `count` items over the REST API; returns how many."""
    client = APIClient()
    client.force_login(assessor)
    answered = 0
    while answered < count:
        response = client.get(f"/api/campaigns/{campaign.pk}/next/")
        if response.status_code == 204:
            break
        task = response.json()
        grade = true_grade(task["topic"]["id"], task["document"]["docno"])
        stored = client.post(f"/api/tasks/{task['task']}/answer/", {"grade": grade, "seconds": 4.0 + grade})
        assert stored.status_code == 201, stored.content
        answered += 1
    return answered


def judge_and_recompute(campaign: Campaign, assessor: AbstractBaseUser, batches: int) -> None:
    """Judge in batches of six, each followed by the worker's recompute (one snapshot each)."""
    for _ in range(batches):
        assert judge_through_the_api(campaign, assessor, 6) > 0
        recompute(campaign.pk)


def table_values(page: Any) -> dict[str, str]:
    """{'system|metric': shown estimate} from the dashboard's table."""
    return page.evaluate(
        """() => Object.fromEntries([...document.querySelectorAll('#estimates-table tr[data-system]')]
            .map(tr => [tr.dataset.system + '|' + tr.dataset.metric,
                        tr.querySelector('[data-field=value]').textContent]))"""
    )


def test_it_shows_live_estimates_that_change_after_judging(
    browser_page: Any,
    live_server: Any,
    active_campaign: Campaign,
    people: dict[str, AbstractBaseUser],
    screenshot_dir: Path,
) -> None:
    campaign = active_campaign
    judge_and_recompute(campaign, people["assessor"], 3)
    assert EstimateSnapshot.objects.filter(campaign=campaign).exists()

    page = browser_page
    log_in(page, live_server.url, "carl", f"/campaigns/{campaign.pk}/")
    page.click("a:has-text('Dashboard')")
    page.wait_for_url(f"**/campaigns/{campaign.pk}/dashboard/")
    page.evaluate("window.stillTheSamePage = 42")
    page.wait_for_function("Number(document.body.dataset.polls || 0) >= 1")

    before = table_values(page)
    assert set(before) == {f"{s}|{m}@5" for s in SYSTEMS for m in ("DCG", "ERR", "nDCG")}
    assert all(value != "—" for value in before.values()), before
    assert page.locator("#difference").is_visible()
    assert page.locator("#difference").inner_text().startswith("bm25 − dense on DCG@5")
    # A probability read from the interval shown, or none while there is no interval to read.
    shown = page.locator("#p-order-right").inner_text()
    unreliable = "no interval can be trusted yet" in page.locator("#difference").inner_text()
    assert shown.endswith("%") != unreliable and (not unreliable or shown.startswith("not read yet")), shown
    # The history starts with the systems the campaign is about; the legend offers every one.
    pressed = page.locator("#history-legend button.legend-item[aria-pressed=true]").count()
    assert page.locator("#history-legend button.legend-item").count() == len(SYSTEMS) and pressed >= 1
    assert int(page.locator("#history-chart").get_attribute("data-points") or 0) >= pressed
    assert page.locator("#sampling-chart").get_attribute("data-points") == str(N_TOPICS)
    assert page.locator("#model-labels").inner_text().endswith("labels")
    assert float(page.locator("#gauge").get_attribute("data-fraction") or 0) > 0
    history_points = int(page.locator("#history-chart").get_attribute("data-points") or 0)

    # More judgments arrive; the worker's recompute runs (called directly here: the broker is a
    # stub in browser tests). The next poll shows new numbers without reloading.
    judge_and_recompute(campaign, people["assessor"], 3)
    # The poll that shows the new judgments (an earlier one may still bring the first batch's
    # late recompute, which changes the numbers too).
    expect(page.locator("#stat-judgments")).to_have_text(str(campaign.judgments.count()))
    page.wait_for_function(
        """before => [...document.querySelectorAll('#estimates-table tr[data-system]')].some(tr =>
              tr.querySelector('[data-field=value]').textContent
                !== before[tr.dataset.system + '|' + tr.dataset.metric])""",
        arg=before,
    )
    page.wait_for_function(
        f"Number(document.getElementById('history-chart').dataset.points) > {history_points}"
    )
    assert page.evaluate("window.stillTheSamePage") == 42, "updates arrive without a reload"
    shown = page.locator("#stat-judgments").inner_text()
    assert int(shown) == campaign.judgments.count()

    # Evaluate a new run that ranks an unjudged document at the top on every topic.
    run = "".join(
        f"{t} Q0 NEW-{t} 1 99 newcomer\n{t} Q0 D{t}-0 2 98 newcomer\n" for t in range(1, N_TOPICS + 1)
    )
    run_file = screenshot_dir / "newcomer.run"
    run_file.write_text(run)
    page.set_input_files("#evaluate-file", str(run_file))
    page.click("#evaluate-form button[type=submit]")
    page.wait_for_selector("#evaluations tr[data-run=newcomer]")
    warning = page.locator(".evaluate-warning").inner_text()
    assert warning.startswith("newcomer:") and "%" in warning
    assert page.locator("#evaluations tr[data-run=newcomer] td.strong").inner_text() != "—"

    page.screenshot(path=str(screenshot_dir / "dashboard.png"), full_page=True)


def test_it_never_shows_the_dashboard_to_an_assessor(
    browser_page: Any, live_server: Any, active_campaign: Campaign
) -> None:
    page = browser_page
    log_in(page, live_server.url, "alice", "/")
    assert page.locator("a:has-text('Dashboard')").count() == 0
    response = page.goto(f"{live_server.url}/campaigns/{active_campaign.pk}/dashboard/")
    assert response is not None and response.status == 403


def test_it_shows_finite_sample_intervals_for_item_level_sampling(
    browser_page: Any,
    live_server: Any,
    item_campaign: Campaign,
    people: dict[str, AbstractBaseUser],
    screenshot_dir: Path,
) -> None:
    judge_and_recompute(item_campaign, people["assessor"], 2)
    page = browser_page
    log_in(page, live_server.url, "carl", f"/campaigns/{item_campaign.pk}/dashboard/")
    page.wait_for_function("Number(document.body.dataset.polls || 0) >= 1")
    headers = page.locator("#estimates-table thead th").all_inner_texts()
    assert {"HOEFFDING", "EMP. BERNSTEIN"} <= {header.upper() for header in headers}
    assert set(table_values(page)) == {f"{system}|DCG@5" for system in SYSTEMS}
    assert page.locator("#estimates-table td", has_text="Not reported").count() == 2, "ERR and nDCG"
    assert page.locator("#difference").is_hidden()
    # The history starts with the systems the campaign is about; the legend offers every one.
    pressed = page.locator("#history-legend button.legend-item[aria-pressed=true]").count()
    assert page.locator("#history-legend button.legend-item").count() == len(SYSTEMS) and pressed >= 1
    assert int(page.locator("#history-chart").get_attribute("data-points") or 0) >= pressed
    page.screenshot(path=str(screenshot_dir / "dashboard-items.png"), full_page=True)


def test_it_plans_the_budget_from_the_campaign_page(
    browser_page: Any, live_server: Any, active_campaign: Campaign, screenshot_dir: Path
) -> None:
    page = browser_page
    log_in(page, live_server.url, "carl", f"/campaigns/{active_campaign.pk}/")
    page.get_by_role("button", name="Plan the budget").click()
    advice = page.locator("#plan .plan-advice")
    advice.wait_for(timeout=30_000)
    assert "budget" in advice.text_content() or "random" in advice.text_content()
    assert "et al." in (advice.get_attribute("title") or ""), "the papers are named in the tooltip"
    strategies = {row.get_attribute("data-strategy") for row in page.locator("#plan tr[data-strategy]").all()}
    assert strategies == {"passive", "active", "items"}
    assert page.locator("#plan tr[data-strategy]").count() == 12  # three strategies x four budgets
    # The answer first, then the chart of error against budget; the table folded below it.
    chart = page.locator("#plan .plan-chart svg")
    assert chart.get_attribute("data-series") == "3"
    assert chart.locator(".budget-line").count() == 1 and "your budget" in (chart.text_content() or "")
    assert not page.locator("#plan details.plan-details").evaluate("element => element.open")
    assert not page.locator("#plan .plan-table").is_visible()
    page.screenshot(path=str(screenshot_dir / "plan.png"), full_page=True)
    page.locator("#plan details.plan-details summary").click()
    assert page.locator("#plan .plan-table").is_visible()


def test_it_says_when_too_few_topics_are_judged_and_what_the_mean_is_over(
    browser_page: Any,
    live_server: Any,
    active_campaign: Campaign,
    people: dict[str, AbstractBaseUser],
) -> None:
    """One or two topics judged: no interval is printed as if it could be trusted, the any-n
    bounds are; a topic no run ranks is named in the line that says what the mean is over."""
    judge_and_recompute(active_campaign, people["assessor"], 1)
    topics_import(
        campaign=active_campaign,
        files=[("extra.jsonl", _jsonl([{"id": "99", "title": "nobody ranks this"}]))],
    )
    page = browser_page
    log_in(page, live_server.url, "carl", f"/campaigns/{active_campaign.pk}/dashboard/")
    page.wait_for_function("Number(document.body.dataset.polls || 0) >= 1")
    cells = page.locator("#estimates-table tr[data-system] [data-field=clt]").all_inner_texts()
    assert cells and all(cell.startswith("fewer than 5 topics judged: no interval") for cell in cells), cells
    assert all("any-n bounds: [" in cell for cell in cells)
    estimand = page.locator("#estimand").inner_text()
    assert f"the mean over the campaign's {N_TOPICS + 1} topics" in estimand
    assert "1 of them no run ranks" in estimand


def test_a_run_arrives_from_the_campaign_page_and_its_difference_appears_after_the_topup(
    browser_page: Any,
    live_server: Any,
    item_campaign: Campaign,
    people: dict[str, AbstractBaseUser],
    screenshot_dir: Path,
    tmp_path: Path,
) -> None:
    # The campaign spends its budget: finished, then a new ranker arrives.
    while judge_through_the_api(item_campaign, people["assessor"], 30):
        recompute(item_campaign.pk)
    recompute(item_campaign.pk)
    item_campaign.refresh_from_db()
    arriving = tmp_path / "fresh.run"
    arriving.write_text(
        "".join(
            f"{topic} Q0 {docno} {rank} {100 - rank} fresh\n"
            for topic in range(1, N_TOPICS + 1)
            for rank, docno in enumerate([f"N{topic}-1", f"D{topic}-0", f"D{topic}-3", f"N{topic}-2"], 1)
        )
    )
    page = browser_page
    log_in(page, live_server.url, "carl", f"/campaigns/{item_campaign.pk}/")
    form = page.locator("#arrival form")
    form.locator("input[type=file]").set_input_files(str(arriving))
    form.locator("input[name=budget]").fill("12")
    form.locator("select[name=reference]").select_option("bm25")
    form.get_by_role("button", name="Add the run").click()
    page.wait_for_url(f"**/campaigns/{item_campaign.pk}/dashboard/#arrivals-panel")
    expect(page.locator(".messages")).to_contain_text("fresh arrived, compared with bm25: a top-up of 12")
    row = page.locator('#arrivals tr[data-arrival="fresh"]')
    expect(row).to_contain_text("assessors judge the top-up")
    expect(page.locator("#arrivals-panel .arrival-warning").first).to_contain_text("could not pick yet")
    expect(page.locator("#arrivals-panel")).to_contain_text("fresh: its top-up has no judgment yet")

    assert judge_through_the_api(item_campaign, people["assessor"], 40) >= 12
    recompute(item_campaign.pk)
    expect(row).to_contain_text("top-up done", timeout=30_000)
    expect(page.locator("#arrivals-panel")).not_to_contain_text("its top-up has no judgment yet")
    cells = row.locator("td")
    difference, interval = cells.nth(5).text_content() or "", cells.nth(6).text_content() or ""
    assert difference != "—" and interval.startswith("[") and "," in interval, (difference, interval)
    page.screenshot(path=str(screenshot_dir / "arrival.png"), full_page=True)


def test_the_dashboard_adds_a_run_after_saying_what_its_verdict_will_ask(
    browser_page: Any,
    live_server: Any,
    item_campaign: Campaign,
    people: dict[str, AbstractBaseUser],
    screenshot_dir: Path,
    tmp_path: Path,
) -> None:
    """The plan is fixed once the run arrives: the first click shows it, the second adds the run;
    the margin follows the question (none for better or worse)."""
    judge_and_recompute(item_campaign, people["assessor"], 1)
    arriving = tmp_path / "cheaper.run"
    arriving.write_text(
        "".join(
            f"{topic} Q0 {docno} {rank} {100 - rank} cheaper\n"
            for topic in range(1, N_TOPICS + 1)
            for rank, docno in enumerate([f"D{topic}-2", f"N{topic}-1", f"D{topic}-0"], 1)
        )
    )
    page = browser_page
    log_in(page, live_server.url, "carl", f"/campaigns/{item_campaign.pk}/dashboard/")
    form = page.locator("#arrival-form")
    margin = form.locator("#arrival-margin")
    expect(margin).to_have_value("0")
    expect(margin).to_have_attribute("readonly", "")
    form.locator("#arrival-question").select_option("non_inferiority")
    expect(margin).not_to_have_attribute("readonly", "")
    margin.fill("0.5")
    form.locator("#arrival-file").set_input_files(str(arriving))
    form.get_by_role("button", name="Add the run").click()
    expect(page.locator("#arrival-errors")).to_contain_text(
        "Give a top-up (how many more judgments to spend) or the 95 % width to reach."
    )
    form.locator("#arrival-budget").fill("0")
    form.get_by_role("button", name="Add the run").click()
    expect(page.locator("#arrival-errors")).to_contain_text("The top-up must be above 0 judgments, got 0.")
    form.locator("#arrival-budget").fill("6")
    form.locator("#arrival-reference").select_option("bm25")
    form.get_by_role("button", name="Add the run").click()
    summary = page.locator("#arrival-confirm")
    expect(summary).to_contain_text(
        "cheaper.run with a top-up of 6 judgments (added to the campaign's budget), compared with bm25"
    )
    expect(summary).to_contain_text("margin 0.5")
    added = page.locator('#arrivals tr[data-arrival="cheaper"]')
    assert not added.count(), "nothing added on the first click"
    page.screenshot(path=str(screenshot_dir / "arrival-confirm.png"), full_page=True)
    form.get_by_role("button", name="Add it").click()
    row = page.locator('#arrivals tr[data-arrival="cheaper"]')
    expect(row).to_contain_text("not worse by 0.5")
    expect(page.locator("#arrivals th").nth(5)).to_have_text("Difference (run − compared with)")
    expect(margin).to_have_attribute("readonly", "")


def test_the_arrival_form_stacks_without_gaps_on_a_phone(
    browser_page: Any, live_server: Any, item_campaign: Campaign, people: dict[str, AbstractBaseUser]
) -> None:
    judge_and_recompute(item_campaign, people["assessor"], 1)
    page = browser_page
    page.set_viewport_size({"width": 390, "height": 844})
    log_in(page, live_server.url, "carl", f"/campaigns/{item_campaign.pk}/dashboard/")
    heights = page.evaluate(
        "() => [...document.querySelectorAll('#arrival-form .field')]"
        ".map(field => field.getBoundingClientRect().height)"
    )
    # A label and its input: about 70 px; stacked with a flex basis of 14rem each was 224 px.
    assert len(heights) >= 5 and max(heights) < 120, heights
