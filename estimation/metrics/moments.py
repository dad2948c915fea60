"""Exact moments of DCG and ERR under a label model theta, vectorised over a pool of queries.

The query-level sampling distributions of Sawade et al. (Theorems 1 and 2) need, per query,
``E[(L - R)^2 | x; theta]`` for one ranking and ``E[(delta - Delta)^2 | x; theta]`` for the
difference of two. Enumerating label vectors is exponential; Theorem 3 computes them in
polynomial time because labels of different items are independent given the query (eq. 3).
The formulas are restated in ``docs/estimation.md`` ("Exact moments under theta (one ranking)",
"Exact moments for comparing two rankings").

Layout (see :mod:`estimation.sampling.pool`): ``theta`` has shape (m, n, G), a ranking has shape (m, K)
and holds slot indices, ``-1`` for an empty position. An empty position keeps its rank (the
items below it keep their discounts) and contributes nothing; a row of ``-1`` (a query the
system did not return) has L = 0 with zero variance. Only the first ``min(K, cutoff)``
positions count. nDCG is not supported: it is reported, never used to build a sampling
distribution.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from estimation._checks import PROBABILITY_TOLERANCE, check_probability_rows, check_weights
from estimation.metrics.moments_err import (
    err_cross_moment_chunk,
    err_first_two_moments,
    err_statistics_table,
)
from estimation.metrics.spec import Metric
from estimation.sampling.pool import EMPTY, Pool
from estimation.sampling.results import Moments

# Chunks bound the memory of gathered label distributions, (c, K, G), and of the ERR cross
# moment grid, (c, K1, K2); both sizes are in float64 cells. Measured in bench/bench_core.py.
_GATHER_CELLS = 1 << 21
_GRID_CELLS = 1 << 20
MOMENT_RTOL = 1e-12
"""Moments computed as differences of larger terms are rounding noise below this fraction of
those terms (about 5,000 ulps); they are treated as exactly 0."""


def ranking_moments(theta: np.ndarray, ranking: np.ndarray, metric: Metric) -> Moments:
    """Per-query mean and variance of DCG@K or ERR@K of one ranking under theta.

    DCG: with ``mu_i = d(i) E[g(y)]`` and ``v_i = d(i)^2 Var[g(y)]`` under the label
    distribution of the item at rank i, ``E[L] = sum mu_i`` and ``Var[L] = sum v_i`` (Sawade et
    al., Theorem 3, DCG case). ERR: the backward recurrence for ``E[S_i]`` and ``E[S_i^2]``
    (Theorem 3, ERR case), O(|Y| K) per query.

    Parameters
    ----------
    theta : ndarray, shape (m, n, G)
        Label distribution of each slot over grades 0..G-1, ``G = metric.y_max + 1``. Only the
        rows of ranked slots are used (and validated).
    ranking : ndarray of int, shape (m, K)
        Slot index per rank, ``-1`` for an empty position.
    metric : Metric
        ``DCG`` (any gain, custom gains and discounts) or ``ERR``.

    Returns
    -------
    Moments
        ``mean`` and ``variance``, each of shape (m,).
    """
    theta = _check_theta(theta, metric)
    ranking = _check_ranking(ranking, theta, name="ranking")
    depth = min(ranking.shape[1], metric.cutoff)
    ranking = ranking[:, :depth]
    discount = metric.discount_table(depth)
    mean = np.empty(theta.shape[0])
    second = np.empty(theta.shape[0])
    table = _statistics_table(metric)
    for rows in _chunks(theta.shape[0], depth * theta.shape[2], _GATHER_CELLS):
        stats = _position_statistics(theta, ranking, rows, table)
        if metric.name == "ERR":
            mean[rows], second[rows] = err_first_two_moments(stats, discount)
        else:
            expected_gain, gain_variance = stats[:, :, 0], stats[:, :, 1]
            mean[rows] = expected_gain @ discount
            second[rows] = gain_variance @ discount**2
    if metric.name == "ERR":
        # Var = E[L^2] - E[L]^2 cancels to rounding noise when the labels are certain.
        variance = second - mean**2
        return Moments(mean=mean, variance=np.where(variance <= MOMENT_RTOL * second, 0.0, variance))
    return Moments(mean=mean, variance=second)


def difference_moments(
    theta: np.ndarray, ranking_a: np.ndarray, ranking_b: np.ndarray, metric: Metric
) -> Moments:
    """Per-query mean and variance of ``delta = L(ranking_a) - L(ranking_b)`` under theta.

    DCG: ``delta = sum_{z in r1 u r2} g(y_z) (d(i1(z)) - d(i2(z)))`` is a sum of independent
    per-item terms (``d`` = 0 when absent), so its variance is the sum of the items' variances.
    ERR: ``Var[delta] = E[L1^2] + E[L2^2] - 2 E[L1 L2] - (E[L1] - E[L2])^2`` with the cross
    moment of :func:`err_cross_moment` (Sawade et al., Theorem 3, comparison cases).

    Parameters
    ----------
    theta : ndarray, shape (m, n, G)
    ranking_a, ranking_b : ndarray of int, shape (m, K1) and (m, K2)
        Two systems' rankings of the same queries and slots, ``-1`` for an empty position.
    metric : Metric
        ``DCG`` or ``ERR``.

    Returns
    -------
    Moments
        ``mean`` = E[delta | x] and ``variance`` = Var[delta | x], each of shape (m,). Then
        ``E[(delta - Delta)^2 | x] = Moments.second_moment_about(Delta)``.
    """
    theta = _check_theta(theta, metric)
    ranking_a = _check_ranking(ranking_a, theta, name="ranking_a")[:, : metric.cutoff]
    ranking_b = _check_ranking(ranking_b, theta, name="ranking_b")[:, : metric.cutoff]
    if metric.name == "ERR":
        moments_a = ranking_moments(theta, ranking_a, metric)
        moments_b = ranking_moments(theta, ranking_b, metric)
        cross = _err_cross_moment(theta, ranking_a, ranking_b, metric)
        mean = moments_a.mean - moments_b.mean
        second_a = moments_a.variance + moments_a.mean**2
        second_b = moments_b.variance + moments_b.mean**2
        variance = second_a + second_b - 2.0 * cross - mean**2
        # Identical rankings cancel to rounding noise (2e-16 where the exact value is 0), and
        # a sampling distribution built from noise is arbitrary: a variance below a relative
        # tolerance of the terms it was computed from is 0, and a variance is never negative.
        noise = MOMENT_RTOL * (second_a + second_b + 2.0 * np.abs(cross))
        return Moments(mean=mean, variance=np.where(variance <= noise, 0.0, variance))
    return _dcg_difference_moments(theta, ranking_a, ranking_b, metric)


def err_cross_moment(
    theta: np.ndarray, ranking_a: np.ndarray, ranking_b: np.ndarray, metric: Metric
) -> np.ndarray:
    """``E[L1 L2 | x; theta]`` for ERR of two rankings of each query, shape (m,).

    Sums ``E[C1_z C2_z']`` over all pairs of positions, each factorised over items (Sawade et
    al., proof of Theorem 3; ``docs/estimation.md``, "Exact moments for comparing two
    rankings"), O(|Y| K1 K2) per query through a 2-D prefix sum of log factors over the
    (position in r1, position in r2) grid; see
    :func:`estimation.metrics.moments_err.err_cross_moment_chunk`.

    Parameters
    ----------
    theta : ndarray, shape (m, n, G)
    ranking_a, ranking_b : ndarray of int, shape (m, K1) and (m, K2)
    metric : Metric
        Must be ``ERR``.
    """
    if metric.name != "ERR":
        raise ValueError(f"err_cross_moment needs an ERR metric, got {metric}")
    theta = _check_theta(theta, metric)
    ranking_a = _check_ranking(ranking_a, theta, name="ranking_a")[:, : metric.cutoff]
    ranking_b = _check_ranking(ranking_b, theta, name="ranking_b")[:, : metric.cutoff]
    return _err_cross_moment(theta, ranking_a, ranking_b, metric)


def leaderboard_second_moment(
    theta: np.ndarray,
    rankings: np.ndarray,
    metric: Metric,
    references: np.ndarray | None = None,
    *,
    query_weight: np.ndarray | None = None,
) -> np.ndarray:
    """``sum_S E[(L_S - R_S)^2 | x; theta]`` per query, shape (m,).

    The per-query quantity under the square root of the leaderboard sampling distribution
    (k systems, all absolute values; Sawade et al., Lemma 2 with
    ``a(x) = p(x)^2 sum_S E[(L_S - R_S)^2 | x]``).

    Parameters
    ----------
    theta : ndarray, shape (m, n, G)
    rankings : ndarray of int, shape (S, m, K)
    metric : Metric
    references : ndarray, shape (S,), optional
        ``R_S`` per system. By default ``R_theta = sum_x p(x) E[L_S | x; theta]``, computed from
        the same moments (no second pass).
    query_weight : ndarray, shape (m,), optional
        ``p(x)`` for the default references; uniform when omitted. Normalised here.
    """
    rankings = np.asarray(rankings)
    if rankings.ndim != 3:
        raise ValueError(f"rankings must have shape (S, m, K), got {rankings.shape}")
    if references is not None:
        references = np.asarray(references, dtype=float)
        if references.shape != (rankings.shape[0],):
            raise ValueError(f"references must have shape ({rankings.shape[0]},), got {references.shape}")
        if not np.all(np.isfinite(references)):
            raise ValueError("references must be finite")
    theta = _check_theta(theta, metric)
    weight = np.full(theta.shape[0], 1.0 / theta.shape[0])
    if query_weight is not None:
        weight = check_weights(query_weight)
        if weight.shape != (theta.shape[0],):
            raise ValueError(f"query_weight must have shape ({theta.shape[0]},), got {weight.shape}")
        weight = weight / weight.sum()
    total = np.zeros(theta.shape[0])
    for system in range(rankings.shape[0]):
        moments = ranking_moments(theta, rankings[system], metric)
        reference = float(weight @ moments.mean) if references is None else references[system]
        total += moments.second_moment_about(reference)
    return total


def pool_moments(pool: Pool, metric: Metric, system: int | str) -> Moments:
    """:func:`ranking_moments` of one system of a pool (by index or by name)."""
    return ranking_moments(pool.theta, pool.rankings[_system_index(pool, system)], metric)


def pool_difference_moments(pool: Pool, metric: Metric, system_a: int | str, system_b: int | str) -> Moments:
    """:func:`difference_moments` of two systems of a pool (by index or by name)."""
    return difference_moments(
        pool.theta,
        pool.rankings[_system_index(pool, system_a)],
        pool.rankings[_system_index(pool, system_b)],
        metric,
    )


def _dcg_difference_moments(
    theta: np.ndarray, ranking_a: np.ndarray, ranking_b: np.ndarray, metric: Metric
) -> Moments:
    """DCG difference: each item's gain enters with weight ``d(i1(z)) - d(i2(z))``."""
    discount_a = metric.discount_table(ranking_a.shape[1])
    discount_b = metric.discount_table(ranking_b.shape[1])
    table = _statistics_table(metric)
    mean = np.empty(theta.shape[0])
    variance = np.empty(theta.shape[0])
    width = (ranking_a.shape[1] + ranking_b.shape[1]) * theta.shape[2]
    for rows in _chunks(theta.shape[0], width, _GATHER_CELLS):
        stats_a = _position_statistics(theta, ranking_a, rows, table)
        stats_b = _position_statistics(theta, ranking_b, rows, table)
        in_b, in_a = _cross_positions(ranking_a[rows], ranking_b[rows], theta.shape[1])
        # Weight of each item of r1: its discount in r1 minus its discount in r2 (0 if absent);
        # items of r2 that r1 lacks enter with minus their discount in r2.
        weight_a = discount_a - np.where(in_b >= 0, discount_b[np.maximum(in_b, 0)], 0.0)
        weight_b = np.where(in_a >= 0, 0.0, -discount_b)
        mean[rows] = stats_a[:, :, 0] @ discount_a - stats_b[:, :, 0] @ discount_b
        variance[rows] = np.einsum("ck,ck->c", stats_a[:, :, 1], weight_a**2) + np.einsum(
            "ck,ck->c", stats_b[:, :, 1], weight_b**2
        )
    return Moments(mean=mean, variance=variance)


def _err_cross_moment(
    theta: np.ndarray, ranking_a: np.ndarray, ranking_b: np.ndarray, metric: Metric
) -> np.ndarray:
    """E[L1 L2] on validated, cut-off rankings, chunk by chunk."""
    discount_a = metric.discount_table(ranking_a.shape[1])
    discount_b = metric.discount_table(ranking_b.shape[1])
    table = _statistics_table(metric)
    cross = np.empty(theta.shape[0])
    width = (ranking_a.shape[1] + 1) * (ranking_b.shape[1] + 1)
    workspace = np.empty(min(theta.shape[0], max(1, _GRID_CELLS // width)) * width)
    for rows in _chunks(theta.shape[0], width, _GRID_CELLS):
        stats_a = _position_statistics(theta, ranking_a, rows, table)
        stats_b = _position_statistics(theta, ranking_b, rows, table)
        in_b, _ = _cross_positions(ranking_a[rows], ranking_b[rows], theta.shape[1])
        cross[rows] = err_cross_moment_chunk(
            stats_a, discount_a, in_b, stats_b, discount_b, workspace=workspace
        )
    return cross


def _statistics_table(metric: Metric) -> np.ndarray:
    """Per-grade values whose expectations the kernels need, shape (G, k)."""
    if metric.name == "ERR":
        return err_statistics_table(metric.gain_table())
    # DCG: E[g] and E[g^2]; the variance is formed per position after the expectation.
    gain = metric.gain_table()
    return np.stack([gain, gain**2], axis=1)


def _position_statistics(
    theta: np.ndarray, ranking: np.ndarray, rows: slice, table: np.ndarray
) -> np.ndarray:
    """Expectations of the table's columns at each ranked position of a chunk, (c, K, k).

    Gathers only the ranked slots' distributions (unused slots are never read) and validates
    them. An empty position gets the statistics of a certain grade-0 item with zero gain,
    which adds nothing and, for ERR, does not stop the cascade. For DCG the second column is
    turned into the variance of the gain. ``theta`` must be C-contiguous.
    """
    n_queries, n_slots, n_grades = theta.shape
    slots = ranking[rows]
    filled = slots != EMPTY
    flat_rows = np.arange(rows.start, rows.stop)[:, None] * n_slots + np.where(filled, slots, 0)
    distributions = np.take(theta.reshape(n_queries * n_slots, n_grades), flat_rows.reshape(-1), axis=0)
    # One product gives the statistics and, in its last column, each row's total probability.
    checked = distributions @ np.column_stack([table, np.ones(n_grades)])
    _check_gathered(checked[:, -1], distributions, filled, slots, rows.start)
    stats = checked[:, :-1].reshape(slots.shape + (table.shape[1],))
    if table.shape[1] == 2:
        stats[:, :, 1] = np.maximum(stats[:, :, 1] - stats[:, :, 0] ** 2, 0.0)
        # A custom gain table may give grade 0 a non-zero gain; an empty position has none.
        stats[~filled] = 0.0
    else:
        stats[~filled] = table[0]
    return stats


def _cross_positions(slots_a: np.ndarray, slots_b: np.ndarray, n_slots: int) -> tuple[np.ndarray, np.ndarray]:
    """Position in r2 of each item of r1 and in r1 of each item of r2; -1 when absent."""
    chunk = slots_a.shape[0]
    queries = np.arange(chunk)[:, None]
    rank_of = np.full((chunk, n_slots + 1), -1, dtype=np.int64)
    # Empty positions write to the extra column n_slots, reset to -1 before reading.
    rank_of[queries, np.where(slots_b >= 0, slots_b, n_slots)] = np.arange(slots_b.shape[1])
    rank_of[:, n_slots] = -1
    in_b = rank_of[queries, np.where(slots_a >= 0, slots_a, n_slots)]
    rank_of[queries, np.where(slots_b >= 0, slots_b, n_slots)] = -1
    rank_of[queries, np.where(slots_a >= 0, slots_a, n_slots)] = np.arange(slots_a.shape[1])
    rank_of[:, n_slots] = -1
    in_a = rank_of[queries, np.where(slots_b >= 0, slots_b, n_slots)]
    return in_b, in_a


def _chunks(n_queries: int, cells_per_query: int, budget: int) -> Iterator[slice]:
    """Consecutive query slices of at most ``budget`` cells each (at least one query)."""
    size = max(1, budget // max(cells_per_query, 1))
    for start in range(0, n_queries, size):
        yield slice(start, min(start + size, n_queries))


def _check_theta(theta: np.ndarray, metric: Metric) -> np.ndarray:
    """Shape and grade-count checks; per-row checks happen on the ranked rows."""
    if metric.name == "nDCG":
        raise ValueError("exact moments are defined for DCG and ERR; nDCG is reported, not sampled for")
    # Contiguous so that a chunk's ranked rows are one flat `take` away.
    theta = np.ascontiguousarray(theta, dtype=float)
    if theta.ndim != 3:
        raise ValueError(f"theta must have shape (m, n, G), got {theta.shape}")
    if theta.shape[0] == 0 or theta.shape[1] == 0:
        raise ValueError(f"theta must hold at least one query and one slot, got shape {theta.shape}")
    if theta.shape[2] != metric.y_max + 1:
        raise ValueError(
            f"theta has {theta.shape[2]} grades but {metric} with y_max={metric.y_max} "
            f"needs {metric.y_max + 1}"
        )
    return theta


def _check_ranking(ranking: np.ndarray, theta: np.ndarray, *, name: str) -> np.ndarray:
    """A ranking is (m, K), K >= 1, slot indices in 0..n-1 or -1, no slot twice in a row."""
    ranking = np.asarray(ranking)
    m, n, _ = theta.shape
    if ranking.ndim != 2 or ranking.shape[0] != m:
        raise ValueError(f"{name} must have shape ({m}, K), got {ranking.shape}")
    if ranking.shape[1] == 0:
        raise ValueError(f"{name} is empty: it needs at least one position (K >= 1)")
    if not np.issubdtype(ranking.dtype, np.integer):
        raise ValueError(f"{name} must hold integer slot indices, got dtype {ranking.dtype}")
    if ranking.min() < EMPTY or ranking.max() >= n:
        raise ValueError(f"{name} holds slot indices in 0..{n - 1}, or -1 for an empty position")
    ordered = np.sort(ranking, axis=1)
    repeated = (ordered[:, 1:] == ordered[:, :-1]) & (ordered[:, 1:] != EMPTY)
    if np.any(repeated):
        query, column = np.argwhere(repeated)[0]
        raise ValueError(f"{name} ranks slot {int(ordered[query, column])} twice for query {int(query)}")
    return ranking.astype(np.int64, copy=False)


def _check_gathered(
    totals: np.ndarray, distributions: np.ndarray, filled: np.ndarray, slots: np.ndarray, offset: int
) -> None:
    """Each ranked slot's label distribution must be a probability vector.

    ``totals`` (c * K,) are the row sums of ``distributions`` (c * K, G); a NaN or an infinity
    anywhere in a row makes its total non-finite.
    """
    ok = np.isfinite(totals) & (np.abs(totals - 1.0) <= PROBABILITY_TOLERANCE)
    if np.any(distributions < -PROBABILITY_TOLERANCE):
        ok &= distributions.min(axis=1) >= -PROBABILITY_TOLERANCE
    bad = filled & ~ok.reshape(filled.shape)
    if np.any(bad):
        query, position = np.argwhere(bad)[0]
        slot = int(slots[query, position])
        row = distributions[query * filled.shape[1] + position]
        check_probability_rows(row, name=f"theta[query {offset + query}, slot {slot}]")
        raise ValueError(f"theta[query {offset + query}, slot {slot}] is not a probability vector")


def _system_index(pool: Pool, system: int | str) -> int:
    """A system given by its position in the pool or by its name."""
    if isinstance(system, str):
        if system not in pool.system_names:
            raise ValueError(f"unknown system {system!r}; the pool has {list(pool.system_names)}")
        return pool.system_names.index(system)
    index = int(system)
    if not 0 <= index < pool.n_systems:
        raise ValueError(f"system index {index} out of range for a pool of {pool.n_systems} systems")
    return index
