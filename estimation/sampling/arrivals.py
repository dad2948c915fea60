"""Runs that arrive in a campaign with stored human labels: the stratified top-up estimator and
the top-up design.

A campaign's draws were made item by item from distributions over the pool of the runs it
had; a run that arrives later ranks items that no earlier distribution could draw. Its items
therefore form strata by the phase from which on they were drawable: stratum 0 is the first
pool, stratum j the items the j-th arrival added. Draws of phase j reach strata 0..j.

Stratum j's part of the estimand, theta_j = sum_{i in j} a_i G(y_i), is estimated by every draw
made once its items were drawable (the last n_j draws, n_0 >= n_1 >= ...):

    T^j_k = sum_{i in j} a_i h_k(f_i) + 1[x_k in j] a_x (G(y_x) - h_k(f_x)) / q_k(x_k)

(h = 0 without a model judge), and theta_hat = sum_j mean_k T^j_k. Each T^j_k has conditional
expectation theta_j given the draws before it when q_k > 0 on stratum j and q_k, h_k were fixed
before draw k, so theta_hat is unbiased whatever the designs were. Its variance is estimated
from psi_k = sum_j 1[k among stratum j's draws] (T^j_k - mean_j) / n_j as
V = n / (n - 1) sum_k psi_k^2, which keeps the covariance of one draw's terms in two strata;
the interval is Student's t with (smallest n_j) - 1 degrees of freedom, conservative since the
newest stratum is the short one.

The top-up design minimises the variance a top-up of n_t draws adds: a draw lowers stratum j's
variance with weight (n_t / n_j)^2, n_j counting the top-up's own draws, so

    q(i) proportional to |a_i| s_i / sqrt(c_i) x n_t / n_{j(i)}

(1 for the new items), mixed with the defensive floor eps w / Z' over every item some run
ranks, so the top-up's draws stay usable for the runs that arrive after it. Method notes:
docs/statistics.md ("A run that arrives").
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from estimation.distributions import student_t_ppf
from estimation.judges.design import DEFAULT_SAFETY_SHARE, judged_distribution, t_estimate
from estimation.sampling.intervals import check_confidence
from estimation.sampling.results import Estimate, SamplingDistribution


def target_strata(drawable_after: np.ndarray, target: np.ndarray) -> list[tuple[int, np.ndarray]]:
    """The strata a target's units fall in, oldest first: (the order of the last draw made before
    they became drawable, their mask). Stratum (b, mask) is estimated by the draws of order > b.

    Parameters
    ----------
    drawable_after : ndarray of int
        Per unit, the order of the campaign's last draw when the unit joined the pool (0: before
        the first draw).
    target : ndarray, same shape
        a_i; units with a_i = 0 belong to no stratum.
    """
    drawable_after = np.asarray(drawable_after)
    touched = np.asarray(target) != 0
    if drawable_after.shape != touched.shape:
        raise ValueError("drawable_after and target must have one shape")
    return [(int(b), touched & (drawable_after == b)) for b in np.unique(drawable_after[touched])]


def stratum_shares(unit_stratum: np.ndarray, stratum_draws: Sequence[int], topup_draws: int) -> np.ndarray:
    """n_t / n_j per unit: the weight of a top-up draw in the variance of the unit's stratum.

    Parameters
    ----------
    unit_stratum : ndarray of int
        Each unit's stratum: 0 for the first pool, j for the items the j-th arrival added; the
        arriving run's new items are stratum ``len(stratum_draws)``; negative for units no run
        ranks (share 0).
    stratum_draws : sequence of int
        For each existing stratum, the draws made since its items became drawable (non-increasing).
    topup_draws : int
        n_t > 0, the top-up's planned draws.
    """
    unit_stratum = np.asarray(unit_stratum)
    if topup_draws <= 0:
        raise ValueError(f"the top-up needs at least one draw, got {topup_draws}")
    counts = np.asarray(list(stratum_draws) + [0], dtype=float) + topup_draws
    if np.any(np.diff(counts) > 0):
        raise ValueError("stratum_draws must not increase: a later stratum was drawable for fewer draws")
    if unit_stratum.size and unit_stratum.max() >= counts.size:
        raise ValueError(f"unit strata run from 0 to {counts.size - 1}, got {int(unit_stratum.max())}")
    return np.where(unit_stratum >= 0, topup_draws / counts[np.clip(unit_stratum, 0, None)], 0.0)


def topup_distribution(
    importance: np.ndarray,
    sigma: np.ndarray,
    no_model_weight: np.ndarray,
    stratum_share: np.ndarray,
    *,
    cost: np.ndarray | None = None,
    safety_share: float = DEFAULT_SAFETY_SHARE,
) -> SamplingDistribution:
    """q = (1 - eps) |a| s share / sqrt(c) / Z + eps w / Z' over the grown pool (module docstring).

    Parameters
    ----------
    importance : ndarray
        |a_i| of the target (an arrival minus its reference, or the arrival alone).
    sigma : ndarray
        s_i = sigma(f_i) under the judge's calibration; 1 without a judge.
    no_model_weight : ndarray
        w_i, positive on every unit some run of the grown pool ranks (the summed |a_i(S)| of
        every run), so the floor keeps later arrivals' estimates unbiased.
    stratum_share : ndarray
        `stratum_shares` of the units.
    cost, safety_share
        As `estimation.judges.design.judged_distribution`.
    """
    importance = np.asarray(importance, dtype=float)
    share = np.asarray(stratum_share, dtype=float)
    if share.shape != importance.shape or np.any(share < 0) or np.any(share > 1):
        raise ValueError("stratum_share must have the shape of importance and lie in [0, 1]")
    return judged_distribution(
        importance * share, sigma, no_model_weight, safety_share=safety_share, cost=cost
    )


def stratified_estimate(
    stratum_terms: Sequence[np.ndarray],
    *,
    confidence: float = 0.95,
    n_judged: int | None = None,
    budget_spent: float = float("nan"),
) -> Estimate:
    """theta_hat = sum_j mean(T^j) with its variance and Student interval (module docstring).

    Parameters
    ----------
    stratum_terms : sequence of ndarray
        Stratum j's terms T^j_k over the draws made once its items were drawable, in draw order:
        the last ``len(stratum_terms[j])`` draws of the campaign, so the lengths do not increase
        and the first covers every draw.
    n_judged : int, optional
        Distinct items labelled (default: the number of draws).

    Returns
    -------
    Estimate
        ``interval="t"`` with (shortest stratum) - 1 degrees of freedom; the interval is
        (-inf, inf) while some stratum has fewer than two draws, and the value nan while some
        stratum (any, in any position) has none.
    """
    confidence = check_confidence(confidence)
    terms = [np.asarray(each, dtype=float) for each in stratum_terms]
    if not terms or any(each.ndim != 1 for each in terms):
        raise ValueError("give one 1-D array of terms per stratum")
    sizes = [each.size for each in terms]
    nan = float("nan")
    n = sizes[0]
    if min(sizes) == 0:  # a stratum no draw could estimate yet: no value (whatever the others hold)
        return t_estimate(nan, nan, 0, n, n_judged, budget_spent, confidence)
    if any(later > earlier for earlier, later in zip(sizes, sizes[1:], strict=False)):
        raise ValueError(f"a later stratum cannot have more draws than an earlier one, got sizes {sizes}")
    shortest = sizes[-1]
    if shortest == 0:
        value = nan
        error = nan
    else:
        value = float(sum(each.mean() for each in terms))
        psi = np.zeros(n)
        for each in terms:
            psi[n - each.size :] += (each - each.mean()) / each.size
        error = float(np.sqrt(n / (n - 1) * np.sum(psi**2))) if shortest >= 2 else nan
    return t_estimate(value, error, shortest - 1, n, n_judged, budget_spent, confidence)


def topup_variance(
    target: np.ndarray,
    residual_mean: np.ndarray,
    residual_square: np.ndarray,
    new: np.ndarray,
    q: np.ndarray,
    topup_draws: int,
    stored_draws: int,
    stored_variance: float,
) -> float:
    """Predicted variance of theta_hat once `topup_draws` draws from `q` are made: the old pool
    estimated by every draw, the new items by the top-up's.

    With r_i = G(y_i) - h(f_i) (h = 0 without a judge), a top-up draw's terms have
    Var T^O = sum_O a^2 E[r^2] / q - mu_O^2, Var T^N likewise over N, and covariance
    -mu_O mu_N (the draw lands in one of the two), mu = sum a E[r]. With n0 stored draws whose
    old-pool estimate has variance `stored_variance`, n1 top-up draws and n = n0 + n1:

        V = n0^2 stored_variance / n^2 + n1 Var T^O / n^2 + Var T^N / n1 - 2 mu_O mu_N / n.

    Parameters
    ----------
    target, residual_mean, residual_square, new, q : ndarray, one shape
        a_i; E[r_i] and E[r_i^2] under the label model; the arriving run's new items; the top-up
        design (positive wherever a_i != 0).
    """
    target, q, new = np.asarray(target, dtype=float), np.asarray(q, dtype=float), np.asarray(new, dtype=bool)
    if topup_draws < 1 or stored_draws < 0:
        raise ValueError(
            f"need a top-up of at least one draw and no negative stored draws, got "
            f"{topup_draws} and {stored_draws}"
        )
    touched = target != 0
    if np.any(q[touched] <= 0):
        raise ValueError("the top-up design must be positive wherever the target weighs an item")
    moment = np.where(
        touched, target**2 * np.asarray(residual_square, dtype=float) / np.where(touched, q, 1.0), 0.0
    )
    mean = target * np.asarray(residual_mean, dtype=float)
    mu_old, mu_new = float(mean[~new].sum()), float(mean[new].sum())
    var_old = max(float(moment[~new].sum()) - mu_old**2, 0.0)
    var_new = max(float(moment[new].sum()) - mu_new**2, 0.0)
    n1, n0 = float(topup_draws), float(stored_draws)
    n = n0 + n1
    return max(
        n0**2 * stored_variance / n**2 + n1 * var_old / n**2 + var_new / n1 - 2 * mu_old * mu_new / n, 0.0
    )


def topup_for_width(
    width: float, variance_of: Callable[[int], float], *, max_draws: int, confidence: float = 0.95
) -> tuple[int, float]:
    """The smallest top-up n1 (2..max_draws) whose predicted interval, 2 t_{n1-1} sqrt(V(n1)),
    is at most `width`, with that predicted width; (max_draws, its width) when none is.
    `variance_of(n1)` is V(n1) (`topup_variance` with the design for n1), assumed to fall with n1."""
    confidence = check_confidence(confidence)
    if not np.isfinite(width) or width <= 0:
        raise ValueError(f"the target width must be a positive number, got {width:g}")
    if max_draws < 2:
        raise ValueError(f"max_draws must be at least 2, got {max_draws}")

    def predicted(n1: int) -> float:
        return float(2 * student_t_ppf((1 + confidence) / 2, n1 - 1) * np.sqrt(variance_of(n1)))

    low, high = 1, 2  # predicted(low) > width (n1 = 1 has no interval) unless low is the answer
    while predicted(high) > width:
        if high >= max_draws:
            return max_draws, predicted(max_draws)
        low, high = high, min(2 * high, max_draws)
    while high - low > 1:
        middle = (low + high) // 2
        low, high = (middle, high) if predicted(middle) > width else (low, middle)
    return high, predicted(high)


__all__ = [
    "stratified_estimate",
    "stratum_shares",
    "target_strata",
    "topup_distribution",
    "topup_for_width",
    "topup_variance",
]
