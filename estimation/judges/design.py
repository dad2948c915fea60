"""Where to spend human labels when a judge labelled the pool, and the certified estimate.

Pool items i carry a target weight a_i (for DCG@K of system s, ``p(x) / log2(1 + rank)`` within
the top K, else 0; a difference uses a(s1) - a(s2)), a judge class f_i and an unknown human
gain G(y_i). With h and sigma from a calibration fixed before the draws:

    q_i = (1 - eps) |a_i| sigma(f_i) / sqrt(c_i) / Z  +  eps w_i / Z'

(w_i the no-model importance weight, e.g. the summed |a_i(s)| of the target systems: the safety
share keeps q > 0 wherever some target ranks the item, and bounds the loss when the
calibration is wrong), and for n draws I_1..I_n i.i.d. from q:

    theta_hat = (1/n) sum_k T_k,   T_k = sum_i a_i h(f_i) + a_{I_k} (G(y_{I_k}) - h(f_{I_k})) / q_{I_k}

unbiased for theta = sum_i a_i G(y_i) whatever h is (h only moves variance), with the Student
interval theta_hat +- t_{n-1} s_T / sqrt(n). Each T_k may use its own h and q (the ones current
when it was drawn): the T_k are then martingale differences around theta and the mean stays
unbiased; a two-stage design (internal calibration) combines its stages with
`two_stage_estimate`.
"""

from __future__ import annotations

import numpy as np

from estimation.sampling.intervals import check_confidence, t_interval
from estimation.sampling.results import Estimate, SamplingDistribution

DEFAULT_SAFETY_SHARE = 0.2
"""eps: the share of the no-model design in q."""


def judged_distribution(
    importance: np.ndarray,
    sigma: np.ndarray,
    no_model_weight: np.ndarray,
    *,
    safety_share: float = DEFAULT_SAFETY_SHARE,
    cost: np.ndarray | None = None,
) -> SamplingDistribution:
    """q = (1 - eps) |a| sigma / sqrt(c) / Z + eps w / Z' over the pool's items.

    Parameters
    ----------
    importance : ndarray, any shape
        |a_i| (several targets: the sum of their |a_i|), >= 0.
    sigma : ndarray, same shape
        sigma(f_i) from the calibration, >= 0.
    no_model_weight : ndarray, same shape
        w_i >= 0, positive on every item some target can need.
    safety_share : float
        eps in (0, 1]; 0.2 by default. 0 is refused: an item with q = 0 biases the estimate.
    cost : ndarray, same shape, optional
        Cost of a human label per item (> 0 where w > 0); default 1.

    Returns
    -------
    SamplingDistribution
        ``q`` (sums to 1, > 0 wherever w > 0), ``optimal`` (the |a| sigma part, normalised; w's
        when that part is zero everywhere), ``mix`` = eps.
    """
    importance = np.asarray(importance, dtype=float)
    sigma = np.asarray(sigma, dtype=float)
    weight = np.asarray(no_model_weight, dtype=float)
    if importance.shape != sigma.shape or weight.shape != importance.shape:
        raise ValueError("importance, sigma and no_model_weight must have one shape")
    for name, values in (("importance", importance), ("sigma", sigma), ("no_model_weight", weight)):
        if not np.all(np.isfinite(values)) or np.any(values < 0):
            raise ValueError(f"{name} must be finite and >= 0")
    if not 0 < safety_share <= 1:
        raise ValueError(f"safety_share must lie in (0, 1], got {safety_share}")
    if weight.sum() <= 0:
        raise ValueError("no item has a positive no-model weight: nothing to sample")
    scale = np.ones_like(weight)
    if cost is not None:
        cost = np.asarray(cost, dtype=float)
        if cost.shape != weight.shape or np.any(cost[weight > 0] <= 0) or not np.all(np.isfinite(cost)):
            raise ValueError("cost must be finite and > 0 on every item with a positive weight")
        scale = np.where(weight > 0, 1.0 / np.sqrt(np.where(cost > 0, cost, 1.0)), 0.0)
    floor = weight / weight.sum()
    optimal = np.where(weight > 0, importance * sigma * scale, 0.0)
    total = optimal.sum()
    optimal = optimal / total if total > 0 else floor
    q = (1.0 - safety_share) * optimal + safety_share * floor
    return SamplingDistribution(q=q / q.sum(), optimal=optimal, mix=safety_share, cost=cost)


