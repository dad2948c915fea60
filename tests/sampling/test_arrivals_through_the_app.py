"""The stratified top-up estimate is unbiased and its 95 % intervals hold when every step goes
through the app: seeded campaigns are created, judged by an oracle assessor until their budget is
spent, a run arrives with a top-up, the top-up is judged, and the arrival's difference is read
from its report. The numeric core's own seeded tests (tests/estimation/test_arrivals.py) cover
more campaigns; this one shows that the app draws, stores and estimates as the core assumes."""

from __future__ import annotations

import numpy as np
import pytest
from django.contrib.auth.models import AbstractBaseUser

from estimation import Metric
from labeling.models import Campaign
from labeling.services.campaigns import campaign_assessors_assign, campaign_create, campaign_start
from sampling import arrival_add, arrival_summary
from sampling.level_estimates import topic_metric_values
from sampling.pool_arrays import pool_arrays_for
from tests.conftest import RUN_A, RUN_B, upload
from tests.sampling.helpers import RUN_C, judge_some, oracle_grade
from uploads.run_imports import runs_import

pytestmark = pytest.mark.slow

# The fewest campaigns whose coverage bound stays strict: with 40, at least 34 intervals must
# hold the truth. A 95 % interval fails that with probability 0.0034 (binomial: `_fewest_covering`
# derives it), one that covers 80 % passes with 0.29 and one that covers 70 % with 0.02.
CAMPAIGNS = 40
FALSE_FAILURE = 0.005
STORED_BUDGET = 8
TOPUP = 10
WIDTH_CAMPAIGNS = 20
TARGET_WIDTH = 2.5


def _fewest_covering(campaigns: int, level: float = 0.95, false_failure: float = FALSE_FAILURE) -> int:
    """The most covering intervals a test may demand of `campaigns` intervals at `level` while
    failing a correct one with probability at most `false_failure` (binomial, intervals taken as
    independent: each campaign draws with its own seed)."""
    from scipy.stats import binom

    return int(binom.ppf(false_failure, campaigns, level))


def test_the_coverage_bound_is_derived_from_the_number_of_campaigns() -> None:
    from scipy.stats import binom

    fewest = _fewest_covering(CAMPAIGNS)
    assert fewest == 34 and binom.cdf(fewest - 1, CAMPAIGNS, 0.95) <= FALSE_FAILURE
    assert binom.cdf(fewest, CAMPAIGNS, 0.95) > FALSE_FAILURE, "one more would fail it more often"
    assert _fewest_covering(60) == 52


def _truth(campaign_pk: int) -> float:
    """DCG@5(gamma) - DCG@5(beta) over the topics, every pool document at its oracle grade."""
    arrays = pool_arrays_for(Campaign.objects.get(pk=campaign_pk))
    grades = np.full(arrays.slot_used.shape, -1)
    for topic, docnos in enumerate(arrays.docnos):
        for slot, docno in enumerate(docnos):
            if arrays.slot_used[topic, slot]:
                grades[topic, slot] = oracle_grade(docno)
    metric = Metric.parse("DCG@5", y_max=2)
    names = list(arrays.system_names)
    gamma = topic_metric_values(arrays, grades, metric, names.index("gamma"))
    beta = topic_metric_values(arrays, grades, metric, names.index("beta"))
    return float(np.mean(gamma - beta))


def _judged_campaign(
    coordinator: AbstractBaseUser, assessor: AbstractBaseUser, name: str, seed: int
) -> Campaign:
    """A seeded items campaign over RUN_A and RUN_B, judged by the oracle until its budget is spent."""
    campaign = campaign_create(
        creator=coordinator,
        name=name,
        metric="DCG@5",
        grades=["0", "1", "2"],
        strategy="items",
        budget=STORED_BUDGET,
        seed=seed,
    )
    runs_import(campaign=campaign, files=[upload("a.run", RUN_A), upload("b.run", RUN_B)])
    campaign_assessors_assign(campaign=campaign, usernames=[assessor.get_username()])
    campaign = campaign_start(campaign=campaign)
    judge_some(campaign, assessor, 100)
    return campaign


def test_the_topup_difference_is_unbiased_and_covered_through_the_app(
    coordinator: AbstractBaseUser, assessor: AbstractBaseUser
) -> None:
    values, covered, missing = [], [], 0
    truth = None
    for seed in range(CAMPAIGNS):
        campaign = _judged_campaign(coordinator, assessor, f"seeded {seed}", 1000 + seed)
        arrival = arrival_add(
            campaign=campaign, files=[upload("c.run", RUN_C)], budget=TOPUP, reference="beta"
        )
        judge_some(campaign, assessor, 100)
        report = arrival_summary(arrival)
        assert report["status"] == "done" and report["topup_judged"] >= TOPUP
        truth = _truth(campaign.pk) if truth is None else truth
        difference = report["difference"]
        if difference["value"] is None:
            missing += 1  # no top-up draw picked a new document: no value, never a low one
            continue
        values.append(difference["value"])
        covered.append(difference["low"] <= truth <= difference["high"])
    assert truth is not None and missing <= 0.02 * CAMPAIGNS
    spread = float(np.std(values)) / np.sqrt(len(values))
    assert abs(float(np.mean(values)) - truth) <= 4 * spread, (np.mean(values), truth, spread)
    assert sum(covered) >= _fewest_covering(len(covered)), (sum(covered), len(covered))
    # The figures docs/statistics.md quotes.
    mean = float(np.mean(values))
    print(f"mean {mean:.2f}, truth {truth:.2f}, se {spread:.2f}, covered {sum(covered)} of {len(covered)}")


def test_a_topup_planned_for_a_width_reaches_about_that_width(
    coordinator: AbstractBaseUser, assessor: AbstractBaseUser
) -> None:
    """The planner's width is a prediction from the label model: over seeded campaigns the
    interval measured after the planned top-up is about as wide as predicted."""
    ratios = []
    for seed in range(WIDTH_CAMPAIGNS):
        campaign = _judged_campaign(coordinator, assessor, f"planned {seed}", 5000 + seed)
        arrival = arrival_add(
            campaign=campaign, files=[upload("c.run", RUN_C)], target_width=TARGET_WIDTH, reference="beta"
        )
        assert arrival.planned_width is not None and arrival.planned_width <= TARGET_WIDTH
        judge_some(campaign, assessor, 1000)
        difference = arrival_summary(arrival)["difference"]
        if difference["value"] is not None:
            ratios.append((difference["high"] - difference["low"]) / arrival.planned_width)
    assert len(ratios) >= 0.9 * WIDTH_CAMPAIGNS
    assert 0.6 <= float(np.median(ratios)) <= 1.4, np.median(ratios)
