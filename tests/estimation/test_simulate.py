"""The budget loop (Sawade et al. 2013, Algorithm 1): stopping rule, bookkeeping, adaptivity."""

from __future__ import annotations

import numpy as np
import pytest

from estimation.sampling.budget_loop import draw_units
from estimation.sampling.estimators import query_level_estimate
from estimation.sampling.item_estimators import item_level_estimate
from estimation.sampling.results import SamplingDistribution
from estimation.simulation.batch import simulate_query_level_batch
from estimation.simulation.loop import LoopState, simulate_item_level, simulate_query_level


def small_pool(seed: int = 0, n_queries: int = 12) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Metric values, query costs, a non-uniform q and uniform p."""
    rng = np.random.default_rng(seed)
    values = rng.random(n_queries)
    costs = rng.uniform(0.5, 1.5, n_queries)
    q = rng.uniform(0.2, 1.0, n_queries)
    return values, costs, q / q.sum(), np.full(n_queries, 1 / n_queries)


def test_it_never_spends_more_than_the_budget() -> None:
    values, costs, q, p = small_pool()
    for seed in range(30):
        result = simulate_query_level(values, costs, q, p, 4.0, np.random.default_rng(seed))
        assert result.spent <= 4.0
        assert result.spent == pytest.approx(costs[np.unique(result.draws)].sum())
        assert result.stop_reason == "budget"


def test_it_stops_at_the_first_draw_it_cannot_afford() -> None:
    # After the loop ends, the draw it refused (the next uniform) must cost more than what is left.
    values, costs, q, p = small_pool()
    for seed in range(20):
        rng = np.random.default_rng(seed)
        result = simulate_query_level(values, costs, q, p, 3.0, rng)
        replay = np.random.default_rng(seed)
        uniforms = replay.random(result.estimate.n_draws + 1)
        refused = int(draw_units(q, uniforms[-1]))
        assert refused not in set(result.draws.tolist())
        assert result.spent + costs[refused] > 3.0


def test_it_charges_nothing_for_a_repeated_query() -> None:
    # Two queries, the cheap one drawn almost always: many free repeats before the budget binds.
    values, costs = np.array([0.2, 0.8]), np.array([1.0, 5.0])
    q = np.array([0.99, 0.01])
    result = simulate_query_level(values, costs, q, np.full(2, 0.5), 2.0, np.random.default_rng(3))
    assert result.estimate.n_draws > result.n_judged == 1
    assert result.spent == 1.0
    assert np.all(result.draws == 0)


def test_it_stops_when_the_pool_is_exhausted() -> None:
    values, costs, q, p = small_pool()
    result = simulate_query_level(values, costs, q, p, 1000.0, np.random.default_rng(0))
    assert result.stop_reason == "pool_exhausted"
    assert result.n_judged == values.size
    assert result.spent == pytest.approx(costs.sum())


def test_it_ignores_queries_outside_the_support_when_deciding_exhaustion() -> None:
    values, costs, _, p = small_pool()
    q = np.zeros(values.size)
    q[:3] = 1 / 3
    result = simulate_query_level(values, costs, q, p, 1000.0, np.random.default_rng(0))
    assert result.stop_reason == "pool_exhausted"
    assert set(result.draws.tolist()) == {0, 1, 2}


def test_it_takes_exactly_max_draws_without_a_budget() -> None:
    values, costs, q, p = small_pool()
    result = simulate_query_level(values, costs, q, p, None, np.random.default_rng(0), max_draws=25)
    assert result.estimate.n_draws == 25
    assert result.stop_reason == "max_draws"


def test_it_matches_the_estimator_on_the_recorded_draws() -> None:
    values, costs, q, p = small_pool()
    result = simulate_query_level(values, costs, q, p, 6.0, np.random.default_rng(11))
    again = query_level_estimate(values[result.draws], result.propensities, p[result.draws])
    assert result.estimate.value == pytest.approx(again.value)
    assert np.array_equal(result.values, values[result.draws])
    assert np.allclose(result.propensities, q[result.draws])


def test_it_accepts_a_sampling_distribution_object() -> None:
    values, costs, q, p = small_pool()
    distribution = SamplingDistribution(q=q, optimal=q, mix=0.0)
    from_object = simulate_query_level(values, costs, distribution, p, 5.0, np.random.default_rng(2))
    from_array = simulate_query_level(values, costs, q, p, 5.0, np.random.default_rng(2))
    assert np.array_equal(from_object.draws, from_array.draws)


def test_it_asks_the_oracle_once_per_distinct_query() -> None:
    values, costs, q, p = small_pool()
    asked: list[int] = []

    def oracle(query: int) -> float:
        asked.append(query)
        return float(values[query])

    result = simulate_query_level(oracle, costs, q, p, 8.0, np.random.default_rng(4))
    assert sorted(asked) == sorted(set(result.draws.tolist()))
    assert result.estimate.n_draws >= len(asked) == result.n_judged


def test_it_records_each_draws_own_propensity_under_adaptive_sampling() -> None:
    values, costs, q, p = small_pool()
    handed_out: list[np.ndarray] = []

    def adaptive(state: LoopState) -> np.ndarray:
        # Lean towards the queries seen so far, so q changes after every draw.
        boost = np.bincount(state.draws, minlength=values.size).astype(float)
        current = q + 0.05 * boost
        current /= current.sum()
        handed_out.append(current)
        return current

    result = simulate_query_level(values, costs, adaptive, p, 6.0, np.random.default_rng(8))
    recorded = np.array([handed_out[j][query] for j, query in enumerate(result.draws)])
    assert np.allclose(result.propensities, recorded)
    assert len(set(np.round(result.propensities, 12))) > 1


def test_it_hands_the_adaptive_distribution_a_read_only_state() -> None:
    values, costs, q, p = small_pool()

    def meddling(state: LoopState) -> np.ndarray:
        if state.draws.size:
            state.propensities[0] = 1.0
        return q

    with pytest.raises(ValueError, match="read-only"):
        simulate_query_level(values, costs, meddling, p, 6.0, np.random.default_rng(0))


def test_it_returns_no_estimate_when_the_first_draw_is_unaffordable() -> None:
    values, costs, q, p = small_pool()
    result = simulate_query_level(values, costs * 100, q, p, 1.0, np.random.default_rng(0))
    assert result.estimate.n_draws == 0
    assert np.isnan(result.estimate.value)
    assert result.spent == 0.0


@pytest.mark.parametrize("budget", [0.0, -1.0, float("nan"), float("inf")])
def test_it_rejects_a_budget_that_is_not_positive_and_finite(budget: float) -> None:
    values, costs, q, p = small_pool()
    with pytest.raises(ValueError, match="budget must be > 0"):
        simulate_query_level(values, costs, q, p, budget, np.random.default_rng(0))


def test_it_rejects_a_loop_without_an_end() -> None:
    values, costs, q, p = small_pool()
    with pytest.raises(ValueError, match="never ends"):
        simulate_query_level(values, costs, q, p, None, np.random.default_rng(0))


@pytest.mark.parametrize(
    ("distribution", "message"),
    [
        (np.full(12, 0.5), "sums to"),
        (np.full(5, 0.2), "has 5 entries"),
        (np.r_[-0.1, np.full(11, 1.1 / 11)], "non-negative"),
    ],
)
def test_it_rejects_a_bad_sampling_distribution(distribution: np.ndarray, message: str) -> None:
    values, costs, _, p = small_pool()
    with pytest.raises(ValueError, match=message):
        simulate_query_level(values, costs, distribution, p, 3.0, np.random.default_rng(0))


def test_it_rejects_mismatched_pool_arrays() -> None:
    values, costs, q, p = small_pool()
    with pytest.raises(ValueError, match="true_values must have shape"):
        simulate_query_level(values[:-1], costs, q, p, 3.0, np.random.default_rng(0))
    with pytest.raises(ValueError, match="query_weight must have shape"):
        simulate_query_level(values, costs, q, p[:-1], 3.0, np.random.default_rng(0))
    with pytest.raises(ValueError, match="query cost"):
        simulate_query_level(values, -costs, q, p, 3.0, np.random.default_rng(0))


def test_it_never_draws_a_unit_with_zero_probability() -> None:
    q = np.array([0.0, 0.5, 0.0, 0.5, 0.0])
    units = draw_units(q, np.random.default_rng(0).random(10_000))
    assert set(np.unique(units).tolist()) == {1, 3}
    # The largest uniform below 1 must not fall off the end onto a zero-probability unit.
    assert int(draw_units(q, np.nextafter(1.0, 0.0))) == 3


def item_pool(seed: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Labels u (m, n), a distribution Q over pairs, target weights of two systems (2, m, n)."""
    rng = np.random.default_rng(seed)
    n_queries, n_slots = 6, 5
    labels = rng.integers(0, 5, (n_queries, n_slots)) / 4
    discount = 1 / np.log2(np.arange(2, n_slots + 2))
    targets = np.stack(
        [
            np.stack([discount[rng.permutation(n_slots)] for _ in range(n_queries)]) / n_queries
            for _ in range(2)
        ]
    )
    q = 0.9 * targets.max(axis=0) / targets.max(axis=0).sum() + 0.1 / labels.size
    return labels, q / q.sum(), targets


