"""The vectorised batch paths reproduce the one-draw-at-a-time loop exactly."""

from __future__ import annotations

import numpy as np
import pytest

from estimation.simulation.batch import simulate_item_level_batch, simulate_query_level_batch
from estimation.simulation.kernels import first_occurrences, stop_counts
from estimation.simulation.loop import simulate_item_level, simulate_query_level


def small_pool(seed: int = 0, n_queries: int = 15) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    values = rng.random((n_queries, 3))
    values[:, 2] = values[:, 0] - values[:, 1]  # L_a, L_b and their difference
    costs = rng.uniform(0.5, 1.5, n_queries)
    q = rng.uniform(0.2, 1.0, n_queries)
    return values, costs, q / q.sum(), np.full(n_queries, 1 / n_queries)


def test_it_marks_the_first_occurrence_of_each_unit_per_row() -> None:
    draws = np.array([[3, 1, 3, 0, 1], [2, 2, 2, 2, 2]])
    expected = np.array([[True, True, False, True, False], [True, False, False, False, False]])
    assert np.array_equal(first_occurrences(draws), expected)


def test_it_applies_the_stopping_rule_to_hand_made_draws() -> None:
    # Costs 1, 2, 3, 4. Row: 0 (1), 1 (2), 0 again (free), 2 (3), 3 (4): cumulative 1, 3, 3, 6, 10.
    draws = np.array([[0, 1, 0, 2, 3]])
    costs = np.array([1.0, 2.0, 3.0, 4.0])
    n_draws, decided, n_judged, spent = stop_counts(draws, costs, 4, budget=6.0)
    assert (n_draws[0], decided[0], n_judged[0], spent[0]) == (4, True, 3, 6.0)
    n_draws, _, n_judged, spent = stop_counts(draws, costs, 4, budget=5.9)
    assert (n_draws[0], n_judged[0], spent[0]) == (3, 2, 3.0)
    # With a budget of 100 the fifth draw labels the last unit: the pool is exhausted.
    n_draws, decided, _, spent = stop_counts(draws, costs, 4, budget=100.0)
    assert (n_draws[0], decided[0], spent[0]) == (5, True, 10.0)
    # With a budget of 100 and five units in the support the row has not stopped yet.
    _, decided, _, _ = stop_counts(draws, np.r_[costs, 1.0], 5, budget=100.0)
    assert not decided[0]


@pytest.mark.parametrize("budget", [2.0, 6.0, 40.0])
def test_it_reproduces_the_loop_for_the_same_seed(budget: float) -> None:
    values, costs, q, p = small_pool()
    for seed in range(12):
        batch = simulate_query_level_batch(values, costs, q, p, budget, 1, np.random.default_rng(seed))
        for column in range(3):
            loop = simulate_query_level(values[:, column], costs, q, p, budget, np.random.default_rng(seed))
            assert batch.n_draws[0] == loop.estimate.n_draws
            assert batch.n_judged[0] == loop.n_judged
            assert batch.spent[0] == loop.spent
            assert batch.estimates[0, column] == pytest.approx(loop.estimate.value, rel=1e-12)
            if loop.estimate.n_draws > 1:
                assert batch.standard_errors[0, column] == pytest.approx(
                    loop.estimate.standard_error, rel=1e-12, nan_ok=True
                )


def test_it_reproduces_the_plain_estimator_of_the_loop() -> None:
    values, costs, q, p = small_pool()
    for seed in range(5):
        batch = simulate_query_level_batch(
            values[:, 0],
            costs,
            q,
            p,
            None,
            1,
            np.random.default_rng(seed),
            max_draws=17,
            self_normalised=False,
        )
        loop = simulate_query_level(
            values[:, 0], costs, q, p, None, np.random.default_rng(seed), max_draws=17, self_normalised=False
        )
        assert batch.estimates[0] == pytest.approx(loop.estimate.value, rel=1e-12)
        assert batch.standard_errors[0] == pytest.approx(loop.estimate.standard_error, rel=1e-12)


