"""End to end in headless chromium: a pair campaign's dashboard (top-k and pairwise) after a few
answers, live without a reload, at desktop and phone widths; and the progress on the pairwise
judging page."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import AbstractBaseUser

from labeling.models import Campaign
from labeling.services.campaigns import campaign_assessors_assign, campaign_create, campaign_start
from pairwise import services as pairwise_services
from pairwise.models import Comparison, PairTask, TopKHeap
from tests.e2e.helpers import log_in
from uploads.imports import documents_import, topics_import
from uploads.run_imports import runs_import

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]

DESKTOP = {"width": 1400, "height": 900}
PHONE = {"width": 390, "height": 844}
TOPICS = [
    {"id": "501", "title": "solar panel recycling", "description": "How are old panels recycled?"},
    {"id": "502", "title": "heat pump noise", "description": "How loud are heat pumps?"},
]
# Six documents per topic; the number in the docno is how relevant it truly is.
DOCNOS = {topic["id"]: [f"T{topic['id']}-{number}" for number in range(1, 7)] for topic in TOPICS}


def truth(docno: str) -> int:
    return int(docno.rsplit("-", 1)[1])


def pair_campaign(people: dict[str, AbstractBaseUser], mode: str) -> Campaign:
    """Two topics of six documents from one run (ranked worst first), k = 3, alice assigned."""
    campaign = campaign_create(
        creator=people["coordinator"],
        name=f"Pairs ({mode})",
        metric="DCG@6",
        budget=60,
        budget_unit="judgments",
        judging_mode=mode,
        mode_settings={"k": 3},
        seed=7,
    )
    topics = "".join(json.dumps(topic) + "\n" for topic in TOPICS)
    topics_import(campaign=campaign, files=[("topics.jsonl", io.BytesIO(topics.encode()))])
    records = "".join(
        json.dumps({"docno": docno, "title": f"Document {docno}", "text": f"About {docno}."}) + "\n"
        for docnos in DOCNOS.values()
        for docno in docnos
    )
    documents_import(campaign=campaign, files=[("docs.jsonl", io.BytesIO(records.encode()))])
    run = "".join(
        f"{qid} Q0 {docno} {rank} {10 - rank}.0 naive\n"
        for qid, docnos in DOCNOS.items()
        for rank, docno in enumerate(docnos, 1)
    )
    runs_import(campaign=campaign, files=[("naive.run", io.BytesIO(run.encode()))])
    if mode == "pairwise":
        pairwise_services.pairwise_configure(campaign=campaign, pairs_per_topic=4)
    campaign_assessors_assign(campaign=campaign, usernames=["alice"])
    return campaign_start(campaign=campaign)


def answer(campaign: Campaign, assessor: AbstractBaseUser, times: int) -> int:
    """Answer up to `times` pairs like the truth; how many were answered."""
    for done in range(times):
        task = pairwise_services.pair_next(campaign=campaign, assessor=assessor)
        if task is None:
            return done
        difference = truth(task.left.docno) - truth(task.right.docno)
        outcome = "left" if difference > 0 else "right" if difference < 0 else "tie"
        pairwise_services.pair_answer(task=task, assessor=assessor, outcome=outcome, seconds=3.0)
    return times


def finish_one_list(campaign: Campaign, assessor: AbstractBaseUser) -> str:
    """Answer until the assessor's first list is done; its topic."""
    while not TopKHeap.objects.filter(campaign=campaign, done=True).exists():
        assert answer(campaign, assessor, 1) == 1
    return TopKHeap.objects.get(campaign=campaign, done=True).topic.qid


def wider_than_the_page(page: Any) -> list[str]:
    """Elements whose right edge sticks out of the viewport (the page scrolls sideways)."""
    return page.evaluate(
        """() => Array.from(document.querySelectorAll("body *"))
            .filter((el) => el.getBoundingClientRect().right > window.innerWidth + 0.5
                && !el.closest(".table-scroll table"))
            .map((el) => el.tagName.toLowerCase() + (el.id ? "#" + el.id : "") + "." + el.className)"""
    )


def screenshots(page: Any, directory: Path, name: str) -> None:
    """The page at desktop and phone width; at phone width nothing sticks out sideways."""
    page.set_viewport_size(DESKTOP)
    page.screenshot(path=str(directory / f"{name}-1400.png"), full_page=True)
    page.set_viewport_size(PHONE)
    page.screenshot(path=str(directory / f"{name}-390.png"), full_page=True)
    assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth"), (
        f"{name} overflows a 390 px phone: {wider_than_the_page(page)}"
    )
    page.set_viewport_size(DESKTOP)


