"""Hundreds of simulated campaigns through the service layer: unbiased means, honest intervals.

One small synthetic pool (16 topics, two systems, DCG@3 on grades 0-2) is imported once; each
simulated campaign resets the draws and judgments, takes a new seed and runs to the end of its
budget: `draws_top_up` draws from the stored q, an oracle assessor answers the open tasks, and
every few rounds `sampling_state_refresh` refits theta and q, as the worker does. The truth is computed from
the oracle's grades with `estimation.metrics.values.dcg`, independently of the app.
"""

from __future__ import annotations

import numpy as np
import pytest
from django.contrib.auth.models import AbstractBaseUser
from django.utils import timezone

from estimation.metrics.spec import Metric
from estimation.metrics.values import dcg
from labeling.models import Campaign, Draw, Judgment, PoolItem, SamplingState, Task
from labeling.services.campaigns import campaign_assessors_assign, campaign_create, campaign_start
from labeling.services.run_imports import runs_import
from sampling.draws import draws_top_up
from sampling.estimates import estimates_compute
from sampling.state import sampling_state_refresh
from tests.labeling.conftest import upload

pytestmark = pytest.mark.slow

N_TOPICS = 16
CUTOFF = 3
REPETITIONS = 200
REFRESH_EVERY = 4


def _synthetic_pool(seed: int) -> tuple[str, str, dict[tuple[str, str], int]]:
    """Two runs over 16 topics (5 pooled documents per topic) and the oracle's grades."""
    rng = np.random.default_rng(seed)
    grades: dict[tuple[str, str], int] = {}
    run_a, run_b = [], []
    for topic in range(1, N_TOPICS + 1):
        relevance = rng.uniform(0.1, 0.9)
        for doc in range(5):
            grades[(str(topic), f"t{topic}-d{doc}")] = int(rng.binomial(2, relevance * (1 - 0.15 * doc)))
        for rank, doc in enumerate((0, 1, 2), start=1):
            run_a.append(f"{topic} Q0 t{topic}-d{doc} {rank} {10 - rank} A\n")
        for rank, doc in enumerate((1, 3, 4), start=1):
            run_b.append(f"{topic} Q0 t{topic}-d{doc} {rank} {10 - rank} B\n")
    return "".join(run_a), "".join(run_b), grades


def _truth(run_text: str, grades: dict[tuple[str, str], int], metric: Metric) -> float:
    ranked: dict[str, list[str]] = {}
    for line in run_text.splitlines():
        qid, _, docno, *_ = line.split()
        ranked.setdefault(qid, []).append(docno)
    return float(
        np.mean([dcg([grades[(qid, docno)] for docno in docs], metric) for qid, docs in ranked.items()])
    )


def _answer_open_tasks(campaign: Campaign, assessor: AbstractBaseUser, grades: dict) -> int:
    """The oracle assessor answers every open task at once (what task_answer stores, in bulk)."""
    now = timezone.now()
    tasks = list(
        Task.objects.filter(campaign=campaign, answered_at__isnull=True).values_list(
            "pk", "draw_id", "topic_id", "topic__qid", "document_id", "document__docno"
        )
    )
    Judgment.objects.bulk_create(
        [
            Judgment(
                campaign=campaign,
                task_id=task_id,
                draw_id=draw_id,
                topic_id=topic_id,
                document_id=document_id,
                assessor=assessor,
                grade=grades[(qid, docno)],
                seconds=5.0,
                cost=1.0,
            )
            for task_id, draw_id, topic_id, qid, document_id, docno in tasks
        ]
    )
    Task.objects.filter(pk__in=[task[0] for task in tasks]).update(assessor=assessor, answered_at=now)
    return len(tasks)


def _simulate(
    campaign: Campaign, assessor: AbstractBaseUser, grades: dict, seed: int, refit_every: int, target: int
) -> dict:
    """One campaign: draw a few tasks from the stored q, answer them, refit every few rounds."""
    Judgment.objects.filter(campaign=campaign).delete()
    Draw.objects.filter(campaign=campaign).delete()
    PoolItem.objects.filter(campaign=campaign).update(drawn=False)  # what a top-up reads as drawn
    SamplingState.objects.filter(campaign=campaign).delete()
    Campaign.objects.filter(pk=campaign.pk).update(seed=seed, status=Campaign.Status.RUNNING, blocked="")
    campaign.refresh_from_db()
    for round_number in range(1, 1000):
        draws_top_up(campaign_id=campaign.pk, target=target)
        if _answer_open_tasks(campaign, assessor, grades) == 0:
            break
        if refit_every and round_number % refit_every == 0:
            sampling_state_refresh(campaign)
    return estimates_compute(campaign)


@pytest.mark.parametrize(
    ("strategy", "refit_every", "target"),
    [("active", 3, 1), ("passive", 0, 1), ("items", 2, 5)],
    ids=["active", "passive", "items"],
)
def test_it_estimates_without_bias_and_covers_the_truth_over_many_campaigns(
    strategy: str, refit_every: int, target: int, coordinator: AbstractBaseUser, assessor: AbstractBaseUser
) -> None:
    run_a, run_b, grades = _synthetic_pool(11)
    metric = Metric("DCG", CUTOFF, y_max=2)
    truth = _truth(run_a, grades, metric)
    campaign = campaign_create(
        creator=coordinator,
        name=f"simulated {strategy}",
        metric=f"DCG@{CUTOFF}",
        grades=["0", "1", "2"],
        strategy=strategy,
        goal="one",
        focus_systems=["A"],
        budget=70 if strategy != "items" else 25,
        budget_unit="judgments",
    )
    runs_import(campaign=campaign, files=[upload("a.run", run_a), upload("b.run", run_b)])
    campaign_assessors_assign(campaign=campaign, usernames=[assessor.get_username()])
    campaign_start(campaign=campaign)
    values, covered = [], []
    for repetition in range(REPETITIONS):
        result = _simulate(
            campaign, assessor, grades, seed=1000 + repetition, refit_every=refit_every, target=target
        )
        row = next(r for r in result["systems"] if r["name"] == "A" and r["metric"] == f"DCG@{CUTOFF}")
        assert row["n"] >= 2 and row["se"] is not None
        values.append(row["value"])
        covered.append(row["low"] <= truth <= row["high"])
    values_array = np.asarray(values)
    standard_error = values_array.std(ddof=1) / np.sqrt(REPETITIONS)
    assert abs(values_array.mean() - truth) <= 3 * standard_error, (
        values_array.mean(),
        truth,
        standard_error,
    )
    coverage = float(np.mean(covered))
    mean = values_array.mean()
    print(f"{strategy}: truth {truth:.4f} mean {mean:.4f} +- {standard_error:.4f} coverage {coverage:.3f}")
    assert 0.90 <= coverage <= 0.98, coverage
