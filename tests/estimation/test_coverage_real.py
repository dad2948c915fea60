"""Coverage of the query-level 95 % intervals on real data, by seeded simulation.

Budgets of 10, 20 and 40 topics (equal topic costs; a repeated topic costs nothing), passive
and active sampling (Sawade's q* under the uniform prior, mixed with p), one system
(self-normalised, Hall's skew-corrected t) and the difference of two (plain estimator, t).
Coverage must not be significantly outside [0.93, 0.97] (two one-sided binomial tests at
1 %). MSLR DCG@10 of one system (exponential gains up to 15: a handful of topics carry most
of the mean) does not reach 0.93 at these budgets with any CLT-type interval; that test
records the shortfall instead of hiding it.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from scipy.stats import binomtest

from estimation.sampling.estimators import query_level_estimate
from tests.estimation.real_pools import RealPool, mslr_pool, robust03_pool, topic_budget_draws

REPETITIONS = 600
SIGNIFICANCE = 0.01
LOADERS = {"robust03": robust03_pool, "mslr": mslr_pool}


def coverage(pool: RealPool, goal: str, strategy: str, n_topics: int, seed: int) -> tuple[float, float]:
    """Share of campaigns whose interval holds the truth, and the mean width."""
    m = pool.values.shape[0]
    p = np.full(m, 1.0 / m)
    values = pool.values[:, 0] if goal == "one" else pool.values[:, 0] - pool.values[:, 1]
    q = p if strategy == "passive" else (pool.active_one if goal == "one" else pool.active_difference)
    truth = float(p @ values)
    hits, widths = [], []
    for draws in topic_budget_draws(q, n_topics, REPETITIONS, np.random.default_rng(seed)):
        estimate = query_level_estimate(
            values[draws], q[draws], p[draws], topics=draws, self_normalised=goal == "one"
        )
        hits.append(estimate.low <= truth <= estimate.high)
        widths.append(estimate.high - estimate.low)
    return float(np.mean(hits)), float(np.mean(widths))


def within_band(rate: float) -> bool:
    hits = round(rate * REPETITIONS)
    below = binomtest(hits, REPETITIONS, 0.93, alternative="less").pvalue
    above = binomtest(hits, REPETITIONS, 0.97, alternative="greater").pvalue
    return below > SIGNIFICANCE and above > SIGNIFICANCE


CELLS = [
    (data, metric, goal, strategy)
    for data, metric in (("robust03", "DCG"), ("robust03", "ERR"), ("mslr", "ERR"), ("mslr", "DCG"))
    for goal in ("one", "difference")
    for strategy in ("passive", "active")
    if not (data == "mslr" and metric == "DCG" and goal == "one")
]


@pytest.mark.slow
@pytest.mark.parametrize(("data", "metric", "goal", "strategy"), CELLS)
def test_it_covers_95_percent_at_10_20_and_40_topics(
    shared_data: Path, data: str, metric: str, goal: str, strategy: str
) -> None:
    pool = LOADERS[data](shared_data, metric)
    for n_topics in (10, 20, 40):
        rate, width = coverage(pool, goal, strategy, n_topics, seed=100 + n_topics)
        # The README's coverage table is this output (`pytest -s -m slow` on this file).
        print(f"coverage {pool.name} {goal} {strategy} {n_topics} topics: {rate:.3f} (width {width:.3g})")
        assert within_band(rate), (pool.name, goal, strategy, n_topics, rate)


@pytest.mark.slow
def test_it_records_that_mslr_dcg_of_one_system_under_covers(shared_data: Path) -> None:
    # Not a requirement but a measured limitation (see the module docstring): coverage is
    # clearly below 95 % yet far above the z interval's 0.82-0.87 of before.
    pool = mslr_pool(shared_data, "DCG")
    for n_topics in (10, 20, 40):
        rate, width = coverage(pool, "one", "passive", n_topics, seed=100 + n_topics)
        print(f"coverage {pool.name} one passive {n_topics} topics: {rate:.3f} (width {width:.3g})")
        assert 0.85 < rate < 0.95, (n_topics, rate)