def test_it_draws_more_columns_when_rows_have_not_stopped() -> None:
    # One query holds almost all of q and is cheap, so runs repeat it many times before the
    # budget binds: far more draws than the initial guess budget / (q @ cost).
    values, costs = np.array([0.1, 0.9, 0.5]), np.array([0.01, 10.0, 10.0])
    q = np.array([0.998, 0.001, 0.001])
    p = np.full(3, 1 / 3)
    batch = simulate_query_level_batch(values, costs, q, p, 10.0, 1, np.random.default_rng(7))
    loop = simulate_query_level(values, costs, q, p, 10.0, np.random.default_rng(7))
    assert batch.n_draws[0] == loop.estimate.n_draws > 200
    assert batch.estimates[0] == pytest.approx(loop.estimate.value)


def test_it_shares_draws_across_budgets_and_keeps_spending_within_each() -> None:
    values, costs, q, p = small_pool()
    budgets = np.array([2.0, 5.0, 9.0])
    batch = simulate_query_level_batch(values, costs, q, p, budgets, 300, np.random.default_rng(0))
    assert batch.estimates.shape == (3, 300, 3)
    assert batch.n_draws.shape == (3, 300)
    assert np.all(batch.spent <= budgets[:, None])
    # Common random numbers: a larger budget continues the same campaign.
    assert np.all(np.diff(batch.n_draws, axis=0) >= 0)
    assert np.all(batch.n_judged <= batch.n_draws)


def test_it_gives_the_same_numbers_whatever_the_chunking(monkeypatch: pytest.MonkeyPatch) -> None:
    import estimation.simulation.kernels as batch_kernels

    values, costs, q, p = small_pool()
    whole = simulate_query_level_batch(values, costs, q, p, 5.0, 50, np.random.default_rng(3))
    monkeypatch.setattr(batch_kernels, "_CHUNK_ELEMENTS", 1)  # one repetition per chunk
    chunked = simulate_query_level_batch(values, costs, q, p, 5.0, 50, np.random.default_rng(3))
    # One repetition per chunk consumes the uniforms row after row, like 50 loops in sequence.
    first_loop = simulate_query_level(values[:, 0], costs, q, p, 5.0, np.random.default_rng(3))
    assert chunked.estimates[0, 0] == pytest.approx(first_loop.estimate.value)
    assert whole.estimates.shape == chunked.estimates.shape
    assert np.all(np.isfinite(chunked.estimates))


def test_it_reports_interval_coverage_per_run() -> None:
    values, costs, q, p = small_pool()
    batch = simulate_query_level_batch(values[:, 0], costs, q, p, 5.0, 20, np.random.default_rng(0))
    low, high = batch.interval()
    assert np.all(low <= batch.estimates) and np.all(batch.estimates <= high)
    assert np.array_equal(batch.covers(0.5), (low <= 0.5) & (0.5 <= high))


def test_it_rejects_bad_batch_arguments() -> None:
    values, costs, q, p = small_pool()
    rng = np.random.default_rng(0)
    with pytest.raises(ValueError, match="budget must be > 0"):
        simulate_query_level_batch(values, costs, q, p, np.array([1.0, 0.0]), 5, rng)
    with pytest.raises(ValueError, match="n_repetitions"):
        simulate_query_level_batch(values, costs, q, p, 1.0, 0, rng)
    with pytest.raises(ValueError, match="true_values"):
        simulate_query_level_batch(values[:-1], costs, q, p, 1.0, 5, rng)
    with pytest.raises(ValueError, match="a budget, max_draws"):
        simulate_query_level_batch(values, costs, q, p, None, 5, rng)


