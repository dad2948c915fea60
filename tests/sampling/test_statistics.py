"""The dashboard's estimate is what the numeric core makes of the stored draws.

What the app adds to the numeric core is bookkeeping: it draws from its stored q, stores each
draw's propensity, refits the sampling state every few rounds (as the worker does) and computes
the dashboard's estimate from what it stored. Here a handful of seeded campaigns per strategy run
through the service layer on one small synthetic pool (16 topics, two systems, DCG@3 on grades
0-2): `draws_top_up` draws, an oracle assessor answers the open tasks, `sampling_state_recompute`
refits. The estimate `estimates_compute` reports for system A is then recomputed here from the
Draw rows and the oracle's grades alone, with the core's estimator and the stored calibration
(the item level's weight bound), and must agree to the last digits.

The estimators' unbiasedness and interval coverage over thousands of seeded draws are the
numeric core's tests (tests/estimation/test_unbiasedness.py, test_coverage.py); 200 campaigns
per strategy through these same services are `bench/bench_app_statistics.py`.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from django.contrib.auth.models import AbstractBaseUser
from django.utils import timezone

from estimation.metrics.spec import Metric
from estimation.metrics.values import dcg
from estimation.sampling.estimators import query_level_estimate
from estimation.sampling.item_estimators import item_level_estimate
from labeling.models import Campaign, Draw, Judgment, PoolItem, Task
from labeling.services.campaigns import campaign_assessors_assign, campaign_create, campaign_start
from sampling.draws import draws_top_up
from sampling.estimates import estimates_compute
from sampling.models import SamplingState
from sampling.state import sampling_state_recompute
from tests.conftest import upload
from uploads.run_imports import runs_import

N_TOPICS = 16
CUTOFF = 3
METRIC = Metric("DCG", CUTOFF, y_max=2)
# (strategy, refit every n rounds (0: never), tasks per top-up, budget in judgments)
STRATEGIES = {"active": (3, 1, 70), "passive": (0, 1, 70), "items": (2, 5, 25)}
SEEDS = (1000, 1001, 1002)


def synthetic_pool(seed: int) -> tuple[str, str, dict[tuple[str, str], int]]:
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


def ranked_documents(run_text: str) -> dict[str, list[str]]:
    """qid -> the run's documents in rank order."""
    ranked: dict[str, list[str]] = {}
    for line in run_text.splitlines():
        qid, _, docno, *_ = line.split()
        ranked.setdefault(qid, []).append(docno)
    return ranked


def truth(run_text: str, grades: dict[tuple[str, str], int]) -> float:
    """The run's mean DCG@3 over the 16 topics, from the oracle's grades."""
    ranked = ranked_documents(run_text)
    return float(
        np.mean([dcg([grades[(qid, docno)] for docno in docs], METRIC) for qid, docs in ranked.items()])
    )


def simulated_campaign(
    coordinator: AbstractBaseUser, assessor: AbstractBaseUser, strategy: str, runs: tuple[str, str]
) -> Campaign:
    """A running campaign of the strategy over the two runs, `assessor` assigned."""
    campaign = campaign_create(
        creator=coordinator,
        name=f"simulated {strategy}",
        metric=f"DCG@{CUTOFF}",
        grades=["0", "1", "2"],
        strategy=strategy,
        goal="one",
        focus_systems=["A"],
        budget=STRATEGIES[strategy][2],
        budget_unit="judgments",
    )
    runs_import(campaign=campaign, files=[upload("a.run", runs[0]), upload("b.run", runs[1])])
    campaign_assessors_assign(campaign=campaign, usernames=[assessor.get_username()])
    return campaign_start(campaign=campaign)


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


def simulate(campaign: Campaign, assessor: AbstractBaseUser, grades: dict, seed: int) -> dict:
    """One campaign from scratch with `seed`: draw a few tasks from the stored q, answer them,
    refit every few rounds, until the budget is spent; the dashboard's estimates at the end."""
    refit_every, target, _ = STRATEGIES[campaign.strategy]
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
            sampling_state_recompute(campaign)
    return estimates_compute(campaign)


def _row_of_a(result: dict) -> dict:
    return next(row for row in result["systems"] if row["name"] == "A" and row["metric"] == f"DCG@{CUTOFF}")


def _clipped(low: float, high: float) -> tuple[float, float]:
    bottom, top = METRIC.value_bounds()
    return max(low, bottom), min(high, top)