def test_it_estimates_every_system_from_the_same_item_draws() -> None:
    labels, q, targets = item_pool()
    result = simulate_item_level(labels, q, targets, np.random.default_rng(1), n_draws=40)
    assert len(result.estimates) == 2
    assert result.draws.shape == (40, 2)
    for weights, estimate in zip(targets, result.estimates, strict=True):
        queries, slots = result.draws.T
        direct = item_level_estimate(labels[queries, slots], weights[queries, slots], q[queries, slots])
        assert estimate.value == pytest.approx(direct.value)
        assert estimate.standard_error == pytest.approx(direct.standard_error)


def test_it_keeps_item_spending_within_the_budget() -> None:
    labels, q, targets = item_pool()
    costs = np.random.default_rng(2).uniform(0.1, 0.3, labels.shape)
    for seed in range(10):
        result = simulate_item_level(
            labels, q, targets, np.random.default_rng(seed), budget=2.0, item_cost=costs, interval="hoeffding"
        )
        unique_pairs = np.unique(result.draws, axis=0)
        assert result.spent <= 2.0
        assert result.spent == pytest.approx(costs[unique_pairs[:, 0], unique_pairs[:, 1]].sum())
        assert result.n_judged == len(unique_pairs)
        assert all(estimate.interval == "hoeffding" for estimate in result.estimates)


