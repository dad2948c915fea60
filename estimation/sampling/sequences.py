"""The intervals a release verdict reads, by rule: read once (fixed), after every label with a
known horizon (sequential), or after every label with none (anytime).

A fixed-sample interval is valid at the one sample size chosen in advance. A pipeline that reads
it after every label and stops at the first interval that excludes 0 makes a wrong call far more
often than 5 % of the time when the two runs are equal (13-58 % in the replays of
`bench/bench_verdicts.py`). Three honest rules, each a half-width in standard errors of the
estimate after `draws` top-up draws (`estimation.sampling.verdicts` reads them):

- ``fixed``: Student's t with draws - 1 degrees of freedom, read once, at the horizon (the
  top-up spent).
- ``sequential``: a group-sequential boundary that spends alpha over the planned top-up (the
  horizon H, in labels), read after every label: the error-spending design of Lan and DeMets
  (1983) with the O'Brien-Fleming-shaped spending function alpha(tau) = 4 - 4 Phi(z_{1-alpha/4} /
  sqrt(tau)) (alpha / 2 on each side), tau = labels / H the information fraction. At each look
  the boundary is the one whose crossing, by a path that crossed no earlier boundary, has
  probability alpha(tau_k) - alpha(tau_{k-1}) when the two runs are equal (`spending_boundaries`:
  the standardised sum is a Brownian motion in tau; its density over the paths still running is
  carried from look to look numerically, as in Armitage, McPherson and Rowe 1969 and Jennison and
  Turnbull 2000, ch. 19). The looks are discrete and counted exactly, so no alpha is left unspent:
  with a look after every one of 50 labels the last boundary is 2.18 standard errors (the
  continuous-monitoring bound used before, a = Phi^-1(1 - alpha / 4) = 2.24 flat on the W scale,
  spent only what a continuous path would; the fixed rule reads 1.96). Each look's normal
  quantile is turned into Student's t at the same tail probability with draws - 1 degrees of
  freedom (the variance is estimated). The fraction counts labels, not draws: a draw of a
  document already judged is free, so a top-up makes more draws than labels, and its last label
  is the horizon whatever the repeats (counted in draws, the boundary reached its horizon value
  early: 7.5-9.6 % wrong calls on equal DL19 runs as two-system campaigns of 100 labels, against
  4.6-6.4 % for the fixed interval). Past the horizon (a budget raised after the plan was fixed)
  alpha is spent and the rule decides nothing more: the anytime sequence is the rule for a top-up
  that may grow.

  Counting only the top-up's labels is conservative for a run that arrived: the stored labels
  already measured its pooled documents, so its information at the first top-up label is more
  than 1 / H of the horizon's. A fraction predicted from the variance (the horizon's over the
  look's) was measured and not taken: it decided close pairs nearly as often as the fixed rule
  (0.82-1.08 times on 200 replays per row, against 0.76-1.05 counting labels), but where the
  stored draws had missed rare, large terms (the Robust03 twin whose only new documents are 6
  top-grade ones) it trusted them early and was wrong 15 % of the time instead of 7.1 %
  (docs/benchmarks.md).

  Like the anytime sequence it is read from `MIN_PEEKING_DRAWS` top-up draws on (and at its
  horizon): on terms whose evidence comes in rare, large pieces (`rare_large_terms` of
  `estimation.simulation.verdicts`, one draw in seven, the small ones blurred) the first 20 draws
  hold no large term 4.6 % of the time, and read from the second draw it was wrong 22.9 % of the
  time over 50 draws, 5.0 % from the twentieth. The alpha of the looks not read is spent at the
  first one read.
- ``anytime``: the asymptotic confidence sequence of Waudby-Smith, Arbour, Sinha, Kennedy and
  Ramdas (2021, "Time-uniform central limit theory and asymptotic confidence sequences"):
  Robbins' two-sided normal-mixture boundary on the estimator's martingale sum, valid for every
  number of looks with no horizon. After t draws its half-width is

      se_t * sqrt( 2 (t rho^2 + 1) / (t rho^2) * log( sqrt(t rho^2 + 1) / alpha ) ),

  rho^2 = (-2 log alpha + log(-2 log alpha + 1)) / t_opt, narrowest at t_opt draws (the planned
  top-up): there about 1.55 times the fixed interval's 1.96 standard errors. It is read from
  `MIN_PEEKING_DRAWS` top-up draws on: importance-sampling terms are skewed, and a run of equal
  terms reads as no spread at all (with 10, equal runs of DL19 with a model judge got up to
  6.2 % wrong verdicts over 1,000 replays; with 20, at most 3.0 %).

The sequential rule is about 1.1 fixed widths at its horizon where the sequence is about 1.55,
so it decides more often within the top-up; the sequence stays valid when the budget is
raised and read again, the sequential boundary does not (it spent alpha over H). Measured wrong-call
rates and shares decided: docs/benchmarks.md ("Release verdicts").

A nonasymptotic alternative (the empirical-Bernstein sequence for bounded terms of Waudby-Smith
and Ramdas 2023) was tried and rejected: its width grows with the terms' range, which importance
weights make large, and in the same replays it decided 1-2 % of clearly different pairs within
50 labels where the fixed rule decided 68-86 %.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from estimation.distributions import normal_isf, normal_pdf, normal_sf, student_t_isf, student_t_ppf

MIN_PEEKING_DRAWS = 20
"""Top-up draws before a rule read after every label (sequential, anytime) is read: the standard
error must settle first, and a document worth a rare, large term must have had its chance to be
drawn (module docstring). The sequential rule also reads its horizon's look, however short."""


