"""Release verdicts for a run that arrives: read once (fixed) or after every label (anytime).

A fixed-sample interval is valid at the one sample size chosen in advance. A pipeline that reads
it after every label and stops at the first interval that excludes 0 makes a wrong call far more
often than 5 % of the time when the two runs are equal (about a quarter of the time in the
replays of `bench/bench_verdicts.py`). Two honest rules:

- ``fixed``: the stratified estimate's 95 % t interval (`estimation.sampling.arrivals`), read
  once, when the top-up is spent;
- ``anytime``: a 95 % confidence sequence, read after every label; the verdict is taken the
  first time it excludes 0, and judging may stop there.

The sequence is the asymptotic confidence sequence of Waudby-Smith, Arbour, Sinha, Kennedy and
Ramdas (2021, "Time-uniform central limit theory and asymptotic confidence sequences"): Robbins'
two-sided normal-mixture boundary on the estimator's martingale sum, in units of its estimated
standard error. After t top-up draws its half-width is

    se_t * sqrt( 2 (t rho^2 + 1) / (t rho^2) * log( sqrt(t rho^2 + 1) / alpha ) ),

rho^2 = (-2 log alpha + log(-2 log alpha + 1)) / t_opt, which is narrowest at t_opt draws (the
planned top-up): there about 1.55 times the fixed interval's 1.96 standard errors. The stratified
estimator's standard error falls like 1 / sqrt(t) in the top-up's draws (the short stratum, whose
degrees of freedom the fixed interval counts too), so t counts those.

It is asymptotic: the running standard error stands for the true one. Terms of importance
sampling are skewed (mostly one value, rarely a large one), and a run of equal terms reads as no
spread at all, so the sequence is read only from `MIN_ANYTIME_DRAWS` top-up draws on (with 10,
equal runs of DL19 with a model judge got up to 6.2 % wrong verdicts over 1,000 replays; with 20,
at most 3.0 %). The wrong-verdict rate is measured, not assumed: equal runs, a check after every
label, in the tests and in `bench/bench_verdicts.py`. On terms rarer still (a large value in one
draw of seven, zero otherwise) a normal approximation errs at any burn-in this short: the rule
is for top-ups whose estimate the fixed interval already describes well.

A nonasymptotic alternative (the empirical-Bernstein sequence for bounded terms of Waudby-Smith
and Ramdas 2023) was tried and rejected: its width grows with the terms' range, which importance
weights make large, and in the same replays it decided 1-2 % of clearly different pairs within
50 labels where the fixed rule decided 68-86 %.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from scipy.stats import t as student_t

VERDICTS = ("better", "worse", "not_settled")
MIN_ANYTIME_DRAWS = 20
"""Top-up draws before the anytime sequence is read (its standard error must settle first)."""


@dataclass(frozen=True)
class Interval:
    """A verdict's interval: `low`, `high` infinite while it cannot be read."""

    low: float
    high: float

    def __iter__(self):  # noqa: ANN204  # unpacks as (low, high)
        return iter((self.low, self.high))


def mixture_multiplier(t: float, t_opt: float, alpha: float = 0.05) -> float:
    """The normal-mixture sequence's half-width in standard errors after t draws, tuned for t_opt
    (module docstring)."""
    if not t > 0 or not t_opt > 0 or not 0 < alpha < 1:
        raise ValueError(f"need t > 0, t_opt > 0 and 0 < alpha < 1, got {t:g}, {t_opt:g}, {alpha:g}")
    log_term = -2 * math.log(alpha)
    rho2 = (log_term + math.log(log_term + 1)) / t_opt
    spread = t * rho2 + 1
    return math.sqrt(2 * spread / (t * rho2) * math.log(math.sqrt(spread) / alpha))


def anytime_interval(
    value: float,
    se: float,
    draws: int,
    t_opt: float,
    *,
    alpha: float = 0.05,
    min_draws: int = MIN_ANYTIME_DRAWS,
) -> Interval:
    """The anytime-valid interval after `draws` top-up draws (infinite before `min_draws`)."""
    if draws < min_draws or not math.isfinite(value) or not math.isfinite(se):
        return Interval(-math.inf, math.inf)
    half = mixture_multiplier(draws, max(t_opt, 1.0), alpha) * se
    return Interval(value - half, value + half)


def fixed_interval(value: float, se: float, draws: int, *, alpha: float = 0.05) -> Interval:
    """The fixed-sample t interval with `draws` - 1 degrees of freedom (the top-up's stratum)."""
    if draws < 2 or not math.isfinite(value) or not math.isfinite(se):
        return Interval(-math.inf, math.inf)
    half = float(student_t.ppf(1 - alpha / 2, draws - 1)) * se
    return Interval(value - half, value + half)


def verdict(low: float, high: float) -> str:
    """ "better" when the interval lies above 0, "worse" below, else "not_settled"."""
    if low > 0:
        return "better"
    if high < 0:
        return "worse"
    return "not_settled"


__all__ = [
    "MIN_ANYTIME_DRAWS",
    "VERDICTS",
    "Interval",
    "anytime_interval",
    "fixed_interval",
    "mixture_multiplier",
    "verdict",
]
