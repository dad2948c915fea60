"""A release verdict read from a run of looks: one pure reading, used by the app
(`sampling.verdicts`) and by the replays that measure it (`estimation.simulation.verdicts`).

A `VerdictPlan` is fixed before the first top-up label: the rule (`estimation.sampling.sequences`:
``sequential``, ``anytime``, ``fixed``; ``peek``, the naive reading, exists for the replays only),
the horizon (the planned top-up, in labels), the question and its margin, alpha. The question
says what is tested on the difference d = arriving run minus reference, in metric units:

- ``difference``: better (d > 0) or worse (d < 0);
- ``non_inferiority``: not worse by more than the margin m (d > -m), or worse by more than it
  (d < -m): the release question when a cheaper or faster ranker ships if it costs at most m;
- ``superiority``: better by more than the margin (d > m), or not (d < m).

Each is a two-sided test of d = threshold (0, -m, +m) at level alpha: a verdict is taken when the
rule's interval lies wholly on one side of the threshold, so each wrong call (say ``not_worse``
for a run worse by more than m) has probability at most alpha / 2 under the rule; with nothing
decided when the top-up ends, the verdict is ``not_settled``.

A look is the estimate after some top-up draws (`Look`). Before a rule reads a look it checks
that the normal approximation behind every rule is plausible for the draws at hand
(`look_problem`), and skips the look when it is not; the reason is reported:

- no spread: every term alike reads as a standard error of 0, an interval that claims what
  nobody measured;
- skewness: the Edgeworth expansion of a studentised mean (Hall 1992, "The Bootstrap and
  Edgeworth Expansion", 2.6) puts the one-sided error at the boundary c off by about
  |gamma| (2 c^2 + 1) phi(c) / 6, gamma the estimate's skewness (the terms' skewness over
  sqrt(n)). The look is read only when that is at most alpha / 2 at the rule's boundary at its
  horizon, so the rule's wrong calls stay within alpha even where the first-order term is right
  and wholly on one side. gamma falls like 1 / sqrt(n), which says how many more draws are
  expected before it passes;
- agreement (a run that arrived): the pooled documents' part of the difference is estimated by
  the stored draws and by the top-up's, each unbiased. When they differ by more than
  z_{1 - alpha/2} of their standard errors the stored draws most likely missed rare, large terms
  (documents the difference weighs that the stored design seldom drew): their spread
  understates the estimate's error, and no rule may read it.

An identical release (the same documents at every rank the metric weighs) has a difference of 0
whatever the grades; the app answers it as ``unchanged`` with no top-up (`UNCHANGED`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from estimation.distributions import normal_pdf, normal_ppf
from estimation.sampling.sequences import (
    MIN_PEEKING_DRAWS,
    UNREAD,
    Interval,
    fixed_multiplier,
    mixture_multiplier,
    sequential_multipliers,
    spending_boundaries,
)

RULES = ("sequential", "anytime", "fixed")
"""The rules offered to coordinators and pipelines (the first is the default)."""
PEEK = "peek"
"""The naive reading (the fixed interval after every label): replays only, never offered."""
QUESTIONS: dict[str, tuple[str, str]] = {
    "difference": ("better", "worse"),
    "non_inferiority": ("not_worse", "worse"),
    "superiority": ("better", "not_better"),
}
"""Each question's verdicts: (above the threshold, below it)."""
NOT_SETTLED = "not_settled"
UNCHANGED = "unchanged"
VERDICTS = ("better", "worse", "not_worse", "not_better", NOT_SETTLED, UNCHANGED)


