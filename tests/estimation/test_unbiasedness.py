"""Seeded simulations: the estimators hit the truth on average.

Each test averages many seeded estimates and asks that the mean lies within three standard
errors (of the mean) of the truth.

- Item level (Schnabel et al. 2016): ``(1/n) sum u P / Q`` is exactly unbiased for every n,
  for one system and for a difference.
- Query level, plain ``(1/n) sum w L`` with a fixed number of draws: exactly unbiased, also
  when q changes after every draw (adaptive): each term has conditional expectation R given
  the past, so the sum is a martingale.
- Query level, self-normalised (Sawade et al. 2013): a ratio estimator, only consistent,
  with bias ``-(1/n) E_q[w^2 (L - R)] + O(n^-2)``. It is tested with enough draws that this
  first-order bias is far below the resolution of the test (the test checks that too).
"""

from __future__ import annotations

import numpy as np
import pytest

from estimation.simulation.batch import simulate_item_level_batch, simulate_query_level_batch
from estimation.simulation.loop import LoopState, simulate_query_level
from tests.estimation.helpers import item_pool, query_pool

REPETITIONS = 4000


def standardised_error(estimates: np.ndarray, truth: np.ndarray) -> np.ndarray:
    """(mean - truth) / standard error of the mean, per column."""
    return (estimates.mean(axis=0) - truth) / (estimates.std(axis=0, ddof=1) / np.sqrt(len(estimates)))


def test_it_estimates_one_system_and_a_difference_without_bias_at_item_level() -> None:
    labels, q, targets = item_pool()
    truth = (labels * targets).sum(axis=(1, 2))
    # Few draws per estimate: exact unbiasedness does not need n to be large.
    batch = simulate_item_level_batch(labels, q, targets, REPETITIONS, np.random.default_rng(10), n_draws=20)
    assert np.all(np.abs(standardised_error(batch.estimates, truth)) < 3)


def test_it_estimates_without_bias_at_item_level_under_a_budget() -> None:
    labels, q, targets = item_pool()
    costs = np.random.default_rng(1).uniform(0.5, 1.5, labels.shape)
    truth = (labels * targets).sum(axis=(1, 2))
    batch = simulate_item_level_batch(
        labels, q, targets, REPETITIONS, np.random.default_rng(11), budget=60.0, item_cost=costs
    )
    assert batch.n_draws.min() > 40
    # The number of draws is a stopping time here, so exact unbiasedness is not guaranteed;
    # with this many draws any bias is far below the test's resolution.
    assert np.all(np.abs(standardised_error(batch.estimates, truth)) < 3)


def test_it_estimates_without_bias_with_the_plain_query_level_estimator() -> None:
    values, costs, q, p = query_pool()
    batch = simulate_query_level_batch(
        values, costs, q, p, None, REPETITIONS, np.random.default_rng(20), max_draws=20, self_normalised=False
    )
    assert np.all(np.abs(standardised_error(batch.estimates, p @ values)) < 3)


def test_it_is_consistent_with_the_self_normalised_query_level_estimator() -> None:
    values, costs, q, p = query_pool()
    truth = p @ values
    n_draws = 400
    batch = simulate_query_level_batch(
        values, costs, q, p, None, REPETITIONS, np.random.default_rng(21), max_draws=n_draws
    )
    standard_error_of_mean = batch.estimates.std(axis=0, ddof=1) / np.sqrt(REPETITIONS)
    weights = p / q
    first_order_bias = -(q * weights**2) @ (values - truth) / n_draws
    assert np.all(np.abs(first_order_bias) < 0.5 * standard_error_of_mean)  # the test can resolve no bias
    assert np.all(np.abs(standardised_error(batch.estimates, truth)) < 3)


def test_it_is_consistent_under_the_budget_loop() -> None:
    # 200 queries of mean cost 1: a budget of 100 buys about half the pool.
    values, costs, q, p = query_pool(n_queries=200)
    batch = simulate_query_level_batch(values, costs, q, p, 100.0, 2000, np.random.default_rng(22))
    assert np.all(batch.spent < costs.sum())  # the budget, not exhaustion, ends the runs
    assert batch.n_draws.min() > 100
    assert np.all(np.abs(standardised_error(batch.estimates, p @ values)) < 3)


def test_it_shows_the_ratio_bias_of_the_self_normalised_estimator_for_few_draws() -> None:
    # The converse check: with 5 draws the O(1/n) bias is large enough to see, and it has the
    # sign and size the first-order formula predicts; the plain estimator on the same draws
    # shows none.
    values, costs, q, p = query_pool()
    truth = p @ values[:, 0]
    n_draws = 5
    normalised = simulate_query_level_batch(
        values[:, 0], costs, q, p, None, 20_000, np.random.default_rng(23), max_draws=n_draws
    )
    plain = simulate_query_level_batch(
        values[:, 0],
        costs,
        q,
        p,
        None,
        20_000,
        np.random.default_rng(23),
        max_draws=n_draws,
        self_normalised=False,
    )
    predicted = -(q * (p / q) ** 2) @ (values[:, 0] - truth) / n_draws
    observed = normalised.estimates.mean() - truth
    assert abs(standardised_error(normalised.estimates[:, None], truth)[0]) > 3
    assert observed == pytest.approx(predicted, rel=0.5)
    assert abs(standardised_error(plain.estimates[:, None], truth)[0]) < 3


def leaning_distribution(p: np.ndarray) -> object:
    """Adaptive q: after every draw, lean towards queries whose observed values are large.

    Unseen queries get the mean of the values seen so far, so q depends on the labels.
    """

    def distribution(state: LoopState) -> np.ndarray:
        score = np.full(p.size, state.values.mean() if state.values.size else 1.0)
        score[state.draws] = state.values
        leaning = p * (score + 0.05)
        return 0.5 * p + 0.5 * leaning / leaning.sum()

    return distribution


def test_it_stays_unbiased_when_q_adapts_to_the_labels() -> None:
    values, costs, _, _ = query_pool(seed=3, n_queries=10)
    metric = values[:, 0]
    p = np.full(10, 0.1)
    rng = np.random.default_rng(30)
    runs = [
        simulate_query_level(
            metric, costs, leaning_distribution(p), p, None, rng, max_draws=15, self_normalised=False
        )
        for _ in range(2000)
    ]
    estimates = np.array([run.estimate.value for run in runs])
    # The propensities really did change within runs.
    assert np.mean([np.ptp(run.propensities / p[run.draws]) > 0 for run in runs]) > 0.9
    assert abs(standardised_error(estimates[:, None], np.array([p @ metric]))[0]) < 3
