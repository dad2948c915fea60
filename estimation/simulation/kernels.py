"""Array kernels behind `estimation.simulation.batch`: the stopping rule and the reductions.

The stopping rule is the one of `estimation.sampling.budget_loop`, applied to a matrix of pre-drawn
units (one row per repetition).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from estimation.sampling.budget_loop import draw_units
from estimation.sampling.costs import fits_budget

# Repetitions are processed in chunks so that one chunk's (rows, draws, quantities) array
# stays near this many elements.
_CHUNK_ELEMENTS = 4_000_000
# A chunk whose draw matrix grows past this many elements without every run stopping is
# almost surely chasing near-zero probabilities to exhaust the pool: fail instead of
# exhausting memory.
_RUNAWAY_ELEMENTS = 25_000_000


def stop_counts(
    draws: np.ndarray,
    unit_cost: np.ndarray,
    n_drawable: int,
    budget: float,
    max_draws: int | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Apply the loop's stopping rule to pre-drawn units, row by row.

    Parameters
    ----------
    draws : ndarray of int, shape (R, N)
        Units drawn in order, one row per run.
    unit_cost : ndarray, shape (n_units,)
        Cost of labelling each unit (paid at its first draw only).
    n_drawable : int
        Number of units with ``q > 0`` (the pool is exhausted once all are labelled).
    budget : float
        ``inf`` for no budget (then neither the budget nor exhaustion stops a run).
    max_draws : int, optional

    Returns
    -------
    n_draws : ndarray of int, shape (R,)
        Draws taken per run.
    decided : ndarray of bool, shape (R,)
        False where the run had not stopped within the ``N`` columns (draw more).
    n_judged : ndarray of int, shape (R,)
        Distinct units among the taken draws.
    spent : ndarray, shape (R,)
        Their cost.
    """
    n_rows, n_columns = draws.shape
    first = first_occurrences(draws)
    cumulative_cost = np.cumsum(np.where(first, unit_cost[draws], 0.0), axis=1)
    limit = np.full(n_rows, n_columns + 1, dtype=np.int64)
    if np.isfinite(budget):
        over = np.asarray(~fits_budget(cumulative_cost, budget))
        limit = np.where(over.any(axis=1), over.argmax(axis=1), limit)
        exhausted = np.cumsum(first, axis=1) >= n_drawable
        limit = np.minimum(limit, np.where(exhausted.any(axis=1), exhausted.argmax(axis=1) + 1, limit))
    if max_draws is not None:
        limit = np.minimum(limit, max_draws)
    decided = limit <= n_columns
    n_draws = np.minimum(limit, n_columns)
    taken = np.arange(n_columns)[None, :] < n_draws[:, None]
    n_judged = np.sum(first & taken, axis=1)
    spent = np.where(n_draws > 0, cumulative_cost[np.arange(n_rows), np.maximum(n_draws - 1, 0)], 0.0)
    return n_draws, decided, n_judged, spent


def first_occurrences(draws: np.ndarray) -> np.ndarray:
    """Boolean mask, shape (R, N): True where a unit appears for the first time in its row."""
    order = np.argsort(draws, axis=1, kind="stable")
    ordered = np.take_along_axis(draws, order, axis=1)
    first_sorted = np.ones_like(ordered, dtype=bool)
    first_sorted[:, 1:] = ordered[:, 1:] != ordered[:, :-1]
    first = np.empty_like(first_sorted)
    np.put_along_axis(first, order, first_sorted, axis=1)
    return first


