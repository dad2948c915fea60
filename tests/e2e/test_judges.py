"""End to end in headless chromium: a coordinator adds a model judge on the campaign page and
uploads its labels (a bad file first: refused, naming file and line); an assessor judges with
the keyboard; the dashboard shows the judge's agreement with the assessor and, per system, the
certified estimate with its interval next to the judge-only value."""

from __future__ import annotations

import io
import zlib
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import AbstractBaseUser

from labeling.models import Campaign, Judgment
from labeling.recompute import recompute
from labeling.services.campaigns import campaign_assessors_assign, campaign_create, campaign_start
from sampling.models import JudgeLabel
from tests.e2e.helpers import judge_with_key, log_in, shown_item
from uploads.imports import documents_import, topics_import
from uploads.run_imports import runs_import

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]

N_TOPICS = 6
DOCS_PER_TOPIC = 5
GRADE_KEYS = "012"  # the default keys of a three-grade scale


def true_grade(qid: str, docno: str) -> int:
    """The assessor's grade: fixed by the pair, 0-2."""
    value = zlib.crc32(f"{qid}|{docno}".encode()) % 10
    return 0 if value < 5 else 1 if value < 8 else 2


def judge_grade(qid: str, docno: str) -> int:
    """A lenient model judge: the assessor's grade plus one, capped; wrong on every third pair."""
    grade = min(true_grade(qid, docno) + 1, 2)
    return (grade + 1) % 3 if zlib.crc32(docno.encode()) % 3 == 0 else grade


def pairs() -> list[tuple[str, str]]:
    return [(str(t), f"D{t}-{d}") for t in range(1, N_TOPICS + 1) for d in range(DOCS_PER_TOPIC)]


@pytest.fixture
def judged_campaign(people: dict[str, AbstractBaseUser]) -> Campaign:
    campaign = campaign_create(
        creator=people["coordinator"],
        name="Judge-assisted replay",
        metric="DCG@5",
        grades=["Not relevant", "Relevant", "Highly relevant"],
        goal="difference",
        strategy="judged",
        focus_systems=["bm25", "dense"],
        budget=12,
        budget_unit="judgments",
        seed=7,
    )
    topics = [
        {"id": str(t), "title": f"topic {t}", "description": "", "narrative": ""}
        for t in range(1, N_TOPICS + 1)
    ]
    documents = [{"docno": docno, "title": f"document {docno}", "text": "text"} for _, docno in pairs()]
    topics_import(
        campaign=campaign, files=[("t.jsonl", io.BytesIO("".join(_json(t) for t in topics).encode()))]
    )
    documents_import(
        campaign=campaign, files=[("d.jsonl", io.BytesIO("".join(_json(d) for d in documents).encode()))]
    )
    runs = []
    for tag, offset in (("bm25", 1), ("dense", 2)):
        lines = []
        for topic in range(1, N_TOPICS + 1):
            docnos = [f"D{topic}-{d}" for d in range(DOCS_PER_TOPIC)]
            shift = (offset * topic) % DOCS_PER_TOPIC
            ranked = docnos[shift:] + docnos[:shift]
            lines += [
                f"{topic} Q0 {docno} {rank} {100 - rank} {tag}\n" for rank, docno in enumerate(ranked, 1)
            ]
        runs.append((f"{tag}.run", io.BytesIO("".join(lines).encode())))
    runs_import(campaign=campaign, files=runs)
    campaign_assessors_assign(campaign=campaign, usernames=["alice"])
    return campaign


def assessor_judges(page: Any, campaign: Campaign, items: int = 12) -> int:
    """The logged-in assessor grades up to `items` items with the keyboard (the true grade); the
    worker's recompute (a stub broker here) runs after each answer, as it would. Judgments stored."""
    for _ in range(items):
        page.wait_for_function(
            "!document.getElementById('item').hidden || !document.getElementById('empty').hidden"
        )
        if not page.locator("#empty").is_hidden():
            break
        item = shown_item(page)
        qid = item.split("|")[0].replace("Topic ", "").strip()
        docno = item.split("|")[1].strip()
        judge_with_key(page, GRADE_KEYS[true_grade(qid, docno)])
        recompute(campaign.pk)
    return Judgment.objects.filter(campaign=campaign).count()


def _json(record: dict) -> str:
    import json

    return json.dumps(record) + "\n"