@dataclass(frozen=True)
class Interval:
    """A verdict's interval: `low`, `high` infinite while it cannot be read."""

    low: float
    high: float

    def __iter__(self):  # noqa: ANN204  # unpacks as (low, high)
        return iter((self.low, self.high))

    @property
    def finite(self) -> bool:
        return math.isfinite(self.low) and math.isfinite(self.high)


UNREAD = Interval(-math.inf, math.inf)


def mixture_multiplier(t: float, t_opt: float, alpha: float = 0.05) -> float:
    """The normal-mixture sequence's half-width in standard errors after t draws, tuned for t_opt
    (module docstring)."""
    if not t > 0 or not t_opt > 0 or not 0 < alpha < 1:
        raise ValueError(f"need t > 0, t_opt > 0 and 0 < alpha < 1, got {t:g}, {t_opt:g}, {alpha:g}")
    log_term = -2 * math.log(alpha)
    rho2 = (log_term + math.log(log_term + 1)) / t_opt
    spread = t * rho2 + 1
    return math.sqrt(2 * spread / (t * rho2) * math.log(math.sqrt(spread) / alpha))


def obrien_fleming_spent(fraction: float | np.ndarray, alpha: float = 0.05) -> np.ndarray:
    """alpha(tau) = 4 - 4 Phi(z_{1 - alpha/4} / sqrt(tau)): the share of alpha the sequential rule
    may have spent, both sides together, by information fraction tau (0 at 0, alpha at 1 and
    beyond): Lan and DeMets' O'Brien-Fleming-shaped function at alpha / 2 on each side."""
    if not 0 < alpha < 1:
        raise ValueError(f"need 0 < alpha < 1, got {alpha:g}")
    tau = np.clip(np.asarray(fraction, dtype=float), 0.0, 1.0)
    with np.errstate(divide="ignore"):
        return np.where(tau > 0, 4 * normal_sf(normal_isf(alpha / 4) / np.sqrt(tau)), 0.0)


_GRID_STEP = 0.02
_GRID = np.arange(-8.0, 8.0 + _GRID_STEP / 2, _GRID_STEP)
"""Where the standardised sum's density is carried: +-8 standard deviations of its value at the
horizon under equal runs (the mass beyond is below 1e-15), in steps of 0.02."""
_GRID_DISTANCE = np.abs(_GRID) / _GRID_STEP
"""Each grid point's distance from 0, in steps."""