def _query_level_from_draws(campaign: Campaign, run_a: str, grades: dict, spent: float) -> tuple:
    """System A's estimate from the stored query draws: each drawn topic's DCG@3 from the
    oracle's grades, weighted by p(x) = 1/16 over the draw's stored propensity."""
    draws = list(
        Draw.objects.filter(campaign=campaign).order_by("order").values_list("topic__qid", "propensity")
    )
    ranked = ranked_documents(run_a)
    values = np.array([dcg([grades[(qid, docno)] for docno in ranked[qid]], METRIC) for qid, _ in draws])
    propensities = np.array([propensity for _, propensity in draws])
    if campaign.strategy == "passive":
        # Passive sampling draws from p itself.
        assert propensities == pytest.approx(np.full(len(draws), 1 / N_TOPICS), rel=1e-12)
    estimate = query_level_estimate(
        values,
        propensities,
        np.full(len(draws), 1 / N_TOPICS),
        topics=np.array([int(qid) for qid, _ in draws]),
        budget_spent=spent,
        value_bounds=METRIC.value_bounds(),
        weight_bound=1.0 if campaign.strategy == "passive" else (1 / campaign.mix if campaign.mix else None),
    )
    return estimate.value, estimate.standard_error, *_clipped(estimate.low, estimate.high)


def _item_level_from_draws(campaign: Campaign, run_a: str, grades: dict, spent: float) -> tuple:
    """System A's DCG@3 from the stored item draws: labels g(y) / g(2) times
    P(x, z; A) = 1/16 * 1 / log2(rank + 1) over each draw's stored propensity; the Hoeffding
    interval from the stored weight bound, which must bound every drawn P / Q."""
    draws = list(
        Draw.objects.filter(campaign=campaign)
        .order_by("order")
        .values_list("topic__qid", "document__docno", "propensity")
    )
    rank_in_a = {
        (qid, docno): rank
        for qid, docs in ranked_documents(run_a).items()
        for rank, docno in enumerate(docs, 1)
    }
    gains = METRIC.gain_table()
    labels = np.array([gains[grades[(qid, docno)]] / gains[-1] for qid, docno, _ in draws])
    target = np.array(
        [
            1 / N_TOPICS / math.log2(rank_in_a[(qid, docno)] + 1) if (qid, docno) in rank_in_a else 0.0
            for qid, docno, _ in draws
        ]
    )
    propensities = np.array([propensity for _, _, propensity in draws])
    unit_bounds = (METRIC.value_bounds()[0] / gains[-1], METRIC.value_bounds()[1] / gains[-1])
    n_judged = len({(qid, docno) for qid, docno, _ in draws})
    estimate = item_level_estimate(
        labels, target, propensities, n_judged=n_judged, budget_spent=spent, value_bounds=unit_bounds
    )
    weight_bound = SamplingState.objects.get(campaign=campaign).weight_bounds["A"]
    assert weight_bound >= (target / propensities).max() * (1 - 1e-12)
    hoeffding = item_level_estimate(
        labels,
        target,
        propensities,
        interval="hoeffding",
        weight_bound=weight_bound,
        value_bounds=unit_bounds,
    )
    return (
        estimate.value * gains[-1],
        estimate.standard_error * gains[-1],
        *_clipped(estimate.low * gains[-1], estimate.high * gains[-1]),
        *_clipped(hoeffding.low * gains[-1], hoeffding.high * gains[-1]),
    )


@pytest.mark.parametrize("strategy", list(STRATEGIES))
def test_it_reports_what_the_core_makes_of_the_stored_draws(
    strategy: str, coordinator: AbstractBaseUser, assessor: AbstractBaseUser
) -> None:
    run_a, run_b, grades = synthetic_pool(11)
    campaign = simulated_campaign(coordinator, assessor, strategy, (run_a, run_b))
    values = []
    for seed in SEEDS:
        result = simulate(campaign, assessor, grades, seed)
        row = _row_of_a(result)
        assert result["spent"] >= STRATEGIES[strategy][2] and row["n"] == result["draws"] >= 2
        if strategy == "items":
            expected = _item_level_from_draws(campaign, run_a, grades, result["spent"])
            reported = (row["value"], row["se"], row["low"], row["high"], *row["intervals"]["hoeffding"])
        else:
            assert row["reliable"], row
            expected = _query_level_from_draws(campaign, run_a, grades, result["spent"])
            reported = (row["value"], row["se"], row["low"], row["high"])
        assert reported == pytest.approx(expected, rel=1e-12, abs=1e-12), (seed, reported, expected)
        values.append(row["value"])
    # Each seed is a campaign of its own: different draws, different estimates.
    assert len(set(values)) == len(SEEDS), values