def run_batches(
    *,
    q: np.ndarray,
    unit_cost: np.ndarray,
    budgets: np.ndarray,
    n_repetitions: int,
    max_draws: int | None,
    rng: np.random.Generator,
    reduce: Callable[[np.ndarray, np.ndarray], tuple[np.ndarray, ...]],
    width: int,
) -> tuple[tuple[np.ndarray, ...], np.ndarray, np.ndarray, np.ndarray]:
    """Draw, stop and reduce chunk by chunk.

    Parameters
    ----------
    q : ndarray, shape (n_units,)
        The fixed sampling distribution (sums to 1).
    unit_cost : ndarray, shape (n_units,)
    budgets : ndarray, shape (B,)
        ``inf`` for no budget.
    n_repetitions : int
    max_draws : int or None
    rng : numpy.random.Generator
        Uniforms are drawn row-major, chunk by chunk, one per draw.
    reduce : callable
        ``reduce(draws (R, N), n_draws (R,)) -> tuple of (R, width) statistics``.
    width : int
        Quantities per run, only to size the chunks.

    Returns
    -------
    statistics : tuple of ndarray, each (B, R, width)
    n_draws, n_judged, spent : ndarray, each (B, R)
    """
    if int(n_repetitions) != n_repetitions or n_repetitions < 1:
        raise ValueError(f"n_repetitions must be a positive integer, got {n_repetitions!r}")
    if max_draws is not None and (int(max_draws) != max_draws or max_draws < 1):
        raise ValueError(f"max_draws must be a positive integer, got {max_draws!r}")
    n_drawable = int(np.count_nonzero(q))
    largest = float(np.max(budgets))
    # A new unit costs about q @ cost on average and repeats are free: start a little above
    # budget / (q @ cost) columns; rows that have not stopped get more.
    mean_cost = float(q @ unit_cost)
    if np.isfinite(largest) and mean_cost > 0:
        initial_columns = int(np.ceil(1.5 * largest / mean_cost)) + 32
    else:
        initial_columns = 256
    if max_draws is not None:
        initial_columns = min(initial_columns, int(max_draws)) if np.isfinite(largest) else int(max_draws)
    chunk = max(1, min(int(n_repetitions), _CHUNK_ELEMENTS // (initial_columns * width)))
    results = []
    for start in range(0, int(n_repetitions), chunk):
        rows = min(chunk, int(n_repetitions) - start)
        draws = draw_units(q, rng.random((rows, initial_columns)))
        while True:
            counts = [stop_counts(draws, unit_cost, n_drawable, budget, max_draws) for budget in budgets]
            if all(decided.all() for _, decided, _, _ in counts):
                break
            if draws.size > _RUNAWAY_ELEMENTS:
                raise ValueError(
                    f"runs have not stopped after {draws.shape[1]} draws (the budget exceeds what the "
                    "likely units cost, and exhausting the pool needs the rare ones too); set max_draws"
                )
            extra = draws.shape[1]
            if max_draws is not None:
                extra = min(extra, int(max_draws) - draws.shape[1])
            draws = np.concatenate([draws, draw_units(q, rng.random((rows, extra)))], axis=1)
        # Reduce only the columns some run took: small budgets need few.
        per_budget = [
            (reduce(draws[:, : max(int(n_draws.max()), 1)], n_draws), n_draws, n_judged, spent)
            for n_draws, _, n_judged, spent in counts
        ]
        results.append(per_budget)
    n_budgets = len(budgets)
    n_stats = len(results[0][0][0])
    stats = tuple(
        np.stack(
            [np.concatenate([chunk_result[b][0][s] for chunk_result in results]) for b in range(n_budgets)]
        )
        for s in range(n_stats)
    )
    counters = tuple(
        np.stack([np.concatenate([chunk_result[b][i] for chunk_result in results]) for b in range(n_budgets)])
        for i in (1, 2, 3)
    )
    return stats, counters[0], counters[1], counters[2]


def query_level_reduce(
    draws: np.ndarray,
    n_draws: np.ndarray,
    columns: np.ndarray,
    importance_weight: np.ndarray,
    *,
    self_normalised: bool,
) -> tuple[np.ndarray, np.ndarray]:
    """Sawade et al. (2013): self-normalised (or plain) IS estimate and its standard error per row."""
    n_columns = draws.shape[1]
    taken = np.arange(n_columns)[None, :] < n_draws[:, None]
    weights = np.where(taken, importance_weight[draws], 0.0)  # (R, N)
    values = columns[draws]  # (R, N, k)
    count = n_draws[:, None].astype(float)
    with np.errstate(divide="ignore", invalid="ignore"):
        if self_normalised:
            total = weights.sum(axis=1)[:, None]
            estimates = np.einsum("rn,rnk->rk", weights, values) / total
            residual = values - estimates[:, None, :]
            # The delta-method variance times n / (n - 1), as in `query_level_estimate`.
            variance = np.einsum("rn,rnk->rk", weights**2, residual**2) / total**2 * count / (count - 1.0)
        else:
            terms = weights[:, :, None] * values
            estimates = terms.sum(axis=1) / count
            residual = np.where(taken[:, :, None], terms - estimates[:, None, :], 0.0)
            variance = (residual**2).sum(axis=1) / (count - 1.0) / count
    estimates = np.where(count > 0, estimates, np.nan)
    standard_errors = np.where(count > 1, np.sqrt(np.maximum(variance, 0.0)), np.nan)
    return estimates, standard_errors


def mean_reduce(
    draws: np.ndarray, n_draws: np.ndarray, terms: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Schnabel et al. (2016), eq. (4) and (16): mean of ``u P / Q``, sample variance, standard error."""
    taken = np.arange(draws.shape[1])[None, :] < n_draws[:, None]
    values = np.where(taken[:, :, None], terms[draws], 0.0)  # (R, N, S)
    count = n_draws[:, None].astype(float)
    with np.errstate(divide="ignore", invalid="ignore"):
        estimates = values.sum(axis=1) / count
        residual = np.where(taken[:, :, None], values - estimates[:, None, :], 0.0)
        sample_variances = (residual**2).sum(axis=1) / (count - 1.0)
        standard_errors = np.sqrt(sample_variances / count)
    estimates = np.where(count > 0, estimates, np.nan)
    sample_variances = np.where(count > 1, sample_variances, np.nan)
    standard_errors = np.where(count > 1, standard_errors, np.nan)
    return estimates, standard_errors, sample_variances
