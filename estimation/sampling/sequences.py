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
  horizon H, in labels), read after every label. On the information fraction tau = labels / H the
  estimate's standardised sum behaves as a Brownian motion W(tau); the O'Brien-Fleming shape
  |W(tau)| >= a, constant on that scale, is crossed before tau = 1 with probability at most
  2 * 2 (1 - Phi(a)) (the reflection principle, each side), so a = Phi^-1(1 - alpha / 4) = 2.2414
  for alpha = 0.05. In standard errors that is a / sqrt(tau): very wide early, 2.24 at the
  horizon (the fixed rule's 1.96 there). Looks after every label are discrete, so the continuous
  bound is conservative (Lan and DeMets 1983 spend alpha by the same shape; Siegmund's
  correction for discrete looks is not taken). Each look's normal quantile is turned into
  Student's t at the same tail probability with draws - 1 degrees of freedom (the variance is
  estimated). The fraction counts labels, not draws: a draw of a document already judged is
  free, so a top-up makes more draws than labels, and its last label is the horizon whatever the
  repeats (counted in draws, the boundary would reach its horizon value early and be read there
  many more times: 7.5-9.6 % wrong calls on equal DL19 runs as two-system campaigns of 100
  labels, against 4.6-6.4 % for the fixed interval). Past the horizon (a budget raised after
  the plan was fixed) it stays at its horizon value.
- ``anytime``: the asymptotic confidence sequence of Waudby-Smith, Arbour, Sinha, Kennedy and
  Ramdas (2021, "Time-uniform central limit theory and asymptotic confidence sequences"):
  Robbins' two-sided normal-mixture boundary on the estimator's martingale sum, valid for every
  number of looks with no horizon. After t draws its half-width is

      se_t * sqrt( 2 (t rho^2 + 1) / (t rho^2) * log( sqrt(t rho^2 + 1) / alpha ) ),

  rho^2 = (-2 log alpha + log(-2 log alpha + 1)) / t_opt, narrowest at t_opt draws (the planned
  top-up): there about 1.55 times the fixed interval's 1.96 standard errors. It is read from
  `MIN_ANYTIME_DRAWS` top-up draws on: importance-sampling terms are skewed, and a run of equal
  terms reads as no spread at all (with 10, equal runs of DL19 with a model judge got up to
  6.2 % wrong verdicts over 1,000 replays; with 20, at most 3.0 %).

The sequential rule is about 1.14 fixed widths at its horizon where the sequence is about 1.55,
so it decides more often within the top-up; the sequence stays valid when the budget is raised
and read again, the sequential boundary does not (it spent alpha over H). Measured wrong-call
rates and shares decided: docs/benchmarks.md ("Release verdicts").

A nonasymptotic alternative (the empirical-Bernstein sequence for bounded terms of Waudby-Smith
and Ramdas 2023) was tried and rejected: its width grows with the terms' range, which importance
weights make large, and in the same replays it decided 1-2 % of clearly different pairs within
50 labels where the fixed rule decided 68-86 %.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from scipy.stats import norm
from scipy.stats import t as student_t

MIN_ANYTIME_DRAWS = 20
"""Top-up draws before the anytime sequence is read (its standard error must settle first)."""


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


def spending_constant(alpha: float = 0.05) -> float:
    """a of the sequential boundary |W(tau)| >= a on [0, 1]: Phi^-1(1 - alpha / 4) (module docstring)."""
    if not 0 < alpha < 1:
        raise ValueError(f"need 0 < alpha < 1, got {alpha:g}")
    return float(norm.ppf(1 - alpha / 4))


def sequential_multiplier(
    draws: float, horizon: float, alpha: float = 0.05, *, labels: float | None = None
) -> float:
    """The sequential boundary in standard errors after `draws` top-up draws that brought `labels`
    of the `horizon` planned labels (default: one label per draw): the O'Brien-Fleming shape
    a / sqrt(tau), tau = labels / horizon, as Student's t at the same tail probability with
    draws - 1 degrees of freedom (inf below two draws)."""
    if not horizon > 0:
        raise ValueError(f"the horizon must be positive, got {horizon:g}")
    if draws < 2:
        return math.inf
    counted = draws if labels is None else labels
    z = spending_constant(alpha) / math.sqrt(min(max(counted, 1e-9) / horizon, 1.0))
    # The upper tail probability, kept in log space: early boundaries lie far out in the tail.
    return float(student_t.isf(norm.sf(z), draws - 1))


def fixed_multiplier(draws: float, alpha: float = 0.05) -> float:
    """Student's t quantile with draws - 1 degrees of freedom (inf below two draws)."""
    if draws < 2:
        return math.inf
    return float(student_t.ppf(1 - alpha / 2, draws - 1))


__all__ = [
    "MIN_ANYTIME_DRAWS",
    "UNREAD",
    "Interval",
    "fixed_multiplier",
    "mixture_multiplier",
    "sequential_multiplier",
    "spending_constant",
]
