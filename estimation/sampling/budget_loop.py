"""The budget loop of Sawade et al. (2013, Algorithm 1), one draw at a time.

One loop serves both sampling units: queries (query level) and (query, item) pairs (item
level, Schnabel et al. 2016); `estimation.simulation.loop` runs it against an oracle.

The stopping rule, precisely (shared with the batch paths in `estimation.simulation.batch`,
which reproduce it draw for draw):

1. Before each draw, if ``max_draws`` draws were taken, stop (``"max_draws"``).
2. With a budget: if every unit the current distribution can draw (``q > 0``) is already
   labelled, stop (``"pool_exhausted"``): the remaining budget cannot buy anything, and
   further draws would be free repeats.
3. Draw ``x_j ~ q_j``. A unit drawn before costs nothing (its label is reused) but still
   counts as a draw. If the new cost would take the spending above the budget (compared by
   `estimation.sampling.costs.fits_budget`, which forgives rounding), that draw is *not* taken and
   the loop ends (``"budget"``). Sawade et al. continue "until the budget is exhausted";
   skipping an unaffordable draw and continuing would instead favour cheap units and bias
   the sample, so the loop ends at the first unaffordable draw.

Hence ``spent <= budget`` always (up to rounding), and the number of draws is a stopping time.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from estimation._checks import PROBABILITY_TOLERANCE, check_budget
from estimation.sampling.costs import fits_budget
from estimation.sampling.results import SamplingDistribution

StopReason = str  # "budget", "pool_exhausted" or "max_draws"


@dataclass(frozen=True, eq=False)
class LoopState:
    """What an adaptive sampling distribution sees before the next draw (read-only arrays).

    Attributes
    ----------
    draws : ndarray of int, shape (j,)
        Units drawn so far (query indices; flat pair indices ``x * n + z`` at item level).
    values : ndarray, shape (j,)
        Their labels (``L`` or ``delta`` per query; ``u`` per pair).
    propensities : ndarray, shape (j,)
        The probability with which each draw picked its unit.
    judged : ndarray of bool, shape (n_units,)
        Which units are labelled.
    spent : float
        Cost units spent so far.
    """

    draws: np.ndarray
    values: np.ndarray
    propensities: np.ndarray
    judged: np.ndarray
    spent: float


DistributionLike = np.ndarray | SamplingDistribution
AdaptiveDistribution = Callable[[LoopState], DistributionLike]


@dataclass(frozen=True, eq=False)
class LoopRun:
    """Everything one run of the loop drew and spent (see `budget_loop`)."""

    draws: np.ndarray
    values: np.ndarray
    propensities: np.ndarray
    n_judged: int
    spent: float
    stop_reason: StopReason


def budget_loop(
    *,
    n_units: int,
    unit_cost: np.ndarray,
    distribution: DistributionLike | AdaptiveDistribution,
    oracle: Callable[[int], float],
    budget: float | None,
    max_draws: int | None,
    rng: np.random.Generator,
) -> LoopRun:
    """Draw units until the stopping rule of the module docstring ends the run.

    Parameters
    ----------
    n_units : int
        Number of units (queries, or flattened (query, slot) pairs).
    unit_cost : ndarray, shape (n_units,)
        Cost of labelling each unit, paid at its first draw only.
    distribution : ndarray, SamplingDistribution, or callable
        A fixed ``q`` over the units, or ``distribution(state: LoopState) -> q`` called
        before every draw (adaptive sampling).
    oracle : callable
        ``oracle(unit) -> label``, called once per distinct unit.
    budget : float or None
    max_draws : int or None
        At least one of the two.
    rng : numpy.random.Generator
        One uniform per attempted draw, through `draw_units`.
    """
    if budget is None and max_draws is None:
        raise ValueError("give a budget, max_draws (n_draws), or both; otherwise the loop never ends")
    if budget is not None:
        budget = check_budget(budget)
    if max_draws is not None and (int(max_draws) != max_draws or max_draws < 1):
        raise ValueError(f"max_draws must be a positive integer, got {max_draws!r}")
    fixed_q = None if callable(distribution) else checked_distribution(distribution, n_units)
    judged = np.zeros(n_units, dtype=bool)
    labels = np.full(n_units, np.nan)
    capacity = 64 if max_draws is None else min(int(max_draws), 4096)
    draws = np.zeros(capacity, dtype=np.int64)
    values = np.zeros(capacity)
    propensities = np.zeros(capacity)
    n_taken, spent, stop_reason = 0, 0.0, "max_draws"
    while max_draws is None or n_taken < max_draws:
        if callable(distribution):
            state = LoopState(
                draws=_read_only(draws[:n_taken]),
                values=_read_only(values[:n_taken]),
                propensities=_read_only(propensities[:n_taken]),
                judged=_read_only(judged.copy()),
                spent=spent,
            )
            q = checked_distribution(distribution(state), n_units)
        else:
            assert fixed_q is not None  # checked above, for every distribution that is not a callable
            q = fixed_q
        if budget is not None and np.all(judged[q > 0]):
            stop_reason = "pool_exhausted"
            break
        unit = int(draw_units(q, rng.random()))
        new_cost = 0.0 if judged[unit] else float(unit_cost[unit])
        if budget is not None and not fits_budget(spent + new_cost, budget):
            stop_reason = "budget"
            break
        if not judged[unit]:
            judged[unit] = True
            spent += new_cost
            labels[unit] = _checked_label(oracle(unit), unit)
        if n_taken == draws.size:
            draws, values, propensities = (
                np.concatenate([a, np.zeros_like(a)]) for a in (draws, values, propensities)
            )
        draws[n_taken], values[n_taken], propensities[n_taken] = unit, labels[unit], q[unit]
        n_taken += 1
    return LoopRun(
        draws=draws[:n_taken].copy(),
        values=values[:n_taken].copy(),
        propensities=propensities[:n_taken].copy(),
        n_judged=int(judged.sum()),
        spent=spent,
        stop_reason=stop_reason,
    )


def draw_units(q: np.ndarray, uniforms: np.ndarray | float) -> np.ndarray:
    """Inverse-CDF sampling: the unit whose CDF interval holds each uniform in [0, 1).

    Units with ``q = 0`` have an empty interval and are never drawn. Both the loop and the
    batch paths draw through this function, so equal uniforms give equal draws.
    """
    cdf = np.cumsum(q)
    units = np.searchsorted(cdf, np.asarray(uniforms) * cdf[-1], side="right")
    # Rounding can put u * total at or past the last CDF value: fall back to the last
    # unit that can be drawn.
    return np.minimum(units, np.flatnonzero(q > 0)[-1])


def checked_distribution(distribution: DistributionLike, n_units: int) -> np.ndarray:
    """A sampling distribution as a flat float array of ``n_units`` probabilities summing to 1."""
    q = distribution.q if isinstance(distribution, SamplingDistribution) else distribution
    q = np.asarray(q, dtype=float).ravel()
    if q.size != n_units:
        raise ValueError(f"the sampling distribution has {q.size} entries, expected {n_units}")
    if not np.all(np.isfinite(q)) or np.any(q < 0):
        raise ValueError("the sampling distribution must be finite and non-negative")
    total = q.sum()
    if abs(total - 1.0) > PROBABILITY_TOLERANCE:
        raise ValueError(f"the sampling distribution sums to {total:.6g}, not 1")
    return q / total


def _checked_label(label: float, unit: int) -> float:
    label = float(label)
    if not np.isfinite(label):
        raise ValueError(f"the oracle returned {label!r} for unit {unit}")
    return label


def _read_only(array: np.ndarray) -> np.ndarray:
    view = array.view()
    view.flags.writeable = False
    return view
