"""A whole campaign on real MQ2008 runs and qrels: an oracle assessor judges through the REST API
while a real Celery worker over a real Redis recomputes the campaign, and is killed midway."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
from django.contrib.auth.models import AbstractBaseUser
from rest_framework.test import APIClient

from estimation.formats.trec import read_qrels, read_run
from estimation.metrics.spec import Metric
from estimation.metrics.values import evaluate_run
from labeling.models import CampaignProgress, Draw, Judgment, Task
from labeling.services.campaigns import (
    campaign_assessors_assign,
    campaign_create,
    campaign_start,
    campaign_update,
)
from sampling.models import EstimateSnapshot, SamplingState
from tests.conftest import upload
from tests.workers import CeleryWorker
from uploads.run_imports import runs_import

pytestmark = [pytest.mark.servers, pytest.mark.slow, pytest.mark.django_db(transaction=True)]

RUNS = ("RankBoost", "ListNet")
N_TOPICS = 20
CUTOFF = 5
SEED = 20130801


def _subset(shared_data: Path) -> tuple[list[str], dict[str, str], dict[str, dict[str, int]]]:
    """20 topics both runs rank (seeded choice), the runs' text on them, and the qrels."""
    folder = shared_data / "mq2008"
    qrels = read_qrels(folder / "qrels.txt")
    runs = {name: read_run(folder / "runs" / f"{name}.run") for name in RUNS}
    common = sorted(set(qrels).intersection(*(set(run.rankings) for run in runs.values())))
    topics = sorted(np.random.default_rng(7).choice(common, size=N_TOPICS, replace=False).tolist())
    texts = {}
    for name in RUNS:
        lines = [
            line
            for line in (folder / "runs" / f"{name}.run").read_text().splitlines(keepends=True)
            if line.split()[0] in topics
        ]
        texts[name] = "".join(lines)
    return topics, texts, {qid: qrels[qid] for qid in topics}


def _truth(shared_data: Path, topics: list[str], qrels: dict[str, dict[str, int]], metric: Metric) -> dict:
    values = {}
    for name in RUNS:
        run = read_run(shared_data / "mq2008" / "runs" / f"{name}.run")
        per_query = evaluate_run(qrels, run, metric)
        values[name] = float(np.mean([per_query[qid] for qid in topics]))
    return values


def _wait(condition: Callable[[], bool], seconds: float, worker: CeleryWorker) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(0.2)
    raise AssertionError(f"timed out; worker log:\n{worker.log.read_text(errors='replace')[-3000:]}")


def test_it_runs_a_live_campaign_on_real_data_and_survives_a_killed_worker(
    celery_worker: CeleryWorker,
    shared_data: Path,
    coordinator: AbstractBaseUser,
    assessor: AbstractBaseUser,
) -> None:
    topics, texts, qrels = _subset(shared_data)
    metric = Metric("DCG", CUTOFF, y_max=2)
    truth = _truth(shared_data, topics, qrels, metric)
    campaign = campaign_create(
        creator=coordinator,
        name="mq2008 live",
        metric=f"DCG@{CUTOFF}",
        grades=["Not relevant", "Relevant", "Highly relevant"],
        goal="difference",
        # Passive draws do not depend on when the worker's refits land, so the seeded final
        # interval is reproducible; the active strategy's coverage is tested statistically.
        strategy="passive",
        budget=1.0,
        budget_unit="judgments",
        seed=SEED,
    )
    runs_import(campaign=campaign, files=[upload(f"{name}.run", texts[name]) for name in RUNS])
    pool_size = campaign.pool_items.count()
    # About 70 % of the pool: the budget stops the campaign before every topic is judged.
    campaign_update(campaign=campaign, budget=float(round(0.7 * pool_size)))
    campaign_assessors_assign(campaign=campaign, usernames=[assessor.get_username()])
    campaign_start(campaign=campaign)

    client = APIClient()
    client.force_login(assessor)
    base = f"/api/campaigns/{campaign.pk}"
    rng = np.random.default_rng(SEED)
    answered = 0
    killed_at = restarted_at = None
    while (item := client.get(f"{base}/next/")).status_code == 200:
        task = item.json()
        grade = qrels[task["topic"]["id"]].get(task["document"]["docno"], 0)
        response = client.post(
            f"/api/tasks/{task['task']}/answer/",
            {"grade": grade, "seconds": float(rng.uniform(2, 9))},
            format="json",
        )
        assert response.status_code == 201
        answered += 1
        if answered in (1, 46):
            # The worker (started, or restarted) is up and recomputes after judgments.
            _wait(
                lambda count=answered: CampaignProgress.objects.get(campaign=campaign).judgments >= count,
                60,
                celery_worker,
            )
        if answered == 20:
            celery_worker.kill()
            killed_at = answered
        elif answered == 45:
            celery_worker.start()
            restarted_at = answered
    assert item.status_code == 204 and killed_at and restarted_at and answered > restarted_at
    progress = client.get(f"{base}/progress/").json()
    assert progress["state"] == "budget_spent" and progress["judgments"] == answered

    # The restarted worker catches up with every judgment, including those made while it was dead.
    _wait(
        lambda: (
            CampaignProgress.objects.get(campaign=campaign).judgments == answered
            and EstimateSnapshot.objects.filter(campaign=campaign, judgments=answered).exists()
            and SamplingState.objects.get(campaign=campaign).label_model["n_labels"] == answered
        ),
        60,
        celery_worker,
    )
    assert SamplingState.objects.get(campaign=campaign).label_model["n_labels"] == answered
    # Nothing lost, nothing doubled: one judgment per answered task, one task per judged item.
    assert Judgment.objects.filter(campaign=campaign).count() == answered
    assert Task.objects.filter(campaign=campaign, answered_at__isnull=False).count() == answered
    assert Task.objects.filter(campaign=campaign, answered_at__isnull=True).count() == 0
    pairs = list(Judgment.objects.filter(campaign=campaign).values_list("topic_id", "document_id"))
    assert len(set(pairs)) == len(pairs)
    campaign.refresh_from_db()
    draws = list(Draw.objects.filter(campaign=campaign).order_by("order"))
    assert [draw.order for draw in draws] == list(range(1, len(draws) + 1))
    assert sum(draw.cost for draw in draws) == answered <= campaign.budget
    assert all(draw.propensity == pytest.approx(1 / N_TOPICS) for draw in draws)

    coordinator_client = APIClient()
    coordinator_client.force_login(coordinator)
    estimates = coordinator_client.get(f"{base}/estimates/").json()
    assert (estimates["spent"], estimates["budget"]) == (answered, campaign.budget)
    rows = {(row["name"], row["metric"]): row for row in estimates["systems"]}
    for name in RUNS:
        row = rows[(name, f"DCG@{CUTOFF}")]
        assert row["n"] == len(draws) and row["se"] > 0
        assert row["low"] <= truth[name] <= row["high"], (name, row, truth[name])
    difference = estimates["difference"]
    assert difference["systems"] == list(RUNS)
    assert difference["low"] <= truth[RUNS[0]] - truth[RUNS[1]] <= difference["high"]
    assert 0.5 <= difference["p_order_right"] <= 1.0
    history = coordinator_client.get(f"{base}/estimates/history/").json()
    assert len(history) >= 2 and history[-1]["judgments"] == answered
    assert [snapshot["spent"] for snapshot in history] == sorted(snapshot["spent"] for snapshot in history)
