"""A coordinator starts a training-data campaign from MQ2008 features in the browser and an
assessor judges the first round with the keyboard."""

from __future__ import annotations

import gzip
from pathlib import Path
from typing import Any

from django.contrib.auth.models import AbstractBaseUser

from labeling.models import Campaign, Judgment
from labeling.recompute import recompute
from labeling.services.campaigns import campaign_assessors_assign, campaign_create
from tests.e2e.helpers import log_in
from training.models import TrainingRound, TrainingSelection

QUERIES, LABELED = 30, 10


def mq2008_subset(shared_data: Path, target: Path) -> Path:
    """The first 30 queries of MQ2008's S1 (read where the data lives), the first 10 labeled."""
    queries: list[str] = []
    lines = []
    with gzip.open(shared_data / "mq2008" / "S1.txt.gz", "rt") as source:
        for line in source:
            qid = line.split()[1]
            if qid not in queries:
                if len(queries) == QUERIES:
                    break
                queries.append(qid)
            grade, rest = line.split(" ", 1)
            lines.append(f"{grade if len(queries) <= LABELED else -1} {rest}")
    target.write_text("".join(lines))
    return target


def test_a_coordinator_starts_from_mq2008_and_an_assessor_judges_round_one(
    browser_page: Any,
    live_server: Any,
    people: dict[str, AbstractBaseUser],
    shared_data: Path,
    tmp_path: Path,
    screenshot_dir: Path,
) -> None:
    campaign = campaign_create(
        creator=people["coordinator"],
        name="MQ2008 training",
        grades=["Not relevant", "Relevant", "Highly relevant"],
        budget=20,
        judging_mode="training",
    )
    campaign_assessors_assign(campaign=campaign, usernames=["alice"])
    page = browser_page
    log_in(page, live_server.url, "carl", f"/campaigns/{campaign.pk}/")
    page.set_input_files("#training-features", str(mq2008_subset(shared_data, tmp_path / "mq2008.txt")))
    page.click("form[data-upload=features] button[type=submit]")
    page.wait_for_load_state()
    assert "30 queries" in page.locator(".messages").inner_text()
    page.fill("#id_round_size", "6")
    page.fill("#id_ensemble", "2")
    page.click("text=Save settings")
    page.wait_for_load_state()
    page.click("button:has-text('Start judging')")
    page.wait_for_load_state()
    if page.locator("#start-anyway").count():
        page.click("#start-anyway")
        page.wait_for_load_state()
    campaign.refresh_from_db()
    assert campaign.status == Campaign.Status.RUNNING
    recompute(campaign.pk)  # what the worker runs after the start
    training_round = TrainingRound.objects.get(campaign=campaign)
    assert training_round.selected == 6 and training_round.model == "lightgbm x 2"
    page.screenshot(path=str(screenshot_dir / "training-campaign.png"), full_page=True)

    page.click("text=Log out")
    log_in(page, live_server.url, "alice", f"/judge/{campaign.pk}/")
    for _ in range(6):
        page.locator("#grades button:not([disabled])").first.wait_for()
        shown = page.locator("#doc-docno").inner_text()
        page.keyboard.press("1")
        page.wait_for_function(
            "previous => document.getElementById('doc-docno').textContent !== previous"
            " || !document.getElementById('empty').hidden",
            arg=shown,
        )
    page.locator("#empty").wait_for(state="visible")
    judged = set(Judgment.objects.filter(campaign=campaign).values_list("topic__qid", "document__docno"))
    selected = set(TrainingSelection.objects.filter(round=training_round).values_list("qid", "docid"))
    assert judged == selected and len(judged) == 6
    # Between rounds the page says so, and shows round two by itself once the worker selected it.
    assert "next round is being selected" in page.locator("#empty-title").inner_text()
    recompute(campaign.pk)
    page.locator("#grades button:not([disabled])").first.wait_for(timeout=15_000)
    second = TrainingSelection.objects.filter(round__number=2, round__campaign=campaign)
    assert page.locator("#doc-docno").inner_text() in set(second.values_list("docid", flat=True))

    page.click("text=Log out")
    log_in(page, live_server.url, "carl", f"/campaigns/{campaign.pk}/dashboard/")
    assert "deterministic" in page.locator("#selection-mode").inner_text()
    assert page.locator("#rounds tr").count() == 3, "a header and two rounds"
    page.screenshot(path=str(screenshot_dir / "training-dashboard.png"), full_page=True)