def test_it_reports_the_weight_bound_of_each_system() -> None:
    labels, q, targets = item_pool()
    result = simulate_item_level(labels, q, targets, np.random.default_rng(0), n_draws=5)
    assert np.allclose(result.weight_bounds, [np.max(t / q) for t in targets])


def test_it_needs_item_costs_for_an_item_budget() -> None:
    labels, q, targets = item_pool()
    with pytest.raises(ValueError, match="item_cost"):
        simulate_item_level(labels, q, targets, np.random.default_rng(0), budget=1.0)


@pytest.mark.parametrize("budget", [1, 5, 50])
def test_it_buys_exactly_n_equal_cost_queries_with_a_budget_of_n(budget: int) -> None:
    # Repro: equal costs normalised to 1.0000000000000002, so a budget of 5 on 50 queries
    # bought 4 and a budget of one query bought none (nan, 0 topics).
    from estimation.sampling.costs import query_costs
    from estimation.sampling.pool import Pool

    m = 50
    pool = Pool(
        np.full((m, 1, 2), 0.5),
        np.ones((m, 1), dtype=bool),
        np.zeros((1, m, 1), dtype=np.int64),
        np.full((m, 1), 5.0),
        np.full(m, 1.0 / m),
    )
    cost = query_costs(pool)
    passive = np.full(m, 1.0 / m)
    values = np.arange(m, dtype=float)
    for seed in range(5):
        run = simulate_query_level(values, cost, passive, passive, budget, np.random.default_rng(seed))
        assert run.n_judged == budget
        assert np.isfinite(run.estimate.value)


def test_it_takes_a_draw_whose_cost_matches_the_budget_up_to_rounding() -> None:
    # Ten queries of cost 0.1 sum to 0.9999999999999999 or 1.0000000000000002 depending on
    # the order; a budget of 1 buys all ten either way.
    cost = np.full(10, 0.1)
    passive = np.full(10, 0.1)
    run = simulate_query_level(np.ones(10), cost, passive, passive, 1.0, np.random.default_rng(3))
    assert run.n_judged == 10
    assert run.stop_reason == "pool_exhausted"


@pytest.mark.parametrize("interval", ["clt", "hoeffding", "bernstein"])
def test_it_estimates_a_target_without_weight_as_exactly_zero(interval: str) -> None:
    # Repro: with interval="hoeffding" a target whose weights are all 0 (e.g. a run that
    # misses every topic of the pool) raised instead of estimating 0.
    labels, q, weights = item_pool()
    targets = np.stack([weights[0], np.zeros_like(weights[0])])
    result = simulate_item_level(labels, q, targets, np.random.default_rng(0), n_draws=40, interval=interval)
    empty = result.estimates[1]
    assert result.weight_bounds[1] == 0.0
    assert (empty.value, empty.low, empty.high) == (0.0, 0.0, 0.0)
    assert np.isfinite(result.estimates[0].high)


def test_it_simulates_a_run_that_misses_some_topics() -> None:
    # Repro: "every query cost must be > 0". Topics 3 and 4 have nothing to label: they are
    # free, known (0), and the budget buys the other three.
    values = np.array([1.0, 2.0, 3.0, 0.0, 0.0])
    cost = np.array([1.0, 1.0, 1.0, 0.0, 0.0])
    passive = np.full(5, 0.2)
    run = simulate_query_level(values, cost, passive, passive, 3.0, np.random.default_rng(0))
    assert run.stop_reason == "pool_exhausted"
    assert run.n_judged == 5 and run.spent == 3.0
    batch = simulate_query_level_batch(values, cost, passive, passive, 3.0, 200, np.random.default_rng(1))
    assert np.all(batch.n_judged == 5)
    assert np.mean(batch.estimates) == pytest.approx(values.mean(), rel=0.05)
