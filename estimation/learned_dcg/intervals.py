"""Bias-corrected and accelerated (BCa) bootstrap intervals (Efron 1987; Efron & Tibshirani 1993,
ch. 14), for the learned gains, discounts and ``σ₂/σ₁``.

Why BCa and not a studentised (bootstrap-t) interval: the quantities are non-linear functions
of the fit (normalised singular vectors of ``T(W)``), bounded (``σ₂/σ₁ >= 0``, gains in [0, 1]
when monotone) and biased away from the truth by the noise of the fit (a noisy ``T(W)`` has
``σ₂ > 0`` even when the truth has rank one). BCa is transformation-respecting, stays inside
the range of the bootstrap distribution, and corrects exactly these two defects of the
percentile interval: the median bias (``z₀``, from the share of replicates below the
estimate) and a standard error that changes with the parameter (``a``, from a jackknife).
A bootstrap-t interval needs a standard error in every replicate (a nested bootstrap of the
whole fit, or a delta method through the SVD), is not transformation-respecting and can leave
the parameter's range.

    z₀ = Φ⁻¹(#{θ* < θ̂}/B + ½ #{θ* = θ̂}/B)
    a  = Σ (θ̄ - θ₍ⱼ₎)³ / (6 (Σ (θ̄ - θ₍ⱼ₎)²)^{3/2})          (jackknife over groups of topics)
    α₁ = Φ(z₀ + (z₀ + z_{α/2}) / (1 - a (z₀ + z_{α/2}))),   α₂ the same with z_{1-α/2}
    interval = [quantile(θ*, α₁), quantile(θ*, α₂)]

When the estimate lies outside every replicate (z₀ unbounded; it happens to ``σ₂/σ₁`` near 0)
the share is clamped to ``[1/(2B), 1 - 1/(2B)]`` and the interval is widened to contain the
estimate; such quantities are flagged.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from estimation.distributions import normal_cdf, normal_ppf


@dataclass(frozen=True)
class Intervals:
    low: np.ndarray
    high: np.ndarray
    widened: np.ndarray  # bool: widened to contain the estimate


def bca_intervals(
    estimate: np.ndarray, replicates: np.ndarray, jackknife: np.ndarray, level: float = 0.95
) -> Intervals:
    """BCa intervals per coordinate.

    Parameters
    ----------
    estimate : (p,)
    replicates : (B, p) bootstrap replicates of the whole estimation
    jackknife : (G, p) leave-one-group-out estimates (G >= 2), for the acceleration
    """
    estimate = np.asarray(estimate, dtype=float)
    replicates = np.asarray(replicates, dtype=float)
    n_boot = replicates.shape[0]
    if n_boot == 0:
        nan = np.full(estimate.shape, np.nan)
        return Intervals(nan, nan.copy(), np.zeros(estimate.shape, dtype=bool))
    scale = 1e-12 * (1.0 + np.abs(estimate))
    below = np.sum(replicates < estimate - scale, axis=0)
    equal = np.sum(np.abs(replicates - estimate) <= scale, axis=0)
    share = np.clip((below + 0.5 * equal) / n_boot, 0.5 / n_boot, 1.0 - 0.5 / n_boot)
    z0 = normal_ppf(share)
    acceleration = _acceleration(np.asarray(jackknife, dtype=float))
    alpha = (1.0 - level) / 2.0
    levels = []
    for z in (normal_ppf(alpha), normal_ppf(1.0 - alpha)):
        shifted = z0 + z
        denominator = 1.0 - acceleration * shifted
        # A denominator <= 0 (huge acceleration) would flip the tail: use the extreme quantile.
        adjusted = np.where(
            denominator > 0, z0 + shifted / np.where(denominator > 0, denominator, 1.0), np.sign(z) * np.inf
        )
        levels.append(normal_cdf(adjusted))
    low = np.array([np.quantile(replicates[:, j], levels[0][j]) for j in range(estimate.size)])
    high = np.array([np.quantile(replicates[:, j], levels[1][j]) for j in range(estimate.size)])
    widened = (estimate < low - scale) | (estimate > high + scale)
    return Intervals(np.minimum(low, estimate), np.maximum(high, estimate), widened)


def _acceleration(jackknife: np.ndarray) -> np.ndarray:
    if jackknife.shape[0] < 2:
        return np.zeros(jackknife.shape[1] if jackknife.ndim == 2 else 0)
    deviation = jackknife.mean(axis=0) - jackknife
    spread = np.sum(deviation**2, axis=0)
    with np.errstate(invalid="ignore", divide="ignore"):
        a = np.sum(deviation**3, axis=0) / (6.0 * spread**1.5)
    return np.where(spread > 0, a, 0.0)
