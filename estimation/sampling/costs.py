"""Labelling costs: per document, per query, and a cost model fitted to assessor timings.

Sawade et al. (2013, Sect. 5) model the cost of labelling one document as logarithmic in its
length and the cost ``lambda(x)`` of a query as the sum over the documents that must be
labelled for it; the cost unit is chosen so that the average query costs one.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from estimation._checks import check_costs, check_systems
from estimation.sampling.pool import EMPTY, Pool

SECONDS_PER_HOUR = 3600.0
MIN_POINTS_FOR_FIT = 3
BUDGET_RTOL = 1e-9
"""Relative tolerance of `fits_budget`: far above the rounding of a sum of costs (about
1e-16 per addition), far below any cost a campaign can buy."""


def fits_budget(cost: float | np.ndarray, budget: float | np.ndarray) -> bool | np.ndarray:
    """Whether spending ``cost`` stays within ``budget``, up to floating-point rounding.

    Costs are sums of floats (normalised query costs, hours from a cost model), so a budget
    of exactly N units of cost can compare as a hair smaller than the N costs it should buy.
    Every comparison of a budget with a sum of costs goes through this function:
    ``cost <= budget + BUDGET_RTOL * max(|budget|, |cost|, 1)``.

    Parameters
    ----------
    cost, budget : float or ndarray
        Broadcast together; ``budget`` may be ``inf`` (no budget).

    Returns
    -------
    bool or ndarray of bool
    """
    cost_array = np.asarray(cost, dtype=float)
    budget_array = np.asarray(budget, dtype=float)
    with np.errstate(invalid="ignore"):
        scale = np.maximum(np.maximum(np.abs(budget_array), np.abs(cost_array)), 1.0)
        fits = cost_array <= budget_array + BUDGET_RTOL * scale
    return bool(fits) if fits.ndim == 0 else fits


def item_costs_from_lengths(
    lengths: np.ndarray | Sequence[float], a: float = 0.0, b: float = 1.0
) -> np.ndarray:
    """Cost of labelling each document from its length: ``c(z) = a + b * log(1 + length(z))``.

    Sawade et al. (2013, Sect. 5): "labeling costs for a single document z are assumed to be
    logarithmic in the document length".

    Parameters
    ----------
    lengths : array_like, any shape
        Document lengths (e.g. in words); finite and >= 0.
    a, b : float
        Intercept (a fixed cost per document, e.g. reading the title) and slope.

    Returns
    -------
    ndarray, same shape as ``lengths``
        The costs, all >= 0.

    Raises
    ------
    ValueError
        On a negative or non-finite length, or when ``a`` and ``b`` make some cost negative.
    """
    lengths = np.asarray(lengths, dtype=float)
    if not np.all(np.isfinite(lengths)):
        raise ValueError("document lengths must be finite")
    if np.any(lengths < 0):
        raise ValueError(f"document lengths must be >= 0, found {float(lengths.min()):.6g}")
    if not (np.isfinite(a) and np.isfinite(b)):
        raise ValueError(f"cost parameters must be finite, got a={a!r}, b={b!r}")
    costs = a + b * np.log1p(lengths)
    return check_costs(costs, name=f"item costs (a={a:.6g}, b={b:.6g})")


def query_costs(
    pool: Pool,
    systems: Sequence[int] | None = None,
    *,
    cutoff: int | None = None,
    normalize: bool = True,
) -> np.ndarray:
    """Cost ``lambda(x)`` of labelling each query: the summed item costs of the union of rankings.

    A query costs the sum of ``c(z)`` over the distinct items that the chosen systems rank in
    their top ``cutoff`` positions for it (Sawade et al. 2013, Sect. 2 and 5): to compute the
    metric of every chosen system, or their difference, each of those items needs a label, and
    an item ranked by two systems is labelled once.

    Parameters
    ----------
    pool : Pool
    systems : sequence of int, optional
        Indices into ``pool.rankings``; default all systems of the pool.
    cutoff : int, optional
        Only the first ``cutoff`` positions count (e.g. the metric's K); default the pool's
        ranking depth.
    normalize : bool
        If True (the default), divide every cost by the p-weighted mean cost
        ``sum_x p(x) lambda(x)``, so that a query drawn from the test distribution p costs one
        unit on average (the papers' cost unit; with uniform p this is the plain mean over the
        pool's queries). Only the scale changes: ratios between queries, and hence every
        sampling distribution, stay the same. Equal costs normalise to exactly 1.0 (not
        1.0000000000000002), so that a budget of N buys N such queries. If False, return the
        raw sums in the item-cost unit.

    Returns
    -------
    ndarray, shape (m,)

    Raises
    ------
    ValueError
        On an unknown system index or cutoff < 1, or when normalising costs that are all zero.
    """
    chosen = check_systems(pool.n_systems, systems)
    depth = pool.cutoff if cutoff is None else int(cutoff)
    if depth < 1:
        raise ValueError(f"cutoff must be >= 1, got {depth}")
    needed = needed_slots(pool, chosen, cutoff=depth)
    raw = np.where(needed, pool.item_cost, 0.0).sum(axis=1)
    if not normalize:
        return raw
    return normalised_costs(raw, pool.query_weight)


def normalised_costs(raw: np.ndarray, query_weight: np.ndarray) -> np.ndarray:
    """Costs divided by their p-weighted mean ``sum_x p(x) raw(x) / sum_x p(x)``, without drift.

    The mean of equal costs computed as ``p @ raw`` is off by an ulp (50 queries of cost 5
    give 1.0000000000000002 each), and a budget of N then buys N - 1 queries. When every
    query with ``p(x) > 0`` costs the same, that cost is the mean exactly; otherwise the mean
    is summed exactly (`math.fsum`) before the one division.

    Parameters
    ----------
    raw : ndarray, shape (m,)
        Costs >= 0.
    query_weight : ndarray, shape (m,)
        p(x) >= 0, not all zero.

    Raises
    ------
    ValueError
        When every query with p(x) > 0 costs 0.
    """
    raw = np.asarray(raw, dtype=float)
    weight = np.asarray(query_weight, dtype=float)
    support = raw[weight > 0]
    if support.size and np.all(support == support[0]):
        mean_cost = float(support[0])
    else:
        mean_cost = math.fsum((weight * raw).tolist()) / math.fsum(weight.tolist())
    if mean_cost <= 0:
        raise ValueError("cannot normalise query costs: every query with p(x) > 0 costs 0")
    return raw / mean_cost


def needed_slots(pool: Pool, systems: Sequence[int], *, cutoff: int | None = None) -> np.ndarray:
    """Which slots must be labelled to evaluate the given systems at the cutoff, shape (m, n)."""
    depth = pool.cutoff if cutoff is None else min(int(cutoff), pool.cutoff)
    rankings = pool.rankings[np.asarray(list(systems), dtype=np.int64), :, :depth]
    needed = np.zeros((pool.n_queries, pool.n_slots + 1), dtype=bool)
    # Empty positions (-1) land in the extra last column, which is dropped below.
    slots = np.where(rankings == EMPTY, pool.n_slots, rankings)
    queries = np.broadcast_to(np.arange(pool.n_queries)[None, :, None], slots.shape)
    needed[queries.ravel(), slots.ravel()] = True
    return needed[:, :-1]


@dataclass(frozen=True)
class CostModel:
    """Seconds an assessor needs to label one document: ``a + b * log(1 + length)``.

    Attributes
    ----------
    a : float
        Seconds per document regardless of its length (>= 0).
    b : float
        Seconds per unit of ``log(1 + length)`` (>= 0).
    n_points : int
        Number of timed judgments the fit used.
    rmse : float
        Root mean squared residual of the fit, in seconds.
    r_squared : float
        Share of the variance in the timings the model explains (nan if the timings are constant).
    intercept_clipped : bool
        True if the unconstrained fit had a < 0 and the model was refitted through the origin.
    """

    a: float
    b: float
    n_points: int
    rmse: float
    r_squared: float
    intercept_clipped: bool = False

    def seconds(self, lengths: np.ndarray | Sequence[float]) -> np.ndarray:
        """Predicted seconds to label documents of the given lengths."""
        return item_costs_from_lengths(lengths, a=self.a, b=self.b)

    def hours(self, lengths: np.ndarray | Sequence[float]) -> np.ndarray:
        """Predicted assessor-hours, so that a budget can be stated in hours."""
        return self.seconds(lengths) / SECONDS_PER_HOUR


def fit_cost_model(lengths: np.ndarray | Sequence[float], seconds: np.ndarray | Sequence[float]) -> CostModel:
    """Fit ``seconds = a + b * log(1 + length)`` by least squares to timed judgments.

    The model is Sawade et al.'s (2013, Sect. 5) logarithmic document cost with an intercept for
    the fixed overhead of each judgment; fitted to the time assessors actually spent, it turns a
    budget in assessor-hours into the cost units of the sampling distributions.

    Parameters
    ----------
    lengths : array_like, shape (N,)
        Length of each judged document (finite, >= 0).
    seconds : array_like, shape (N,)
        Time spent on each judgment (finite, >= 0).

    Returns
    -------
    CostModel

    Raises
    ------
    ValueError
        With fewer than 3 points, lengths that are all equal (the slope is not identifiable),
        negative or non-finite inputs, or a fitted slope b < 0 (longer documents would be
        cheaper: the timings do not support a length-based model; use constant costs).
        A negative intercept is not an error: the model is refitted through the origin
        (``a = 0``) and ``intercept_clipped`` is set, so that no predicted cost is negative.
    """
    lengths = np.asarray(lengths, dtype=float)
    seconds = np.asarray(seconds, dtype=float)
    if lengths.ndim != 1 or lengths.shape != seconds.shape:
        raise ValueError(
            f"lengths and seconds must be 1-D of equal length, got {lengths.shape} and {seconds.shape}"
        )
    if lengths.size < MIN_POINTS_FOR_FIT:
        raise ValueError(
            f"fitting a cost model needs at least {MIN_POINTS_FOR_FIT} timed judgments, got {lengths.size}"
        )
    if not (np.all(np.isfinite(lengths)) and np.all(np.isfinite(seconds))):
        raise ValueError("lengths and seconds must be finite")
    if np.any(lengths < 0) or np.any(seconds < 0):
        raise ValueError("lengths and seconds must be >= 0")
    x = np.log1p(lengths)
    if np.ptp(x) == 0:
        raise ValueError("all documents have the same length: the cost model's slope is not identifiable")
    x_centred = x - x.mean()
    b = float(x_centred @ (seconds - seconds.mean()) / (x_centred @ x_centred))
    a = float(seconds.mean() - b * x.mean())
    if b < 0:
        raise ValueError(
            f"fitted slope b = {b:.6g} < 0: longer documents would take less time; "
            "the timings do not support a length-based cost model (use constant costs)"
        )
    clipped = a < 0
    if clipped:
        a = 0.0
        b = float(x @ seconds / (x @ x))
    residuals = seconds - (a + b * x)
    total = float(((seconds - seconds.mean()) ** 2).sum())
    r_squared = 1.0 - float(residuals @ residuals) / total if total > 0 else float("nan")
    return CostModel(
        a=a,
        b=b,
        n_points=int(lengths.size),
        rmse=float(np.sqrt(np.mean(residuals**2))),
        r_squared=r_squared,
        intercept_clipped=clipped,
    )
