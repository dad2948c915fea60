"""Exact moments against brute-force enumeration of every label vector (docs/estimation.md)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import estimation.metrics.moments as moments_module
from estimation.metrics.moments import (
    difference_moments,
    err_cross_moment,
    leaderboard_second_moment,
    pool_difference_moments,
    pool_moments,
    ranking_moments,
)
from estimation.metrics.spec import Metric
from estimation.sampling.pool import Pool
from tests.estimation import bruteforce

TOLERANCE = 1e-9
EXAMPLES = settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])

PAIR_KINDS = ("independent", "identical", "reversed", "disjoint", "shuffled")


def _theta(rng: np.random.Generator, m: int, n: int, n_grades: int) -> np.ndarray:
    """Random label distributions, some of them certain (a one-hot row, e.g. E[l] = 0)."""
    theta = rng.dirichlet(np.full(n_grades, 0.7), size=(m, n))
    certain = rng.random((m, n)) < 0.15
    grades = rng.integers(0, n_grades, size=(m, n))
    theta[certain] = np.eye(n_grades)[grades[certain]]
    return theta


def _ranking_row(rng: np.random.Generator, n: int, depth: int) -> np.ndarray:
    """A row of `depth` positions: distinct slots, -1 padding at the end or (sometimes) gaps."""
    length = int(rng.integers(0, min(n, depth) + 1))
    row = np.full(depth, -1)
    row[:length] = rng.permutation(n)[:length]
    if rng.random() < 0.25:
        row = rng.permutation(row)
    return row


def _second_row(rng: np.random.Generator, first: np.ndarray, n: int, depth: int, kind: str) -> np.ndarray:
    if kind == "identical":
        return first.copy()
    if kind == "reversed":
        items = first[first >= 0][::-1]
        row = np.full(depth, -1)
        row[: items.size] = items[:depth]
        return row
    if kind == "shuffled":
        return rng.permutation(first)
    if kind == "disjoint":
        others = rng.permutation(np.setdiff1d(np.arange(n), first))
        row = np.full(depth, -1)
        length = int(rng.integers(0, min(others.size, depth) + 1))
        row[:length] = others[:length]
        return row
    return _ranking_row(rng, n, depth)


@st.composite
def cases(draw: st.DrawFn, *, max_items: int = 6, grades: tuple[int, ...] = (2, 3)) -> dict:
    """Random theta and a pair of rankings per query, with a relation between the two."""
    seed = draw(st.integers(0, 2**32 - 1))
    n_grades = draw(st.sampled_from(grades))
    n = draw(st.integers(1, max_items))
    m = draw(st.integers(1, 3))
    depth_a = draw(st.integers(1, max_items))
    kind = draw(st.sampled_from(PAIR_KINDS))
    depth_b = depth_a if kind in ("identical", "shuffled") else draw(st.integers(1, max_items))
    rng = np.random.default_rng(seed)
    ranking_a = np.stack([_ranking_row(rng, n, depth_a) for _ in range(m)])
    ranking_b = np.stack([_second_row(rng, row, n, depth_b, kind) for row in ranking_a])
    return {
        "theta": _theta(rng, m, n, n_grades),
        "ranking_a": ranking_a,
        "ranking_b": ranking_b,
        "y_max": n_grades - 1,
        "cutoff": draw(st.integers(1, max_items + 1)),
        "kind": kind,
        "seed": seed,
    }


def _metrics(y_max: int, cutoff: int) -> list[Metric]:
    custom_gains = tuple(float(value) for value in np.linspace(0.5, 3.0, y_max + 1) ** 2)
    custom_discounts = tuple(1.0 / (rank + 0.5) for rank in range(1, cutoff + 1))
    return [
        Metric("DCG", cutoff=cutoff, gain="exp", y_max=y_max),
        Metric("DCG", cutoff=cutoff, gain="linear", y_max=y_max),
        Metric("DCG", cutoff=cutoff, y_max=y_max, gain_values=custom_gains, discount_values=custom_discounts),
        Metric("ERR", cutoff=cutoff, y_max=y_max),
    ]


@EXAMPLES
@given(case=cases())
def test_it_matches_brute_force_for_one_ranking(case: dict) -> None:
    theta, ranking = case["theta"], case["ranking_a"]
    for metric in _metrics(case["y_max"], case["cutoff"]):
        moments = ranking_moments(theta, ranking, metric)
        for query in range(theta.shape[0]):
            mean, variance = bruteforce.ranking_mean_variance(theta[query], ranking[query], metric)
            assert moments.mean[query] == pytest.approx(mean, abs=TOLERANCE), metric
            assert moments.variance[query] == pytest.approx(variance, abs=TOLERANCE), metric


@EXAMPLES
@given(case=cases())
def test_it_matches_brute_force_for_a_difference(case: dict) -> None:
    theta, ranking_a, ranking_b = case["theta"], case["ranking_a"], case["ranking_b"]
    for metric in _metrics(case["y_max"], case["cutoff"]):
        moments = difference_moments(theta, ranking_a, ranking_b, metric)
        for query in range(theta.shape[0]):
            mean, variance = bruteforce.difference_mean_variance(
                theta[query], ranking_a[query], ranking_b[query], metric
            )
            assert moments.mean[query] == pytest.approx(mean, abs=TOLERANCE), (metric, case["kind"])
            assert moments.variance[query] == pytest.approx(variance, abs=TOLERANCE), (metric, case["kind"])


@EXAMPLES
@given(case=cases(), y_max=st.sampled_from([1, 2, 3, 4]))
def test_it_matches_brute_force_for_the_err_cross_moment(case: dict, y_max: int) -> None:
    # Redraw theta on the requested scale; more grades need fewer items to stay enumerable.
    rng = np.random.default_rng([case["seed"], y_max])
    m, n, _ = case["theta"].shape
    keep = 6 if y_max <= 2 else 4
    theta = _theta(rng, m, n, y_max + 1)
    ranking_a = np.where(case["ranking_a"] < keep, case["ranking_a"], -1)
    ranking_b = np.where(case["ranking_b"] < keep, case["ranking_b"], -1)
    metric = Metric("ERR", cutoff=case["cutoff"], y_max=y_max)
    cross = err_cross_moment(theta, ranking_a, ranking_b, metric)
    for query in range(m):
        expected = bruteforce.cross_moment(theta[query], ranking_a[query], ranking_b[query], metric)
        assert cross[query] == pytest.approx(expected, abs=TOLERANCE), case["kind"]


@EXAMPLES
@given(case=cases(max_items=5))
def test_it_matches_brute_force_for_a_leaderboard(case: dict) -> None:
    rng = np.random.default_rng([case["seed"], 1])
    theta = case["theta"]
    m, n, _ = theta.shape
    depth = case["ranking_a"].shape[1]
    third = np.stack([_ranking_row(rng, n, depth) for _ in range(m)])
    width = max(depth, case["ranking_b"].shape[1])
    rankings = np.full((3, m, width), -1)
    rankings[0, :, :depth] = case["ranking_a"]
    rankings[1, :, : case["ranking_b"].shape[1]] = case["ranking_b"]
    rankings[2, :, :depth] = third
    references = rng.random(3) * 3.0
    for metric in _metrics(case["y_max"], case["cutoff"])[::3]:
        total = leaderboard_second_moment(theta, rankings, metric, references)
        for query in range(m):
            expected = sum(
                bruteforce.second_moment_about(theta[query], ranking[query], metric, reference)
                for ranking, reference in zip(rankings, references, strict=True)
            )
            assert total[query] == pytest.approx(expected, abs=TOLERANCE), metric


def test_it_defaults_the_leaderboard_references_to_the_weighted_expectations() -> None:
    rng = np.random.default_rng(9)
    theta = rng.dirichlet(np.ones(3), size=(6, 5))
    rankings = np.stack([np.argsort(rng.random((6, 5)), axis=1) for _ in range(2)])
    weight = rng.random(6)
    metric = Metric("ERR", cutoff=5, y_max=2)
    references = [
        weight @ ranking_moments(theta, ranking, metric).mean / weight.sum() for ranking in rankings
    ]
    np.testing.assert_allclose(
        leaderboard_second_moment(theta, rankings, metric, query_weight=weight),
        leaderboard_second_moment(theta, rankings, metric, np.array(references)),
        rtol=1e-13,
    )
    with pytest.raises(ValueError, match=r"query_weight must have shape \(6,\)"):
        leaderboard_second_moment(theta, rankings, metric, query_weight=weight[:5])


def test_it_gives_a_worked_err_example() -> None:
    # One query, y_max = 1 so l(1) = 1/2; ranking (slot 0, slot 1); P(y = 1) = 0.5 and 1.0.
    # Label vectors: (0, 1) -> 1/2 * 1/2 = 1/4; (1, 1) -> 1/2 + 1/2 * 1/2 * 1/2 = 5/8.
    theta = np.array([[[0.5, 0.5], [0.0, 1.0]]])
    moments = ranking_moments(theta, np.array([[0, 1]]), Metric("ERR", cutoff=2, y_max=1))
    mean = 0.5 * (1 / 4) + 0.5 * (5 / 8)
    assert moments.mean[0] == pytest.approx(mean, abs=1e-15)
    assert moments.variance[0] == pytest.approx(0.5 * (1 / 4) ** 2 + 0.5 * (5 / 8) ** 2 - mean**2, abs=1e-15)


def test_it_gives_identical_rankings_a_zero_difference() -> None:
    rng = np.random.default_rng(3)
    theta = rng.dirichlet(np.ones(5), size=(20, 40))
    ranking = np.argsort(rng.random((20, 40)), axis=1)
    for metric in (Metric("DCG", cutoff=40), Metric("ERR", cutoff=40)):
        moments = difference_moments(theta, ranking, ranking, metric)
        assert np.all(moments.mean == 0.0)
        np.testing.assert_allclose(moments.variance, 0.0, atol=1e-12)
    single = ranking_moments(theta, ranking, Metric("ERR", cutoff=40))
    cross = err_cross_moment(theta, ranking, ranking, Metric("ERR", cutoff=40))
    np.testing.assert_allclose(cross, single.variance + single.mean**2, rtol=1e-10)


def test_it_stays_exact_on_a_fine_scale_at_full_depth() -> None:
    # y_max = 10 over 120 positions: prefix products reach 2^-1200, far below float range.
    rng = np.random.default_rng(12)
    theta = rng.dirichlet(np.full(11, 0.3), size=(4, 120))
    theta[:, :60] = np.eye(11)[10]
    ranking_a = np.argsort(rng.random((4, 120)), axis=1)
    ranking_b = np.argsort(rng.random((4, 120)), axis=1)
    metric = Metric("ERR", cutoff=120, y_max=10)
    single = ranking_moments(theta, ranking_a, metric)
    same = err_cross_moment(theta, ranking_a, ranking_a, metric)
    np.testing.assert_allclose(same, single.variance + single.mean**2, rtol=1e-12)
    difference = difference_moments(theta, ranking_a, ranking_b, metric)
    assert np.all(np.isfinite(difference.variance)) and np.all(difference.variance > 0)


def test_it_agrees_with_a_simulation_at_full_depth() -> None:
    # Beyond brute force: 60 items, 5 grades; the log-domain grid must stay accurate deep down.
    rng = np.random.default_rng(11)
    n, draws = 60, 80_000
    theta = rng.dirichlet(np.full(5, 0.5), size=(1, n))
    ranking_a = rng.permutation(n)[None, :]
    ranking_b = rng.permutation(n)[None, :]
    metric = Metric("ERR", cutoff=n, y_max=4)
    cumulative = np.cumsum(theta[0], axis=1)
    labels = (rng.random((draws, n, 1)) > cumulative[None, :, :]).sum(axis=2)
    stop = (2.0**labels - 1.0) / 16.0

    def err(ranking: np.ndarray) -> np.ndarray:
        ordered = stop[:, ranking[0]]
        not_stopped = np.cumprod(np.hstack([np.ones((draws, 1)), 1.0 - ordered[:, :-1]]), axis=1)
        return (ordered * not_stopped / np.arange(1, n + 1)).sum(axis=1)

    product = err(ranking_a) * err(ranking_b)
    exact = err_cross_moment(theta, ranking_a, ranking_b, metric)[0]
    standard_error = product.std() / np.sqrt(draws)
    assert abs(exact - product.mean()) < 4.0 * standard_error


def test_it_does_not_depend_on_the_chunk_size(monkeypatch: pytest.MonkeyPatch) -> None:
    rng = np.random.default_rng(5)
    theta = rng.dirichlet(np.ones(3), size=(37, 9))
    ranking_a = np.stack([_ranking_row(rng, 9, 7) for _ in range(37)])
    ranking_b = np.stack([_ranking_row(rng, 9, 8) for _ in range(37)])
    results = []
    for cells in (1, 100, 1 << 20):
        monkeypatch.setattr(moments_module, "_GATHER_CELLS", cells)
        monkeypatch.setattr(moments_module, "_GRID_CELLS", cells)
        results.append(
            [
                ranking_moments(theta, ranking_a, Metric("ERR", cutoff=7, y_max=2)).variance,
                difference_moments(theta, ranking_a, ranking_b, Metric("DCG", cutoff=8, y_max=2)).variance,
                difference_moments(theta, ranking_a, ranking_b, Metric("ERR", cutoff=8, y_max=2)).variance,
            ]
        )
    for other in results[1:]:
        for left, right in zip(results[0], other, strict=True):
            np.testing.assert_allclose(left, right, rtol=1e-12, atol=1e-15)


def test_it_ignores_positions_below_the_cutoff() -> None:
    rng = np.random.default_rng(8)
    theta = rng.dirichlet(np.ones(5), size=(6, 12))
    ranking = np.argsort(rng.random((6, 12)), axis=1)
    for name in ("DCG", "ERR"):
        full = ranking_moments(theta, ranking, Metric(name, cutoff=5))
        truncated = ranking_moments(theta, ranking[:, :5], Metric(name, cutoff=50))
        np.testing.assert_allclose(full.mean, truncated.mean, rtol=1e-14)
        np.testing.assert_allclose(full.variance, truncated.variance, rtol=1e-14)


def test_it_reads_only_the_ranked_slots_of_theta() -> None:
    theta = np.full((1, 3, 3), np.nan)
    theta[0, 1] = [0.2, 0.3, 0.5]
    moments = ranking_moments(theta, np.array([[1, -1]]), Metric("DCG", cutoff=2, y_max=2))
    assert moments.mean[0] == pytest.approx(0.3 * 1 + 0.5 * 3)
    assert np.isfinite(moments.variance[0])


def test_it_gives_a_query_without_results_zero_moments() -> None:
    theta = np.random.default_rng(2).dirichlet(np.ones(3), size=(2, 3))
    ranking = np.array([[2, 0], [-1, -1]])
    for name in ("DCG", "ERR"):
        moments = ranking_moments(theta, ranking, Metric(name, cutoff=2, y_max=2))
        assert moments.mean[1] == 0.0 and moments.variance[1] == 0.0
        assert moments.mean[0] > 0.0


def _pool() -> Pool:
    rng = np.random.default_rng(4)
    m, n = 5, 6
    rankings = np.stack([np.argsort(rng.random((m, n)), axis=1)[:, :4] for _ in range(3)])
    return Pool(
        theta=rng.dirichlet(np.ones(5), size=(m, n)),
        slot_used=np.ones((m, n), dtype=bool),
        rankings=rankings,
        item_cost=np.ones((m, n)),
        query_weight=np.full(m, 1 / m),
        system_names=("bm25", "lm", "neural"),
    )


def test_it_takes_systems_of_a_pool_by_name_or_index() -> None:
    pool = _pool()
    metric = Metric("ERR", cutoff=4)
    by_name = pool_moments(pool, metric, "lm")
    direct = ranking_moments(pool.theta, pool.rankings[1], metric)
    np.testing.assert_array_equal(by_name.mean, direct.mean)
    np.testing.assert_array_equal(pool_moments(pool, metric, 1).variance, direct.variance)
    difference = pool_difference_moments(pool, metric, "neural", 0)
    direct_difference = difference_moments(pool.theta, pool.rankings[2], pool.rankings[0], metric)
    np.testing.assert_array_equal(difference.variance, direct_difference.variance)
    with pytest.raises(ValueError, match="unknown system 'bing'"):
        pool_moments(pool, metric, "bing")
    with pytest.raises(ValueError, match="out of range"):
        pool_moments(pool, metric, 3)


VALID_THETA = np.full((2, 4, 3), 1 / 3)
VALID_RANKING = np.array([[0, 1, 2], [3, 2, -1]])
DCG = Metric("DCG", cutoff=3, y_max=2)


@pytest.mark.parametrize(
    ("theta", "ranking", "metric", "message"),
    [
        (VALID_THETA[0], VALID_RANKING, DCG, r"theta must have shape \(m, n, G\)"),
        (VALID_THETA, VALID_RANKING, Metric("DCG", cutoff=3, y_max=4), "theta has 3 grades"),
        (VALID_THETA, VALID_RANKING, Metric("nDCG", cutoff=3, y_max=2), "nDCG is reported"),
        (VALID_THETA, VALID_RANKING[:1], DCG, r"ranking must have shape \(2, K\)"),
        (VALID_THETA, VALID_RANKING[:, :0], DCG, "ranking is empty"),
        (VALID_THETA, VALID_RANKING.astype(float), DCG, "integer slot indices"),
        (VALID_THETA, np.array([[0, 1, 4], [0, 1, 2]]), DCG, r"slot indices in 0..3"),
        (VALID_THETA, np.array([[0, 1, -2], [0, 1, 2]]), DCG, r"slot indices in 0..3"),
        (VALID_THETA, np.array([[0, 1, 2], [3, -1, 3]]), DCG, "ranks slot 3 twice for query 1"),
    ],
)
def test_it_rejects_malformed_input(
    theta: np.ndarray, ranking: np.ndarray, metric: Metric, message: str
) -> None:
    with pytest.raises(ValueError, match=message):
        ranking_moments(theta, ranking, metric)


@pytest.mark.parametrize(
    ("row", "message"),
    [([0.5, 0.4, 0.2], "sums to 1.1"), ([0.5, np.nan, 0.5], "finite"), ([1.2, -0.2, 0.0], "non-negative")],
)
def test_it_rejects_a_ranked_slot_without_a_distribution(row: list[float], message: str) -> None:
    theta = VALID_THETA.copy()
    theta[1, 2] = row
    with pytest.raises(ValueError, match=rf"theta\[query 1, slot 2\].*{message}"):
        ranking_moments(theta, VALID_RANKING, Metric("ERR", cutoff=3, y_max=2))
    with pytest.raises(ValueError, match=r"theta\[query 1, slot 2\]"):
        difference_moments(theta, VALID_RANKING[:, ::-1], VALID_RANKING, DCG)


def test_it_rejects_mismatched_pairs_and_leaderboards() -> None:
    with pytest.raises(ValueError, match="ranking_b must have shape"):
        difference_moments(VALID_THETA, VALID_RANKING, VALID_RANKING[:1], DCG)
    with pytest.raises(ValueError, match="needs an ERR metric"):
        err_cross_moment(VALID_THETA, VALID_RANKING, VALID_RANKING, DCG)
    rankings = np.stack([VALID_RANKING, VALID_RANKING])
    with pytest.raises(ValueError, match=r"references must have shape \(2,\)"):
        leaderboard_second_moment(VALID_THETA, rankings, DCG, np.zeros(3))
    with pytest.raises(ValueError, match=r"rankings must have shape \(S, m, K\)"):
        leaderboard_second_moment(VALID_THETA, VALID_RANKING, DCG, np.zeros(2))
    with pytest.raises(ValueError, match="references must be finite"):
        leaderboard_second_moment(VALID_THETA, rankings, DCG, np.array([0.0, np.nan]))
