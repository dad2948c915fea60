"""Small frozen result types returned by the numeric core."""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np


@dataclass(frozen=True, eq=False)
class Moments:
    """Per-query moments of a metric (or of a difference of two metrics) under a label model.

    Attributes
    ----------
    mean : ndarray, shape (m,)
        E[L | x; theta] (for a difference: E[delta | x; theta]).
    variance : ndarray, shape (m,)
        Var[L | x; theta] (for a difference: Var[delta | x; theta]).
    """

    mean: np.ndarray
    variance: np.ndarray

    def second_moment_about(self, reference: float) -> np.ndarray:
        """E[(L - R)^2 | x] = Var[L | x] + (E[L | x] - R)^2, shape (m,)."""
        return self.variance + (self.mean - reference) ** 2


@dataclass(frozen=True, eq=False)
class SamplingDistribution:
    """A sampling distribution over queries (shape (m,)) or over (query, slot) pairs (shape (m, n)).

    Attributes
    ----------
    q : ndarray
        The distribution to draw from: ``(1 - mix) * optimal + mix * floor``; sums to 1.
    optimal : ndarray
        The unmixed optimal distribution q* (or Q*).
    mix : float
        Weight of the defensive component.
    cost : ndarray or None
        lambda(x) per query (query level), or c(z) per pair (item level).
    expected : ndarray or None
        E[L | x; theta] (or E[delta | x; theta]) per query, for reports and plots.
    second_moment : ndarray or None
        The quantity under the square root of q*: E[(L - R_theta)^2 | x; theta] (summed over
        systems for a leaderboard).
    """

    q: np.ndarray
    optimal: np.ndarray
    mix: float
    cost: np.ndarray | None = None
    expected: np.ndarray | None = None
    second_moment: np.ndarray | None = None


@dataclass(frozen=True)
class Estimate:
    """A point estimate with its standard error and a two-sided confidence interval.

    Attributes
    ----------
    value : float
    standard_error : float
    low, high : float
        The interval bounds at level ``confidence``.
    confidence : float
        E.g. 0.95.
    interval : str
        How the interval was built: ``"clt"``, ``"hoeffding"`` or ``"bernstein"``.
    n_draws : int
        Number of draws (with replacement) the estimate uses.
    n_judged : int
        Number of distinct queries (query level) or (query, item) pairs (item level) labelled.
    budget_spent : float
        Cost units spent on those labels (nan when unknown).
    reliable : bool
        Whether ``low, high`` may be trusted at its level. False for a CLT-type interval
        (``clt``, ``t``, ``skew_t``) from fewer than ``reliable_from`` distinct judged units:
        show ``any_n_low, any_n_high`` instead. Always True for ``hoeffding`` and
        ``bernstein``, which hold for every n.
    reliable_from : int
        The number of distinct judged units from which a CLT-type interval is trusted.
    any_n_low, any_n_high : float
        A distribution-free interval valid for every n (Hoeffding over the metric's range),
        ``(-inf, inf)`` when the caller gave no range.
    """

    value: float
    standard_error: float
    low: float
    high: float
    confidence: float
    interval: str
    n_draws: int
    n_judged: int
    budget_spent: float = float("nan")
    reliable: bool = True
    reliable_from: int = 0
    any_n_low: float = float("-inf")
    any_n_high: float = float("inf")

    def scaled(self, factor: float) -> Estimate:
        """The same estimate of ``factor`` times the quantity (``factor > 0``, e.g. the top gain
        of labels scaled to [0, 1], or a share of topics): value, SE and every bound scale,
        coverage and reliability do not change."""
        if not factor > 0:
            raise ValueError(f"factor must be > 0, got {factor}")
        return replace(
            self,
            value=self.value * factor,
            standard_error=self.standard_error * factor,
            low=self.low * factor,
            high=self.high * factor,
            any_n_low=self.any_n_low * factor,
            any_n_high=self.any_n_high * factor,
        )