def spending_boundaries(fractions: np.ndarray, alpha: float = 0.05) -> np.ndarray:
    """The sequential rule's two-sided boundaries in standard errors (normal quantiles) at looks
    taken at the information fractions `fractions` (not decreasing, positive; 1 and beyond is the
    horizon): at each, the boundary whose crossing by a path that has not crossed before has
    probability alpha(tau_k) - alpha(tau_{k-1}) under equal runs (`obrien_fleming_spent`; module
    docstring). inf where nothing is left to spend (no new information since the last look, or
    past the horizon).

    The standardised sum S(tau) = Z sqrt(tau) is a Brownian motion in tau: its density over the
    paths still running is convolved with the increment's normal kernel from look to look and
    cut at each boundary, which is where the tail mass equals the look's share."""
    taus = np.minimum(np.asarray(fractions, dtype=float), 1.0)
    if taus.ndim != 1 or (taus.size and (not np.all(np.isfinite(taus)) or taus.min() <= 0)):
        raise ValueError("information fractions must be finite and positive")
    if np.any(np.diff(taus) < 0):
        raise ValueError("information fractions must not decrease from look to look")
    boundaries = np.full(taus.size, np.inf)
    density = np.zeros(0)
    previous, spent = 0.0, 0.0
    zero = _GRID.size // 2
    for index, tau in enumerate(taus.tolist()):
        if tau <= previous:
            continue  # nothing new to read: the look spends nothing
        if previous == 0:
            density = normal_pdf(_GRID, scale=math.sqrt(tau)) * _GRID_STEP
        else:
            spread = math.sqrt(tau - previous)
            reach = min(int(math.ceil(9 * spread / _GRID_STEP)), _GRID.size - 1)
            kernel = normal_pdf(np.arange(-reach, reach + 1) * _GRID_STEP, scale=spread)
            density = np.convolve(density, kernel / kernel.sum())[reach : reach + _GRID.size]
        previous = tau
        share = float(obrien_fleming_spent(tau, alpha)) - spent
        # Each grid point holds the mass of its step, centred on it: tail[i] is the mass at
        # |S| >= (i - 1/2) steps (the density is symmetric about 0).
        folded = density[zero:].copy()
        folded[1:] += density[zero - 1 :: -1]
        tail = np.cumsum(folded[::-1])[::-1]
        if share <= 1e-12 or tail[1] <= share:
            continue
        inner = int(np.searchsorted(-tail, -share, side="right")) - 1  # tail[inner] >= share
        outer = tail[inner + 1] if inner + 1 < tail.size else 0.0
        within = (tail[inner] - share) / max(tail[inner] - outer, 1e-300)  # of point `inner`'s step
        cut = (inner - 0.5 + within) * _GRID_STEP
        boundaries[index] = cut / math.sqrt(tau)
        # The paths that crossed stop: the points beyond, and the crossed part of point `inner`.
        kept = np.where(_GRID_DISTANCE > inner + 0.5, 0.0, 1.0)
        kept[np.isclose(_GRID_DISTANCE, inner)] = 1.0 - within
        spent += float(((1.0 - kept) * density).sum())
        density = density * kept
    return boundaries


def sequential_multipliers(boundaries: np.ndarray, draws: np.ndarray) -> np.ndarray:
    """The sequential boundaries (normal quantiles) as Student's t at the same upper tail
    probability with draws - 1 degrees of freedom (inf below two draws)."""
    z = np.asarray(boundaries, dtype=float)
    freedom = np.asarray(draws, dtype=float) - 1
    result = np.full(z.shape, np.inf)
    ok = np.isfinite(z) & (freedom >= 1)
    # The upper tail probability, kept in log space: early boundaries lie far out in the tail.
    result[ok] = student_t_isf(normal_sf(z[ok]), freedom[ok])
    return result


def fixed_multiplier(draws: float, alpha: float = 0.05) -> float:
    """Student's t quantile with draws - 1 degrees of freedom (inf below two draws)."""
    if draws < 2:
        return math.inf
    return float(student_t_ppf(1 - alpha / 2, draws - 1))


__all__ = [
    "MIN_PEEKING_DRAWS",
    "UNREAD",
    "Interval",
    "fixed_multiplier",
    "mixture_multiplier",
    "obrien_fleming_spent",
    "sequential_multipliers",
    "spending_boundaries",
]