@dataclass(frozen=True)
class VerdictPlan:
    """How a verdict is read, fixed before its first top-up label (module docstring)."""

    rule: str = "sequential"
    horizon: float = 1.0
    question: str = "difference"
    margin: float = 0.0
    alpha: float = 0.05

    def __post_init__(self) -> None:
        if self.rule not in (*RULES, PEEK):
            raise ValueError(f"unknown rule {self.rule!r}; expected one of {', '.join(RULES)}")
        if self.question not in QUESTIONS:
            raise ValueError(f"unknown question {self.question!r}; expected one of {', '.join(QUESTIONS)}")
        if not (math.isfinite(self.margin) and self.margin >= 0):
            raise ValueError(f"the margin must be a finite number >= 0, got {self.margin!r}")
        if self.question == "difference" and self.margin != 0:
            raise ValueError(
                "a margin needs a question that reads it: not worse by more than the margin "
                "(non_inferiority) or better by more than the margin (superiority)"
            )
        if not (math.isfinite(self.horizon) and self.horizon >= 1):
            raise ValueError(f"the horizon must be at least one label, got {self.horizon!r}")
        if not 0 < self.alpha < 1:
            raise ValueError(f"need 0 < alpha < 1, got {self.alpha!r}")

    @property
    def threshold(self) -> float:
        """What the difference is tested against: 0, -margin or +margin."""
        return {"difference": 0.0, "non_inferiority": -self.margin, "superiority": self.margin}[self.question]

    @property
    def verdict_names(self) -> tuple[str, str]:
        return QUESTIONS[self.question]

    def multiplier(self, draws: float) -> float:
        """The half-width in standard errors after `draws` top-up draws of a rule whose width
        depends on the draws alone (anytime, fixed, peek); inf: not read. The sequential rule's
        depends on every earlier look (`multipliers`)."""
        if self.rule == "sequential":
            raise ValueError("the sequential boundary depends on every look: read `multipliers`")
        return _multiplier(self.rule, draws, self.horizon, self.alpha)

    def multipliers(self, looks: LookArrays, read: np.ndarray) -> np.ndarray:
        """The rule's half-width in standard errors at each look, given which looks are `read`
        (the sequential rule spends alpha only at those); inf where a look is not read."""
        result = np.full(looks.draws.size, np.inf)
        if self.rule != "sequential":
            for index in np.flatnonzero(read):
                result[index] = self.multiplier(float(looks.draws[index]))
            return result
        labels = _labels(looks)[read]
        boundaries = _sequential_boundaries(tuple(labels.tolist()), self.horizon, self.alpha)
        result[read] = sequential_multipliers(np.array(boundaries), looks.draws[read])
        return result


@lru_cache(maxsize=4096)
def _sequential_boundaries(labels: tuple[int, ...], horizon: float, alpha: float) -> tuple[float, ...]:
    """The spending boundaries at looks after these top-up label counts: information fraction
    labels / horizon, 1 from the horizon on; a look that brought no new label spends nothing.
    Cached: replays read the same label counts thousands of times."""
    counts = (
        np.maximum.accumulate(np.maximum(np.asarray(labels, dtype=float), 1.0)) if labels else np.zeros(0)
    )
    return tuple(spending_boundaries(np.minimum(counts / horizon, 1.0), alpha).tolist())


@lru_cache(maxsize=65536)
def _multiplier(rule: str, draws: float, horizon: float, alpha: float) -> float:
    # Cached: replays read the same few hundred draw counts millions of times.
    if rule == "anytime":
        return mixture_multiplier(draws, horizon, alpha)
    return fixed_multiplier(draws, alpha)  # fixed, and the naive peek at it


@dataclass(frozen=True)
class Look:
    """The estimate of the difference after `draws` top-up draws: value, standard error, the
    estimate's skewness, for a run that arrived the agreement of the stored draws with the
    top-up's on the pooled documents (|stored - top-up| / their standard error; nan: none), and
    the top-up labels those draws brought (0: one per draw)."""

    value: float
    se: float
    draws: int
    skewness: float = math.nan
    agreement: float = math.nan
    labels: int = 0


@dataclass(frozen=True)
class Reading:
    """A rule's reading: the verdict ("" while undecided), the interval read, the look it was
    taken at, and why a look was not read or nothing was decided ("" when nothing to say)."""

    verdict: str
    band: Interval
    look: Look | None = None
    reason: str = ""


def look_problem(plan: VerdictPlan, look: Look) -> str:
    """Why the normal approximation cannot be trusted at this look ("" when it can): no spread,
    too skewed (with the draws expected before it passes), or the stored draws disagree with the
    top-up's (module docstring)."""
    if not (math.isfinite(look.value) and math.isfinite(look.se)) or look.se <= 0:
        return "no spread in the labels yet (every term alike)"
    if plan.rule == PEEK:  # the naive reading checks nothing more
        return ""
    if math.isfinite(look.agreement) and look.agreement > normal_ppf(1 - plan.alpha / 2):
        return (
            f"the stored labels and the top-up's disagree on the pooled documents by "
            f"{look.agreement:.1f} standard errors: the stored draws missed documents the difference "
            f"weighs, so its interval would understate the error"
        )
    gamma = abs(look.skewness) if math.isfinite(look.skewness) else 0.0
    allowed = skewness_allowed(plan.alpha)
    if gamma > allowed:
        more = max(1, math.ceil(look.draws * ((gamma / allowed) ** 2 - 1)))
        return (
            f"too few informative labels yet: the estimate's skewness ({gamma:.2f}) is beyond "
            f"what the normal approximation takes ({allowed:.2f}); about {more} more top-up "
            f"draws expected"
        )
    one = look_arrays([look])
    if _before_burn_in(plan, one.draws, _labels(one))[0]:
        return f"read from the {MIN_PEEKING_DRAWS}th top-up draw on (and at the horizon): {look.draws} so far"
    return ""