def item_pool(seed: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    n_queries, n_slots = 5, 4
    labels = rng.integers(0, 3, (n_queries, n_slots)) / 2
    targets = rng.random((2, n_queries, n_slots)) / labels.size
    q = rng.uniform(0.1, 1.0, labels.shape)
    costs = rng.uniform(0.1, 0.4, labels.shape)
    return labels, q / q.sum(), targets, costs


@pytest.mark.parametrize("kind", ["clt", "hoeffding", "bernstein"])
def test_it_reproduces_the_item_loop_for_the_same_seed(kind: str) -> None:
    labels, q, targets, costs = item_pool()
    for seed in range(8):
        batch = simulate_item_level_batch(
            labels, q, targets, 1, np.random.default_rng(seed), budget=1.5, item_cost=costs
        )
        loop = simulate_item_level(
            labels, q, targets, np.random.default_rng(seed), budget=1.5, item_cost=costs, interval=kind
        )
        low, high = batch.interval(kind)
        assert batch.n_draws[0] == loop.estimates[0].n_draws
        assert batch.spent[0] == loop.spent
        for system, estimate in enumerate(loop.estimates):
            assert batch.estimates[0, system] == pytest.approx(estimate.value, rel=1e-12)
            assert low[0, system] == pytest.approx(estimate.low, rel=1e-9)
            assert high[0, system] == pytest.approx(estimate.high, rel=1e-9)


def test_it_takes_exactly_n_draws_without_an_item_budget() -> None:
    labels, q, targets, _ = item_pool()
    batch = simulate_item_level_batch(labels, q, targets, 40, np.random.default_rng(0), n_draws=33)
    assert np.all(batch.n_draws == 33)
    assert batch.estimates.shape == (40, 2)
    assert np.all(np.isnan(batch.spent))


def test_it_uses_the_signed_range_for_a_difference_target() -> None:
    labels, q, targets, _ = item_pool()
    difference = targets[0] - targets[1]
    batch = simulate_item_level_batch(labels, q, difference[None], 3, np.random.default_rng(0), n_draws=5)
    ratios = difference / q
    assert batch.value_ranges[0] == pytest.approx(max(ratios.max(), 0) - min(ratios.min(), 0))
    assert batch.value_ranges[0] <= 2 * np.abs(ratios).max()


def test_it_fails_clearly_instead_of_chasing_an_unreachable_exhaustion(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import estimation.simulation.kernels as batch_kernels

    # The budget buys the whole pool, but one query has probability 1e-12: no run stops.
    values, costs = np.array([0.1, 0.9, 0.5]), np.array([1.0, 1.0, 1.0])
    q = np.array([0.5, 0.5 - 1e-12, 1e-12])
    monkeypatch.setattr(batch_kernels, "_RUNAWAY_ELEMENTS", 100_000)
    with pytest.raises(ValueError, match="set max_draws"):
        simulate_query_level_batch(values, costs, q, np.full(3, 1 / 3), 10.0, 10, np.random.default_rng(0))


def test_it_gives_runs_without_an_affordable_draw_an_unbounded_interval() -> None:
    # Every query costs more than the budget: no run can take a draw, as in the loop.
    values, costs, q, p = small_pool()
    batch = simulate_query_level_batch(values, costs * 100, q, p, 1.0, 4, np.random.default_rng(0))
    loop = simulate_query_level(values[:, 0], costs * 100, q, p, 1.0, np.random.default_rng(0))
    low, high = batch.interval()
    assert np.all(batch.n_draws == 0) and np.all(np.isnan(batch.estimates))
    assert np.all(low == -np.inf) and np.all(high == np.inf)
    assert (loop.estimate.low, loop.estimate.high) == (-np.inf, np.inf)


def test_it_buys_exactly_n_equal_cost_queries_in_the_batch_path_too() -> None:
    m = 50
    costs = np.full(m, 1.0)
    costs_drifted = np.full(m, 1.0000000000000002)  # what the old normalisation produced
    passive = np.full(m, 1.0 / m)
    for unit_cost in (costs, costs_drifted):
        batch = simulate_query_level_batch(
            np.arange(m, dtype=float),
            unit_cost,
            passive,
            passive,
            np.array([1.0, 5.0]),
            20,
            np.random.default_rng(0),
        )
        assert batch.n_judged[0].tolist() == [1] * 20
        assert batch.n_judged[1].tolist() == [5] * 20