def judged_parts(
    offset: float | np.ndarray,
    target_weight: np.ndarray,
    human_gain: np.ndarray,
    control: np.ndarray,
    propensity: np.ndarray,
) -> tuple[np.ndarray, np.ndarray]:
    """(Y, X) per draw for `tuned_terms`: Y = a G / q, X = a h / q - offset (arguments as
    `judged_terms`, whose T is Y - X)."""
    propensity = np.asarray(propensity, dtype=float)
    if np.any(~(propensity > 0)) or np.any(propensity > 1):
        raise ValueError("propensities must lie in (0, 1]")
    weight = np.asarray(target_weight, dtype=float) / propensity
    plain = weight * np.asarray(human_gain, dtype=float)
    return plain, weight * np.asarray(control, dtype=float) - np.asarray(offset)


def judged_terms(
    offset: float | np.ndarray,
    target_weight: np.ndarray,
    human_gain: np.ndarray,
    control: np.ndarray,
    propensity: np.ndarray,
) -> np.ndarray:
    """T_k = offset_k + a_k (G(y_k) - h_k) / q_k per draw (broadcasts over a trailing target axis).

    Parameters
    ----------
    offset : float or ndarray
        ``sum_i a_i h(f_i)`` under the calibration the draw was made with.
    target_weight : ndarray, shape (n[, S])
        a of the drawn item.
    human_gain : ndarray, shape (n[, 1])
        G(y) of its human label (several assessors: their mean gain).
    control : ndarray, shape (n[, 1])
        h(f) of the drawn item under the draw's calibration.
    propensity : ndarray, shape (n[, 1])
        q of the drawn item when it was drawn, in (0, 1].
    """
    propensity = np.asarray(propensity, dtype=float)
    if np.any(~(propensity > 0)) or np.any(propensity > 1):
        raise ValueError("propensities must lie in (0, 1]")
    return (
        np.asarray(offset)
        + np.asarray(target_weight)
        * (np.asarray(human_gain, dtype=float) - np.asarray(control, dtype=float))
        / propensity
    )


MIN_TUNING_DRAWS = 3
"""Draws before the control variate's weight is fitted; until then it is 1 (the calibration as
fitted). Measured on seeded campaigns of 60 draws: starting at 0 for 10 draws lost a good
judge's gain (variance 0.16 of plain sampling instead of 0.008); 1 for 3 draws keeps it (0.009)
and a misleading judge still costs less than plain sampling (0.92, untuned 4.4)."""


def tuned_terms(plain: np.ndarray, control: np.ndarray, *, warmup: int = MIN_TUNING_DRAWS) -> np.ndarray:
    """T_k = Y_k - lambda_k X_k, with lambda_k fitted on the draws before k (power tuning).

    ``Y_k = a G(y) / q`` is the plain importance-sampling term of draw k and
    ``X_k = a h(f) / q - sum_i a_i h(f_i)`` its control, zero-mean under the draw's q. The
    weight minimising the variance is Cov(Y, X) / Var(X) (PPI++'s power tuning, Angelopoulos et
    al. 2023); fitted on the earlier draws only, it is fixed before draw k is made, so every
    term keeps expectation theta whatever the judge (a martingale difference, as the per-version
    h is). It is clipped to [0, 1]: 1 is the untuned estimator, 0 plain importance sampling, so a
    judge whose calibration misleads on the items the design draws (h fitted on other topics, or
    constant for a difference) costs at most the fitting noise instead of the variance it adds.

    Parameters
    ----------
    plain, control : ndarray, shape (n,) or (n, S)
        Y and X per draw, in the order the draws were made (S targets tuned separately).
    warmup : int
        Draws with a control (X != 0) before the first fitted weight (weight 1 until then).
    """
    plain = np.asarray(plain, dtype=float)
    control = np.asarray(control, dtype=float)
    if plain.shape != control.shape:
        raise ValueError("plain and control must have one shape")
    # Only draws whose control is on (X != 0: drawn with a calibration) say how Y follows X; the
    # draws of a first stage without a calibration would otherwise hold the weight at its start.
    active = (control != 0).astype(float)
    count = _sums_before(active)
    sum_x, sum_y = _sums_before(control), _sums_before(plain * active)
    sum_xx, sum_xy = _sums_before(control * control), _sums_before(control * plain)
    with np.errstate(invalid="ignore", divide="ignore"):
        covariance = sum_xy - sum_x * sum_y / count
        variance = sum_xx - sum_x * sum_x / count
        weight = np.where((count >= warmup) & (variance > 1e-12), covariance / variance, 1.0)
    weight = np.clip(np.nan_to_num(weight, nan=1.0), 0.0, 1.0)
    return plain - weight * control