def _before_burn_in(plan: VerdictPlan, draws: np.ndarray, labels: np.ndarray) -> np.ndarray:
    """Looks a rule read after every label skips: before `MIN_PEEKING_DRAWS` top-up draws, unless
    the horizon is reached (the terms' spread must settle, and a rare, large term have its chance
    to be drawn; `estimation.sampling.sequences`)."""
    if plan.rule not in ("sequential", "anytime"):
        return np.zeros(draws.shape, dtype=bool)
    return (draws < MIN_PEEKING_DRAWS) & (labels < plan.horizon)


def _labels(looks: LookArrays) -> np.ndarray:
    """The labels each look counts (a look that does not say counts one per draw)."""
    return np.where(looks.labels > 0, looks.labels, looks.draws)


def skewness_allowed(alpha: float) -> float:
    """The largest skewness of the estimate whose Edgeworth term at the 95 % (1 - alpha) normal
    quantile z, |gamma| (2 z^2 + 1) phi(z) / 6, stays within alpha / 2: one check for every rule,
    the one a single interval needs (boundaries further out have smaller absolute terms, but
    a sequence crosses many of them)."""
    z = float(normal_ppf(1 - alpha / 2))
    return float(3 * alpha / ((2 * z * z + 1) * normal_pdf(z)))


def read_look(plan: VerdictPlan, look: Look) -> Reading:
    """The rule's interval at this look and the verdict it gives there ("" when the interval does
    not clear the threshold, or the look cannot be read)."""
    index, band = decision(plan, look_arrays([look]), over=plan.rule == "fixed")
    if index < 0:
        return Reading("", band, look, look_problem(plan, look))
    above, below = plan.verdict_names
    return Reading(above if band.low > plan.threshold else below, band, look)


def first_verdict(plan: VerdictPlan, looks: Sequence[Look], *, over: bool) -> Reading:
    """The plan's verdict over `looks` in order: a peeking rule's at the first look that clears
    the threshold; the fixed rule's at the last look once `over` (the top-up can take no more).
    With nothing decided: ``not_settled`` at the last look when `over`, else "" (its reading of
    the last look, with the reason it was not read)."""
    if not looks:
        return Reading(NOT_SETTLED if over else "", UNREAD, None, "no top-up draw counts yet")
    if plan.rule == "fixed" and not over:
        return Reading("", UNREAD, None, "the fixed rule is read once, at the horizon")
    index, band = decision(plan, look_arrays(looks), over=over)
    if index >= 0:
        above, below = plan.verdict_names
        return Reading(above if band.low > plan.threshold else below, band, looks[index])
    last = looks[-1]
    reason = look_problem(plan, last)
    if over:
        reason = reason or (
            "the rule's interval still held the threshold (0 for better or worse, minus the margin "
            "for not worse) when the labels ran out"
        )
        return Reading(NOT_SETTLED, band, last, reason)
    return Reading("", band, last, reason)


@dataclass(frozen=True)
class LookArrays:
    """Looks as arrays, one entry per look (what `decision` reads; `Look` holds one)."""

    value: np.ndarray
    se: np.ndarray
    draws: np.ndarray
    skewness: np.ndarray
    agreement: np.ndarray
    labels: np.ndarray

    def looks(self) -> list[Look]:
        return [
            Look(float(v), float(e), int(d), float(g), float(a), int(n))
            for v, e, d, g, a, n in zip(
                self.value, self.se, self.draws, self.skewness, self.agreement, self.labels, strict=True
            )
        ]

    def at(self, positions: np.ndarray) -> LookArrays:
        """The looks at these positions (the draws that brought a label, say)."""
        return LookArrays(*(np.asarray(field)[positions] for field in self._fields()))

    def _fields(self) -> tuple[np.ndarray, ...]:
        return (self.value, self.se, self.draws, self.skewness, self.agreement, self.labels)