def test_a_coordinator_uploads_a_judge_and_the_dashboard_certifies_it(
    browser_page: Any,
    live_server: Any,
    judged_campaign: Campaign,
    people: dict[str, AbstractBaseUser],
    screenshot_dir: Path,
) -> None:
    campaign = judged_campaign
    page = browser_page
    log_in(page, live_server.url, "carl", f"/campaigns/{campaign.pk}/")
    page.fill("#id_judge-name", "umbrela-test")
    page.fill("#id_judge-model", "DeepSeek-V3")
    page.click("#judge-add button[type=submit]")
    page.wait_for_selector("article[data-judge='umbrela-test']")

    bad = screenshot_dir / "bad-labels.jsonl"
    bad.write_text('{"qid": "1", "docid": "D1-0", "grade": 1}\n{"qid": "1", "docid": "D1-1", "grade": 7}\n')
    form = page.locator("article[data-judge='umbrela-test'] form.judge-upload")
    form.locator("input[type=file]").set_input_files(str(bad))
    form.locator("button[type=submit]").click()
    page.wait_for_selector("text=Refused, nothing stored")
    assert "bad-labels.jsonl:2:" in page.content()
    assert not JudgeLabel.objects.exists()

    good = screenshot_dir / "umbrela.txt"
    good.write_text("".join(f"{qid} 0 {docno} {judge_grade(qid, docno)}\n" for qid, docno in pairs()))
    form = page.locator("article[data-judge='umbrela-test'] form.judge-upload")
    form.locator("input[type=file]").set_input_files(str(good))
    form.locator("button[type=submit]").click()
    page.wait_for_selector("text=30 of the pool's 30 items labelled")
    assert JudgeLabel.objects.count() == len(pairs())
    campaign = campaign_start(campaign=Campaign.objects.get(pk=campaign.pk))

    # The assessor judges with the keyboard.
    page.click("button:has-text('Log out')")
    log_in(page, live_server.url, "alice", f"/judge/{campaign.pk}/")
    judged = assessor_judges(page, campaign)
    assert judged >= 6

    page.click("button:has-text('Log out')")
    log_in(page, live_server.url, "carl", f"/campaigns/{campaign.pk}/dashboard/")
    panel = page.locator("section#judges")
    panel.wait_for()
    text = panel.inner_text()
    assert "umbrela-test" in text and "DeepSeek-V3" in text
    assert "Confusion: rows are the assessors' grades" in text
    assert f"Agreement with the assessors on {judged} item" in text
    rows = panel.locator("table.judge-systems tbody tr")
    assert rows.count() == 2
    for index in range(2):
        cells = [cell.strip() for cell in rows.nth(index).locator("td").all_inner_texts()]
        judge_only, certified, interval = cells[0], cells[1], cells[2]
        assert float(judge_only) >= 0 and float(certified) >= 0
        low, high = (float(part) for part in interval.split(" to "))
        assert low <= float(certified) <= high
    assert "Kendall's tau" in text
    # Run names show as written (upper-cased, "p_exp_bert" read as "P EXP BERT").
    styles = page.eval_on_selector_all(
        "table.judge-systems tbody th", "cells => cells.map(cell => getComputedStyle(cell).textTransform)"
    )
    assert styles and set(styles) == {"none"}, styles
    page.screenshot(path=str(screenshot_dir / "judges-dashboard.png"), full_page=True)


TOPIC_WORDS = (
    "solar panels",
    "bicycle lanes",
    "rainwater tanks",
    "heat islands",
    "night buses",
    "compost bins",
)


def test_a_coordinator_runs_the_lexical_judge_and_watches_it_label_the_pool(
    browser_page: Any,
    live_server: Any,
    judged_campaign: Campaign,
    people: dict[str, AbstractBaseUser],
    screenshot_dir: Path,
) -> None:
    from labeling.models import Document, Topic
    from sampling import judge_run_step
    from sampling.models import JudgeRun

    campaign = judged_campaign
    # Texts that say something: a document repeats its topic's words as often as it is relevant.
    for topic in Topic.objects.filter(campaign=campaign):
        Topic.objects.filter(pk=topic.pk).update(title=TOPIC_WORDS[int(topic.qid) - 1])
    for qid, docno in pairs():
        words = TOPIC_WORDS[int(qid) - 1]
        text = " ".join([words] * true_grade(qid, docno) + ["city council minutes"] * 3)
        Document.objects.filter(campaign=campaign, docno=docno).update(text=text)
    page = browser_page
    log_in(page, live_server.url, "carl", f"/campaigns/{campaign.pk}/")
    page.select_option("#id_judge-kind", "lexical")
    assert page.locator("#id_judge-base_url").is_hidden()  # endpoint settings only for endpoints
    page.fill("#id_judge-name", "bm25")
    page.click("#judge-add button[type=submit]")
    article = page.locator("article[data-judge='bm25']")
    article.wait_for()
    assert "weak judge" in article.inner_text() and "Not run yet." in article.inner_text()
    article.locator("button[data-run-start]").click()
    page.wait_for_selector("text=is running over the pool")
    article = page.locator("article[data-judge='bm25']")
    assert article.locator("button[data-run-start]").is_disabled()
    # The worker's step (no worker in this test: a stub broker); the page polls the judge's API
    # and fills the bar by itself, without a reload.
    run = JudgeRun.objects.get(judge__name="bm25")
    assert judge_run_step(run.pk) == "done"
    article.locator("[data-judge-run][data-status='done']").wait_for(timeout=15_000)
    assert article.locator("[role=progressbar]").get_attribute("aria-valuenow") == "100"
    figures = article.locator("[data-run-figures]").inner_text()
    assert "30 of 30 pairs" in figures and "30 labels" in figures and "0 refusals" in figures
    assert article.locator("button[data-run-start]").inner_text() == "Run again"
    page.screenshot(path=str(screenshot_dir / "lexical-judge-run.png"), full_page=True)
    assert JudgeLabel.objects.filter(judge__name="bm25").count() == 30

    campaign = campaign_start(campaign=Campaign.objects.get(pk=campaign.pk))
    page.click("button:has-text('Log out')")
    log_in(page, live_server.url, "alice", f"/judge/{campaign.pk}/")
    judged = assessor_judges(page, campaign)
    assert judged >= 6
    page.click("button:has-text('Log out')")
    log_in(page, live_server.url, "carl", f"/campaigns/{campaign.pk}/dashboard/")
    panel = page.locator("section#judges")
    panel.wait_for()
    text = panel.inner_text()
    assert f"Agreement with the assessors on {judged} item" in text
    rows = panel.locator("table.judge-systems tbody tr")
    assert rows.count() == 2
    for index in range(2):
        cells = [cell.strip() for cell in rows.nth(index).locator("td").all_inner_texts()]
        low, high = (float(part) for part in cells[2].split(" to "))
        assert low <= float(cells[1]) <= high
    page.screenshot(path=str(screenshot_dir / "lexical-judge-dashboard.png"), full_page=True)
