"""Document costs, query costs over the union of rankings, and the fitted cost model."""

from __future__ import annotations

import math

import numpy as np
import pytest

from estimation.sampling.costs import (
    CostModel,
    fit_cost_model,
    fits_budget,
    item_costs_from_lengths,
    query_costs,
)
from estimation.sampling.pool import Pool


def _pool(query_weight: tuple[float, ...] = (0.5, 0.5)) -> Pool:
    """Two queries with three slots; system 0 ranks (0, 1), system 1 ranks (1, 2) in query 0.

    Query 1 has two used slots; system 0 ranks (1, 0) and system 1 returns nothing for it.
    """
    theta = np.full((2, 3, 2), 0.5)
    slot_used = np.array([[True, True, True], [True, True, False]])
    rankings = np.array(
        [
            [[0, 1], [1, 0]],
            [[1, 2], [-1, -1]],
        ]
    )
    item_cost = np.array([[1.0, 2.0, 4.0], [3.0, 5.0, 0.0]])
    return Pool(theta, slot_used, rankings, item_cost, np.array(query_weight))


def test_it_computes_logarithmic_document_costs() -> None:
    lengths = [0.0, math.e - 1, math.e**2 - 1]  # log(1 + length) = 0, 1, 2
    assert item_costs_from_lengths(lengths, a=0.5, b=2.0) == pytest.approx([0.5, 2.5, 4.5])
    assert item_costs_from_lengths(np.array([[0.0], [math.e - 1]])).shape == (2, 1)