def look_arrays(looks: Sequence[Look]) -> LookArrays:
    return LookArrays(
        np.array([look.value for look in looks], dtype=float),
        np.array([look.se for look in looks], dtype=float),
        np.array([look.draws for look in looks], dtype=np.int64),
        np.array([look.skewness for look in looks], dtype=float),
        np.array([look.agreement for look in looks], dtype=float),
        np.array([look.labels for look in looks], dtype=np.int64),
    )


def readable(plan: VerdictPlan, looks: LookArrays) -> np.ndarray:
    """Which looks pass `look_problem`'s checks (the same conditions, all looks at once)."""
    with np.errstate(invalid="ignore"):
        ok = np.isfinite(looks.value) & np.isfinite(looks.se) & (looks.se > 0)
        if plan.rule != PEEK:
            ok &= ~_before_burn_in(plan, looks.draws, _labels(looks))
            ok &= ~(looks.agreement > normal_ppf(1 - plan.alpha / 2))
            ok &= ~(np.abs(looks.skewness) > skewness_allowed(plan.alpha))
    return ok


def decision(plan: VerdictPlan, looks: LookArrays, *, over: bool) -> tuple[int, Interval]:
    """The one reading every caller shares: the index of the first look whose interval clears the
    threshold (the last look only, for the fixed rule once `over`), and that interval; -1 and the
    last look's interval when none does (infinite where it cannot be read)."""
    count = looks.value.size
    if not count:
        return -1, UNREAD
    candidates = np.zeros(count, dtype=bool)
    if plan.rule != "fixed":
        candidates[:] = True
    elif over:
        candidates[-1] = True
    multiplier = plan.multipliers(looks, candidates & readable(plan, looks))
    usable = np.isfinite(multiplier)
    with np.errstate(invalid="ignore"):
        low = looks.value - multiplier * looks.se
        high = looks.value + multiplier * looks.se
        clears = usable & ((low > plan.threshold) | (high < plan.threshold))
    if clears.any():
        index = int(np.argmax(clears))
        return index, Interval(float(low[index]), float(high[index]))
    last = count - 1
    band = Interval(float(low[last]), float(high[last])) if usable[last] else UNREAD
    return -1, band


def stratified_looks(
    stratum_terms: Sequence[np.ndarray], topup_start: int = 0, labels: np.ndarray | None = None
) -> list[Look]:
    """`stratified_look_arrays` as `Look`s."""
    return stratified_look_arrays(stratum_terms, topup_start, labels).looks()


def stratified_look_arrays(
    stratum_terms: Sequence[np.ndarray], topup_start: int = 0, labels: np.ndarray | None = None
) -> LookArrays:
    """The stratified estimate (`estimation.sampling.arrivals.stratified_estimate`) after each
    draw from the top-up's first on, as looks: value, standard error and skewness, the draws since
    the top-up began (`topup_start` draws came before it), and the agreement of the first
    stratum's draws before the top-up with its draws since (nan below two on either side).
    `labels` (one per top-up draw): the labels counted at each look (default: the draws).

    Strata are suffixes of one run of draws, longest first (the first covers every draw), as in
    `stratified_estimate`; a look where some stratum has no draw yet has no value (an empty
    stratum may sit before one with draws). Every look is
    computed from running sums, all at once.
    """
    terms = [np.asarray(each, dtype=float) for each in stratum_terms]
    if not terms or any(each.ndim != 1 for each in terms):
        raise ValueError("give one 1-D array of terms per stratum")
    n = terms[0].size
    starts = [n - each.size for each in terms]
    # A stratum no draw could estimate yet (any position: an earlier arrival's may be emptied
    # while a later one has draws) leaves every look without a value, as `stratified_estimate`.
    drawn = [start for each, start in zip(terms, starts, strict=True) if each.size]
    if any(later < earlier for earlier, later in zip(drawn, drawn[1:], strict=False)):
        raise ValueError("a later stratum cannot have more draws than an earlier one")
    if not 0 <= topup_start <= n:
        raise ValueError(f"the top-up starts within the {n} draws, not at {topup_start}")
    k = np.arange(1, n - topup_start + 1)
    ends = topup_start + k
    aligned = [np.concatenate([np.zeros(start), each]) for each, start in zip(terms, starts, strict=True)]
    sizes = [np.maximum(ends - start, 0) for start in starts]
    with np.errstate(invalid="ignore", divide="ignore"):
        means = [
            _window(values, start, np.maximum(ends, start)) / size
            for values, start, size in zip(aligned, starts, sizes, strict=True)
        ]
        value = np.sum(means, axis=0)
        second, third = _central_sums(aligned, starts, ends, means, sizes)
        second = np.maximum(second, 0.0)
        shortest = np.min(sizes, axis=0)
        se = np.where(shortest >= 2, np.sqrt(ends / np.maximum(ends - 1, 1) * second), np.nan)
        skewness = np.where(second > 0, third / second**1.5, np.nan)
    value = np.where(shortest >= 1, value, np.nan)
    agreement = np.full(ends.size, np.nan)
    if topup_start >= 2:
        agreement = _agreements(aligned[0][:topup_start], aligned[0], topup_start, ends)
    counted = np.asarray(labels, dtype=np.int64)[k - 1] if labels is not None else k
    return LookArrays(value, se, k, skewness, agreement, counted)


