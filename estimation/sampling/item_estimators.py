"""Item-level importance sampling estimators (Schnabel et al. 2016) and judgement reuse.

Draw (query, item) pairs ``(x_j, z_j) ~ Q`` with replacement, label one item each, and
estimate a *linear* metric ``U_S = sum_x p(x) sum_z lambda_S(x, z) u(x, z)`` (DCG, P@k) with
``(1/n) sum_j u_j P(x_j, z_j; S) / Q_j``, exactly unbiased whenever ``Q > 0`` wherever
``P u > 0``. Like `estimation.sampling.estimators`, these functions take arrays over the draws, each
draw with the propensity it was drawn with.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from estimation.sampling.estimators import check_draw_arrays, unreachable_mass
from estimation.sampling.intervals import (
    INTERVAL_KINDS,
    IntervalKind,
    check_confidence,
    clip_interval,
    clt_interval,
    empirical_bernstein_halfwidth,
    hoeffding_halfwidth,
)
from estimation.sampling.results import Estimate


def item_level_estimate(
    labels: np.ndarray,
    target_weights: np.ndarray,
    propensities: np.ndarray,
    *,
    confidence: float = 0.95,
    interval: IntervalKind = "clt",
    weight_bound: float | None = None,
    n_judged: int | None = None,
    budget_spent: float = float("nan"),
    value_bounds: tuple[float, float] | None = None,
) -> Estimate:
    """Unbiased item-level estimate ``U_hat_S = (1/n) sum_j u_j P(x_j, z_j; S) / Q_j``.

    Schnabel et al. (2016), eq. (4) (estimator), eq. (16) (CLT interval), eq. (17)
    (Hoeffding), and Maurer & Pontil (2009) (empirical Bernstein, see
    `estimation.sampling.intervals.empirical_bernstein_halfwidth`). Target
    ``U_S = sum_x p(x) sum_z lambda_S(x, z) u(x, z)`` with ``P(x, z; S) = p(x) lambda_S(x, z)``.

    Parameters
    ----------
    labels : ndarray, shape (n_draws,)
        ``u_j`` in [0, 1] (e.g. ``g(y) / g(y_max)``). Several assessors for one item: pass the
        mean of their ``u`` (Schnabel et al., Section 7); the estimate stays unbiased for the
        expected judgement.
    target_weights : ndarray, shape (n_draws,)
        ``P(x_j, z_j; S) >= 0`` of each drawn pair.
    propensities : ndarray, shape (n_draws,)
        ``Q_j(x_j, z_j)`` in (0, 1], the probability with which draw j picked its pair.
    confidence : float
        Interval level.
    interval : {"clt", "hoeffding", "bernstein"}
        How to build the interval. ``clt``: ``± z sqrt(s^2 / n)``, ``s^2 = 1/(n-1) sum
        (u P / Q - U_hat)^2``; ``hoeffding`` and ``bernstein`` guarantee coverage but need
        ``weight_bound``.
    weight_bound : float, optional
        ``R = max over all pairs of P / Q`` (see `item_level_weight_bound`), fixed *before*
        sampling; every term lies in ``[0, R]``. Required for ``hoeffding`` / ``bernstein``.
        ``R = 0`` (a target that weights no pair) means the value is exactly 0 with
        certainty: a zero-width interval at 0, whatever the kind.
    n_judged : int, optional
        Distinct pairs labelled; defaults to ``n_draws``.
    budget_spent : float
        Cost units spent, carried into the result.
    value_bounds : (float, float), optional
        The range of ``U_S`` (for DCG: ``Metric.value_bounds()`` divided by ``g(y_max)``); every
        interval is cut to it (`estimation.sampling.intervals.clip_interval`).

    Returns
    -------
    Estimate
        ``standard_error`` is always the CLT one, ``s / sqrt(n)`` (nan for one draw); the
        bounds follow ``interval``. ``reliable`` is False for a ``clt`` interval from fewer
        than two draws.
    """
    labels, target_weights, propensities = _check_item_arrays(labels, target_weights, propensities)
    if np.any(target_weights < 0):
        raise ValueError(
            "target_weights must be >= 0 for one system; use item_level_difference_estimate for a difference"
        )
    value_range = None if weight_bound is None else _check_bound(weight_bound)
    terms = labels * target_weights / propensities
    if value_range is not None and np.any(terms > value_range * (1 + 1e-9)):
        raise ValueError(
            "weight_bound is smaller than u P / Q of a drawn pair; it must bound P / Q everywhere"
        )
    return _mean_estimate(
        terms,
        confidence=confidence,
        interval=interval,
        value_range=value_range,
        n_judged=n_judged,
        budget_spent=budget_spent,
        value_bounds=value_bounds,
    )


def item_level_difference_estimate(
    labels: np.ndarray,
    target_weights_a: np.ndarray,
    target_weights_b: np.ndarray,
    propensities: np.ndarray,
    *,
    confidence: float = 0.95,
    interval: IntervalKind = "clt",
    weight_bound: float | None = None,
    n_judged: int | None = None,
    budget_spent: float = float("nan"),
    value_bounds: tuple[float, float] | None = None,
) -> Estimate:
    """Unbiased estimate of ``U_a - U_b`` from one item-level sample.

    Schnabel et al. (2016), Section 5.1: the same estimator as `item_level_estimate` with the
    signed weights ``P_a - P_b``. Each term ``u (P_a - P_b) / Q`` lies in ``[-B, B]`` with
    ``B = max |P_a - P_b| / Q``, so the range ``R`` used by Hoeffding and Bernstein is
    ``2 B``: pass ``weight_bound = B`` (`item_level_weight_bound` of ``P_a - P_b``), the
    doubling happens here.

    For k systems call `item_level_estimate` once per system on the same draws; for their
    pairwise differences call this function per pair.

    Parameters
    ----------
    labels, propensities : ndarray, shape (n_draws,)
        As in `item_level_estimate`.
    target_weights_a, target_weights_b : ndarray, shape (n_draws,)
        ``P(x_j, z_j; S_a)`` and ``P(x_j, z_j; S_b)``, >= 0.
    weight_bound : float, optional
        ``B = max |P_a - P_b| / Q`` over all pairs, fixed before sampling. ``B = 0`` (two
        systems that weight every pair alike, e.g. identical rankings) means the difference
        is exactly 0 with certainty: the estimate is 0 with a zero-width interval of every
        kind.
    value_bounds : (float, float), optional
        The range of ``U_a - U_b``, e.g. ``(-h, h)`` for ``U`` in ``[0, h]``.
    Other parameters as in `item_level_estimate`.
    """
    weights_a = np.asarray(target_weights_a, dtype=float)
    weights_b = np.asarray(target_weights_b, dtype=float)
    if weights_a.shape != weights_b.shape:
        raise ValueError(
            f"target_weights_a and target_weights_b differ in length: {weights_a.shape} vs {weights_b.shape}"
        )
    if np.any(weights_a < 0) or np.any(weights_b < 0):
        raise ValueError("target weights of each system must be >= 0")
    labels, difference, propensities = _check_item_arrays(labels, weights_a - weights_b, propensities)
    bound = None if weight_bound is None else _check_bound(weight_bound)
    terms = labels * difference / propensities
    if bound is not None and np.any(np.abs(terms) > bound * (1 + 1e-9)):
        raise ValueError(
            "weight_bound is smaller than |u (P_a - P_b) / Q| of a drawn pair; it must bound it everywhere"
        )
    return _mean_estimate(
        terms,
        confidence=confidence,
        interval=interval,
        value_range=None if bound is None else 2.0 * bound,
        n_judged=n_judged,
        budget_spent=budget_spent,
        value_bounds=value_bounds,
    )


def item_level_weight_bound(target_weights: np.ndarray, propensities: np.ndarray) -> float:
    """``max |P| / Q`` over the pairs the target weights, computed before sampling.

    Schnabel et al. (2016), Section 6.2: with ``u`` in [0, 1] each importance-weighted term
    lies in ``[0, max P / Q]``. Pass the signed ``P_a - P_b`` for a difference.

    Parameters
    ----------
    target_weights : ndarray, any shape (e.g. (m, n))
        ``P(x, z; S)`` over the whole pool of pairs.
    propensities : ndarray, same shape
        The sampling distribution ``Q`` over the same pairs.

    Returns
    -------
    float
        ``inf`` when some weighted pair cannot be drawn (``Q = 0`` where ``P != 0``): no
        finite bound exists and the estimate would be biased.
    """
    target_weights = np.asarray(target_weights, dtype=float)
    propensities = np.asarray(propensities, dtype=float)
    if target_weights.shape != propensities.shape:
        raise ValueError(
            f"target_weights {target_weights.shape} and propensities {propensities.shape} differ"
        )
    if np.any(propensities < 0) or not np.all(np.isfinite(propensities)):
        raise ValueError("propensities must be finite and >= 0")
    weighted = target_weights != 0
    if not np.any(weighted):
        return 0.0
    if np.any(propensities[weighted] == 0):
        return float("inf")
    return float(np.max(np.abs(target_weights[weighted]) / propensities[weighted]))


@dataclass(frozen=True)
class ReuseEstimate:
    """An estimate for a system evaluated on stored draws, with the mass it cannot see.

    Attributes
    ----------
    estimate : Estimate
        The estimate from the stored draws. It is unbiased for the target restricted to the
        reachable units; when ``unreachable_mass > 0`` it misses that part.
    unreachable_mass : float
        See `unreachable_mass`. 0 means reuse is unbiased.
    """

    estimate: Estimate
    unreachable_mass: float

    @property
    def is_unbiased(self) -> bool:
        return self.unreachable_mass == 0.0


def reuse_estimate(
    labels: np.ndarray,
    target_weights: np.ndarray,
    propensities: np.ndarray,
    *,
    pool_target_weights: np.ndarray,
    pool_reachable: np.ndarray,
    prior_labels: np.ndarray | None = None,
    confidence: float = 0.95,
    interval: IntervalKind = "clt",
    weight_bound: float | None = None,
    value_bounds: tuple[float, float] | None = None,
) -> ReuseEstimate:
    """Evaluate a new system on stored item-level draws, reporting what reuse cannot see.

    Schnabel et al. (2016), Section 3.4: the stored draws ``(x_j, z_j, Q_j, u_j)`` serve a new
    system S_new through its own weights ``P(x_j, z_j; S_new)`` (0 for pairs it does not
    rank). The estimate is `item_level_estimate`; the mass is `unreachable_mass`.

    Parameters
    ----------
    labels, propensities : ndarray, shape (n_draws,)
        The stored ``u_j`` and ``Q_j``.
    target_weights : ndarray, shape (n_draws,)
        ``P(x_j, z_j; S_new)``.
    pool_target_weights : ndarray, shape (m, n)
        ``P(x, z; S_new)`` over the whole pool.
    pool_reachable : ndarray, shape (m, n)
        Which pairs the stored sampling distribution(s) could draw (``Q > 0``).
    prior_labels : ndarray, shape (m, n), optional
        ``u~`` to weight the unreachable mass; default 1.
    Other parameters as in `item_level_estimate`.
    """
    estimate = item_level_estimate(
        labels,
        target_weights,
        propensities,
        confidence=confidence,
        interval=interval,
        weight_bound=weight_bound,
        value_bounds=value_bounds,
    )
    mass = unreachable_mass(pool_target_weights, pool_reachable, prior_labels=prior_labels)
    return ReuseEstimate(estimate=estimate, unreachable_mass=mass)


def _mean_estimate(
    terms: np.ndarray,
    *,
    confidence: float,
    interval: str,
    value_range: float | None,
    n_judged: int | None,
    budget_spent: float,
    value_bounds: tuple[float, float] | None = None,
) -> Estimate:
    """Mean of i.i.d. importance-weighted terms with the requested interval, cut to ``value_bounds``."""
    confidence = check_confidence(confidence)
    if interval not in INTERVAL_KINDS:
        raise ValueError(f"interval must be one of {', '.join(INTERVAL_KINDS)}, got {interval!r}")
    if interval != "clt" and value_range is None:
        raise ValueError(f"a {interval} interval needs weight_bound (max P/Q, fixed before sampling)")
    n_draws = terms.size
    if value_range == 0.0:
        # Every term is 0 with certainty (the bound was fixed before sampling): the value is
        # known exactly, and no interval kind has anything to cover.
        return Estimate(
            value=0.0,
            standard_error=0.0,
            low=0.0,
            high=0.0,
            confidence=confidence,
            interval=interval,
            n_draws=n_draws,
            n_judged=n_draws if n_judged is None else int(n_judged),
            budget_spent=float(budget_spent),
        )
    value = float(terms.mean())
    sample_variance = float(terms.var(ddof=1)) if n_draws > 1 else float("nan")
    standard_error = float(np.sqrt(sample_variance / n_draws)) if n_draws > 1 else float("nan")
    if interval == "clt":
        low, high = clt_interval(value, standard_error, confidence)
    else:
        assert value_range is not None  # refused above for these interval kinds
        if interval == "hoeffding":
            halfwidth = hoeffding_halfwidth(value_range, n_draws, confidence)
        else:
            variance = 0.0 if n_draws < 2 else sample_variance
            halfwidth = empirical_bernstein_halfwidth(variance, value_range, n_draws, confidence)
        low, high = value - float(halfwidth), value + float(halfwidth)
    low, high = clip_interval(low, high, value_bounds)
    return Estimate(
        value=value,
        standard_error=standard_error,
        low=float(low),
        high=float(high),
        confidence=confidence,
        interval=interval,
        n_draws=n_draws,
        n_judged=n_draws if n_judged is None else int(n_judged),
        budget_spent=float(budget_spent),
        reliable=bool(interval != "clt" or n_draws >= 2),
        reliable_from=2 if interval == "clt" else 0,
    )


def _check_item_arrays(
    labels: np.ndarray, target_weights: np.ndarray, propensities: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    labels, target_weights, propensities = check_draw_arrays(
        labels=labels, target_weights=target_weights, propensities=propensities
    )
    if np.any(labels < 0) or np.any(labels > 1):
        raise ValueError("labels u must lie in [0, 1] (e.g. g(y) / g(y_max))")
    return labels, target_weights, propensities


def _check_bound(weight_bound: float) -> float:
    """A weight bound is >= 0; 0 means every term is 0 with certainty."""
    bound = float(weight_bound)
    if np.isnan(bound) or bound < 0:
        raise ValueError(f"weight_bound must be >= 0, got {weight_bound!r}")
    return bound