def test_it_shows_a_top_k_campaign_live_on_its_dashboard(
    browser_page: Any, live_server: Any, people: dict[str, AbstractBaseUser], screenshot_dir: Path
) -> None:
    campaign = pair_campaign(people, "topk")
    alice = people["assessor"]
    first = finish_one_list(campaign, alice)
    (second,) = set(DOCNOS) - {first}
    answer(campaign, alice, 2)  # the second list: in progress
    page = browser_page
    log_in(page, live_server.url, "carl", f"/campaigns/{campaign.pk}/dashboard/")

    made = Comparison.objects.count()
    progress = page.locator("#progress")
    assert page.locator("#stat-comparisons").text_content() == str(made)
    assert page.locator("#stat-done").text_content() == "1"
    assert page.locator("#stat-in-progress").text_content() == "1"
    assert f"budget: {made} of 60 comparisons" in progress.text_content()
    done = page.locator(f'#lists tr[data-topic="{first}"][data-assessor="alice"]')
    assert done.get_attribute("data-status") == "done"
    best = [f"T{first}-6", f"T{first}-5", f"T{first}-4"]
    assert done.locator(".topk-order li").all_text_contents() == best
    running = page.locator(f'#lists tr[data-topic="{second}"][data-assessor="alice"]')
    assert "in progress" in running.text_content() and "ruled out" in running.text_content()
    assert running.get_by_role("button", name="Release").is_visible()
    assert page.locator(f'#per-topic tr[data-topic="{second}"] td.num').first.text_content() == "2"
    per_assessor = page.locator('#per-assessor tr[data-assessor="alice"] td.num')
    assert per_assessor.nth(0).text_content() == str(made) and per_assessor.nth(2).text_content() == "3.0"
    kappa = page.locator('#kappa tr[data-system="naive"] td')
    assert kappa.nth(3).text_content() == "1", "one topic with a finished list"
    assert page.locator("#exports a").count() == 7, "config, skips, agreement, preferences x2, top-k x2"
    screenshots(page, screenshot_dir, "pair-dashboard-topk")

    # Alice finishes the second list while the page is open: it catches up within a poll or two.
    page.evaluate("window.stillTheSamePage = 42")
    answer(campaign, alice, 40)
    page.wait_for_function("document.getElementById('stat-done').textContent === '2'", timeout=15_000)
    assert page.locator("#progress").get_attribute("data-state") == "done"
    assert page.locator('#kappa tr[data-system="naive"] td').nth(3).text_content() == "2"
    assert page.evaluate("window.stillTheSamePage") == 42, "recomputed without a reload"

    page.get_by_role("link", name="Settings").click()
    page.wait_for_load_state()
    assert page.locator('label[for="id_documents_per_topic"]').text_content() == "Documents per topic (n):"
    assert page.locator("#id_mode").count() == 0
    screenshots(page, screenshot_dir, "pair-settings")


def test_it_shows_a_pairwise_campaign_on_its_dashboard(
    browser_page: Any, live_server: Any, people: dict[str, AbstractBaseUser], screenshot_dir: Path
) -> None:
    campaign = pair_campaign(people, "pairwise")
    answer(campaign, people["assessor"], 5)
    page = browser_page
    log_in(page, live_server.url, "carl", f"/campaigns/{campaign.pk}/dashboard/")
    pairs = PairTask.objects.filter(campaign=campaign).count()
    assert pairs == 8, "four pairs per topic, overlap 1"
    assert page.locator("#stat-comparisons").text_content() == "5"
    assert page.locator("#stat-done").text_content() == "5"
    assert "5 of 8 pairs done" in page.locator("#progress-caption").text_content()
    assert page.locator("#lists").count() == 0 and page.locator("#kappa").count() == 0
    topic_counts = {
        qid: page.locator(f'#per-topic tr[data-topic="{qid}"] td.num').first.text_content() for qid in DOCNOS
    }
    assert topic_counts == {"501": "4", "502": "1"}
    assert page.locator('#merged tr[data-topic="501"] .topk-order li').count() == 3
    assert page.locator("#exports a").all_text_contents() == [
        "Configuration (JSON)",
        "Skipped items (CSV)",
        "Assessor agreement (JSON)",
        "Preferences (CSV)",
        "Preferences (JSON Lines)",
    ], "no top-k downloads without top-k lists"
    screenshots(page, screenshot_dir, "pair-dashboard-pairwise")


def test_it_shows_the_campaign_progress_on_the_pairwise_judging_page(
    browser_page: Any, live_server: Any, people: dict[str, AbstractBaseUser], screenshot_dir: Path
) -> None:
    campaign = pair_campaign(people, "pairwise")
    pairwise_services.pairwise_prepare(campaign=campaign)  # the page's first progress counts them
    page = browser_page
    log_in(page, live_server.url, "alice", f"/pairwise/{campaign.pk}/judge/")
    text = page.locator("#campaign-progress-text")
    page.wait_for_function("document.getElementById('campaign-progress-text').textContent !== ''")
    assert text.text_content().startswith("0 comparisons · 0 of 8 pairs done")
    for _ in range(2):
        page.wait_for_function("!document.querySelector('#answers button[data-outcome=\"tie\"]').disabled")
        page.keyboard.press("ArrowDown")
    # /progress/ is asked at most every 10 s: the second answer's recompute trails.
    page.wait_for_function(
        "document.getElementById('campaign-progress-text').textContent.startsWith('2 comparisons')",
        timeout=15_000,
    )
    assert "2 of 8 pairs done" in text.text_content()
    width = page.evaluate("document.getElementById('progress-bar').style.width")
    assert float(width.rstrip("%")) == 25.0
    screenshots(page, screenshot_dir, "pair-judge")