def _central_sums(
    aligned: list[np.ndarray],
    starts: list[int],
    ends: np.ndarray,
    means: list[np.ndarray],
    sizes: list[np.ndarray],
) -> tuple[np.ndarray, np.ndarray]:
    """sum psi^2 and sum psi^3 per end, psi_j = sum over the strata covering draw j of
    (T^s_j - mean_s) / n_s, expanded into running sums of products (a stratum covers draws
    from its start, so a product of strata covers them from the latest start)."""
    strata = range(len(aligned))
    second = np.zeros(ends.size)
    third = np.zeros(ends.size)
    for s in strata:
        for t in strata:
            first = starts[max(s, t)]
            x, y, ms, mt = aligned[s], aligned[t], means[s], means[t]
            centred = (
                _window(x * y, first, ends)
                - ms * _window(y, first, ends)
                - mt * _window(x, first, ends)
                + (ends - first) * ms * mt
            )
            second += np.where(ends > first, centred / (sizes[s] * sizes[t]), 0.0)
            for u in strata:
                first = starts[max(s, t, u)]
                z, mu = aligned[u], means[u]
                centred = (
                    _window(x * y * z, first, ends)
                    - ms * _window(y * z, first, ends)
                    - mt * _window(x * z, first, ends)
                    - mu * _window(x * y, first, ends)
                    + ms * mt * _window(z, first, ends)
                    + ms * mu * _window(y, first, ends)
                    + mt * mu * _window(x, first, ends)
                    - (ends - first) * ms * mt * mu
                )
                third += np.where(ends > first, centred / (sizes[s] * sizes[t] * sizes[u]), 0.0)
    return second, third


def _window(values: np.ndarray, start: int, ends: np.ndarray) -> np.ndarray:
    """sum(values[start:end]) for each end, from one running sum."""
    running = np.concatenate([[0.0], np.cumsum(values)])
    return running[np.maximum(ends, start)] - running[start]


def _agreements(before: np.ndarray, aligned: np.ndarray, start: int, ends: np.ndarray) -> np.ndarray:
    """|mean(before) - mean(aligned[start:end])| in standard errors of their difference, per end
    (nan below two draws since `start`; 0 when both are exact and equal, inf when they differ)."""
    count = ends - start
    during = _window(aligned, start, ends)
    during_square = _window(aligned * aligned, start, ends)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = during / count
        variance = np.maximum(during_square - count * mean**2, 0.0) / (count - 1) / count
        gap = np.abs(float(before.mean()) - mean)
        total = float(before.var(ddof=1)) / before.size + variance
        result = np.where(total > 0, gap / np.sqrt(total), np.where(gap == 0, 0.0, np.inf))
    return np.where(count >= 2, result, np.nan)


__all__ = [
    "NOT_SETTLED",
    "PEEK",
    "QUESTIONS",
    "RULES",
    "UNCHANGED",
    "VERDICTS",
    "Look",
    "Reading",
    "VerdictPlan",
    "LookArrays",
    "decision",
    "first_verdict",
    "look_arrays",
    "look_problem",
    "readable",
    "read_look",
    "skewness_allowed",
    "stratified_look_arrays",
    "stratified_looks",
]