def _sums_before(values: np.ndarray) -> np.ndarray:
    """Row k: the sum of rows 0..k-1 (zeros for row 0)."""
    return np.concatenate([np.zeros((1,) + values.shape[1:]), np.cumsum(values, axis=0)[:-1]])


def judged_estimate(
    terms: np.ndarray,
    *,
    confidence: float = 0.95,
    n_judged: int | None = None,
    budget_spent: float = float("nan"),
) -> Estimate:
    """Mean of the T_k with the Student interval (n - 1 degrees of freedom).

    Parameters
    ----------
    terms : ndarray, shape (n,)
        `judged_terms` of the n draws (repeats of an item count as often as drawn).
    n_judged : int, optional
        Distinct items labelled (default n).

    Returns
    -------
    Estimate
        ``interval="t"``; fewer than two draws give the interval (-inf, inf).
    """
    terms = np.asarray(terms, dtype=float)
    if terms.ndim != 1:
        raise ValueError("terms must be 1-D")
    confidence = check_confidence(confidence)
    count = terms.size
    if count == 0:
        return _empty(confidence, budget_spent)
    value = float(terms.mean())
    error = float(terms.std(ddof=1) / np.sqrt(count)) if count > 1 else float("nan")
    return t_estimate(value, error, count - 1, count, n_judged, budget_spent, confidence)


def two_stage_estimate(
    first_terms: np.ndarray,
    second_terms: np.ndarray,
    *,
    confidence: float = 0.95,
    n_judged: int | None = None,
    budget_spent: float = float("nan"),
) -> Estimate:
    """theta = (n1 theta1 + n2 theta2) / n, variance (n1^2 v1 + n2^2 v2) / n^2, t with n - 3 df.

    ``first_terms`` are the stage-1 terms (no-model design, each with the cross-fitted h of the
    other fold), ``second_terms`` the stage-2 terms (mixture design, h fitted on all of
    stage 1). v_j is the squared standard error of stage j's mean. With an empty stage the
    other stage alone is the estimate (`judged_estimate`).
    """
    first = np.asarray(first_terms, dtype=float)
    second = np.asarray(second_terms, dtype=float)
    if first.size < 2 or second.size < 2:
        combined = np.concatenate([first, second])
        return judged_estimate(combined, confidence=confidence, n_judged=n_judged, budget_spent=budget_spent)
    confidence = check_confidence(confidence)
    n1, n2 = first.size, second.size
    n = n1 + n2
    value = float((first.sum() + second.sum()) / n)
    variance = (n1 * first.var(ddof=1) + n2 * second.var(ddof=1)) / n**2
    return t_estimate(value, float(np.sqrt(variance)), n - 3, n, n_judged, budget_spent, confidence)


def t_estimate(
    value: float,
    error: float,
    df: int,
    n_draws: int,
    n_judged: int | None,
    budget_spent: float,
    confidence: float,
) -> Estimate:
    """An `Estimate` with the Student interval value +- t_df error ((-inf, inf) for a nan error
    or df < 1)."""
    low, high = t_interval(value, error, df, confidence)
    return Estimate(
        value=value,
        standard_error=error,
        low=float(low),
        high=float(high),
        confidence=confidence,
        interval="t",
        n_draws=n_draws,
        n_judged=n_draws if n_judged is None else int(n_judged),
        budget_spent=budget_spent,
    )


def _empty(confidence: float, budget_spent: float) -> Estimate:
    nan = float("nan")
    return Estimate(
        value=nan,
        standard_error=nan,
        low=float("-inf"),
        high=float("inf"),
        confidence=confidence,
        interval="t",
        n_draws=0,
        n_judged=0,
        budget_spent=budget_spent,
    )
