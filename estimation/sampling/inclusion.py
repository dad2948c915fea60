"""Fixed-size draws with known inclusion probabilities, for selections that stay estimable.

`inclusion_probabilities` turns selection weights into first-order inclusion probabilities
``pi_x = min(1, c q_x)`` summing to the sample size n (units capped at 1 are taken for sure);
`systematic_draw` then draws exactly n distinct units with exactly those probabilities
(systematic probability-proportional-to-size sampling over a random order of the units;
Madow 1949, Tillé 2006 §7.2). The Horvitz-Thompson total ``sum_{x in S} y_x / pi_x`` is then
unbiased for ``sum_x y_x`` whatever the y, provided every ``pi_x > 0``.

Two-stage draws (queries, then documents within each drawn query) stay unbiased with the
product ``pi_q pi_{j|q,S}`` even when the second stage's sizes depend on which queries were
drawn: given S, the inner Horvitz-Thompson sum is unbiased for the query's total as long as
every document of a drawn query can be drawn.
"""

from __future__ import annotations

import numpy as np


def mixture_weights(values: np.ndarray, epsilon: float) -> np.ndarray:
    """``q_x = (1 - epsilon) v_x / sum v + epsilon / |U|`` (uniform when ``sum v = 0``), shape of v."""
    values = np.asarray(values, dtype=np.float64)
    if not 0.0 < epsilon <= 1.0:
        raise ValueError(f"epsilon must be in (0, 1], got {epsilon}")
    if values.size == 0:
        return values.copy()
    if np.any(values < 0) or not np.all(np.isfinite(values)):
        raise ValueError("selection values must be finite and >= 0")
    total = values.sum()
    uniform = np.full(values.size, 1.0 / values.size)
    if total <= 0:
        return uniform
    return (1.0 - epsilon) * values / total + epsilon * uniform


def inclusion_probabilities(weights: np.ndarray, size: int) -> np.ndarray:
    """``pi_x = min(1, c w_x)`` with ``sum pi = size``; weights must be > 0. Shape of weights."""
    weights = np.asarray(weights, dtype=np.float64)
    if not 0 <= size <= weights.size:
        raise ValueError(f"cannot draw {size} of {weights.size} units")
    if np.any(weights <= 0):
        raise ValueError("weights must be > 0 (mix in a uniform share)")
    pi = np.zeros(weights.size)
    sure = np.zeros(weights.size, dtype=bool)
    while size > 0:
        rest = ~sure
        remaining = size - int(sure.sum())
        pi[rest] = remaining * weights[rest] / weights[rest].sum()
        over = rest & (pi >= 1.0)
        if not over.any():
            break
        sure |= over
        pi[sure] = 1.0
        if int(sure.sum()) >= size:
            break
    pi[sure] = 1.0
    return np.minimum(pi, 1.0)


def systematic_draw(pi: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Indices of a systematic PPS draw with inclusion probabilities `pi` (sum = integer n).

    The units are put in random order, their probabilities laid end to end on [0, n), and the
    units hit by the points ``u, u + 1, ..., u + n - 1`` (``u ~ U[0, 1)``) are drawn: exactly n
    distinct units, unit x with probability ``pi_x``. Returned in the random order.
    """
    pi = np.asarray(pi, dtype=np.float64)
    size = int(round(pi.sum()))
    if size == 0:
        return np.zeros(0, dtype=np.int64)
    order = rng.permutation(pi.size)
    ends = np.cumsum(pi[order])
    ends *= size / ends[-1]  # remove rounding drift so the last point lands inside
    points = rng.uniform() + np.arange(size)
    hit = np.searchsorted(ends, points, side="right")
    return order[np.unique(np.minimum(hit, pi.size - 1))]


def horvitz_thompson_total(values: np.ndarray, propensity: np.ndarray) -> float:
    """``sum_x y_x / pi_x`` over the drawn units: unbiased for the population total of y.

    With a query-level draw of m units, the same number comes out of
    `estimation.sampling.estimators.query_level_estimate(values, propensity / m, p,
    self_normalised=False)` times ``1 / p`` for uniform ``p``; its interval treats the draws as
    with replacement, which is conservative for a draw without replacement.
    """
    values = np.asarray(values, dtype=np.float64)
    propensity = np.asarray(propensity, dtype=np.float64)
    if values.shape != propensity.shape:
        raise ValueError("values and propensity must have the same shape")
    if np.any(propensity <= 0) or np.any(propensity > 1):
        raise ValueError("propensities must lie in (0, 1]")
    return float(np.sum(values / propensity))