@pytest.mark.parametrize(
    ("lengths", "a", "b", "message"),
    [
        ([-1.0], 0.0, 1.0, "lengths must be >= 0"),
        ([float("nan")], 0.0, 1.0, "finite"),
        ([0.0, 10.0], -1.0, 1.0, "non-negative"),
        ([0.0], 0.0, float("inf"), "finite"),
    ],
)
def test_it_rejects_bad_lengths_and_negative_costs(lengths: list, a: float, b: float, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        item_costs_from_lengths(lengths, a=a, b=b)


def test_it_sums_item_costs_over_the_union_of_rankings() -> None:
    pool = _pool()
    # Query 0: union of {0, 1} and {1, 2} = all three slots, 1 + 2 + 4; query 1: slots 0 and 1.
    assert query_costs(pool, normalize=False) == pytest.approx([7.0, 8.0])
    assert query_costs(pool, [0], normalize=False) == pytest.approx([3.0, 8.0])
    assert query_costs(pool, [1], normalize=False) == pytest.approx([6.0, 0.0])


def test_it_counts_only_positions_within_the_cutoff() -> None:
    pool = _pool()
    # Top 1: query 0 ranks slot 0 (system 0) and slot 1 (system 1); query 1 slot 1 only.
    assert query_costs(pool, cutoff=1, normalize=False) == pytest.approx([3.0, 5.0])


def test_it_normalises_to_a_p_weighted_mean_of_one() -> None:
    costs = query_costs(_pool((0.5, 0.5)))
    assert costs == pytest.approx([7.0 / 7.5, 8.0 / 7.5])
    weighted = query_costs(_pool((0.75, 0.25)))
    assert 0.75 * weighted[0] + 0.25 * weighted[1] == pytest.approx(1.0)
    assert weighted[0] / weighted[1] == pytest.approx(7.0 / 8.0)


def test_it_rejects_unknown_systems_and_all_zero_costs() -> None:
    pool = _pool()
    with pytest.raises(ValueError, match="out of range"):
        query_costs(pool, [2])
    with pytest.raises(ValueError, match="twice"):
        query_costs(pool, [0, 0])
    with pytest.raises(ValueError, match="cutoff"):
        query_costs(pool, cutoff=0)
    free = Pool(pool.theta, pool.slot_used, pool.rankings, np.zeros((2, 3)), pool.query_weight)
    assert query_costs(free, normalize=False) == pytest.approx([0.0, 0.0])
    with pytest.raises(ValueError, match="costs 0"):
        query_costs(free)


def test_it_recovers_the_cost_model_from_noisy_timings() -> None:
    rng = np.random.default_rng(20240501)
    lengths = rng.lognormal(mean=6.0, sigma=1.0, size=4000)
    seconds = 4.0 + 2.5 * np.log1p(lengths) + rng.normal(0.0, 1.0, size=lengths.size)
    model = fit_cost_model(lengths, seconds)
    # Standard errors here are about 0.1 (a) and 0.016 (b): the bounds are ~4 of them.
    assert model.a == pytest.approx(4.0, abs=0.4)
    assert model.b == pytest.approx(2.5, abs=0.07)
    assert model.rmse == pytest.approx(1.0, abs=0.05)
    assert 0.5 < model.r_squared < 1.0
    assert model.n_points == 4000
    assert not model.intercept_clipped


def test_it_predicts_seconds_and_hours() -> None:
    model = CostModel(a=36.0, b=360.0, n_points=10, rmse=0.0, r_squared=1.0)
    assert model.seconds([0.0, math.e - 1]) == pytest.approx([36.0, 396.0])
    assert model.hours([0.0, math.e - 1]) == pytest.approx([0.01, 0.11])


def test_it_fits_exact_data_exactly() -> None:
    lengths = np.array([0.0, 10.0, 100.0, 1000.0])
    model = fit_cost_model(lengths, 1.5 + 0.5 * np.log1p(lengths))
    assert (model.a, model.b) == pytest.approx((1.5, 0.5))
    assert model.rmse == pytest.approx(0.0, abs=1e-12)


def test_it_refits_through_the_origin_when_the_intercept_is_negative() -> None:
    lengths = np.array([10.0, 100.0, 1000.0, 10000.0])
    x = np.log1p(lengths)
    seconds = -2.0 + 1.0 * x  # exact line with a negative intercept, all timings positive
    model = fit_cost_model(lengths, seconds)
    assert model.intercept_clipped
    assert model.a == 0.0
    assert model.b == pytest.approx(float(x @ seconds / (x @ x)))
    assert np.all(model.seconds([0.0, 5.0]) >= 0)


@pytest.mark.parametrize(
    ("lengths", "seconds", "message"),
    [
        ([1.0, 2.0], [1.0, 2.0], "at least 3"),
        ([5.0, 5.0, 5.0], [1.0, 2.0, 3.0], "not identifiable"),
        ([1.0, 10.0, 100.0], [9.0, 5.0, 1.0], "slope"),
        ([1.0, -10.0, 100.0], [1.0, 2.0, 3.0], ">= 0"),
        ([1.0, 10.0, 100.0], [1.0, float("nan"), 3.0], "finite"),
        ([1.0, 10.0, 100.0], [1.0, 2.0], "equal length"),
    ],
)
def test_it_refuses_fits_the_data_cannot_support(lengths: list, seconds: list, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        fit_cost_model(lengths, seconds)


def _equal_cost_pool(n_queries: int = 50, item_cost: float = 5.0) -> Pool:
    """Every query has one slot of the same cost, ranked by one system."""
    theta = np.full((n_queries, 1, 2), 0.5)
    slot_used = np.ones((n_queries, 1), dtype=bool)
    rankings = np.zeros((1, n_queries, 1), dtype=np.int64)
    costs = np.full((n_queries, 1), item_cost)
    return Pool(theta, slot_used, rankings, costs, np.full(n_queries, 1.0 / n_queries))


@pytest.mark.parametrize("item_cost", [1.0, 3.0, 5.0, math.log1p(7.0), 3 * math.log1p(1.0)])
def test_it_normalises_equal_costs_to_exactly_one(item_cost: float) -> None:
    # Repro: 50 queries of cost 5 used to normalise to 1.0000000000000002 each, so a budget
    # of 5 bought 4 of them.
    costs = query_costs(_equal_cost_pool(item_cost=item_cost))
    assert np.all(costs == 1.0)


def test_it_normalises_unequal_costs_to_a_mean_of_one() -> None:
    costs = query_costs(_pool(), normalize=True)
    assert costs == pytest.approx([7 / 7.5, 8 / 7.5])
    assert float(np.mean(costs)) == pytest.approx(1.0, rel=1e-15)


def test_it_forgives_rounding_but_not_a_real_overspend_when_comparing_with_a_budget() -> None:
    assert fits_budget(5.000000000000001, 5.0)
    assert fits_budget(sum([0.1] * 10), 1.0)  # 0.9999999999999999
    assert fits_budget(1.0000000000000002, 1.0)
    assert not fits_budget(5.001, 5.0)
    assert fits_budget(0.0, 0.0) and not fits_budget(1e-3, 0.0)
    assert fits_budget(np.array([0.5, 1.0 + 1e-15, 1.1]), 1.0).tolist() == [True, True, False]
    assert fits_budget(1e12, np.inf)
