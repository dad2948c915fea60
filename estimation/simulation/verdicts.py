"""Release verdicts replayed the way a pipeline reads them: after every label of the top-up.

Each repetition spends ``budget`` labels on the pooled runs (as `estimation.simulation.arrivals`),
then the run arrives and up to ``topup`` top-up labels are drawn from the top-up design. After
each new label every rule is read by the app's own reading (`estimation.sampling.verdicts`:
`stratified_look_arrays`, `decision`), its horizon the top-up:

- ``peek``: the fixed-sample 95 % t interval of the stratified estimate, read after every label,
  the verdict taken the first time it clears the threshold (what a naive pipeline does);
- ``sequential``: the group-sequential boundary spread over the top-up, read after every label;
- ``anytime``: the open-ended 95 % confidence sequence, read after every label;
- ``fixed``: the fixed-sample interval read once, when the top-up is spent.

Every rule here uses the untuned terms (the judge's control with weight 1, no power tuning), so
they differ only in how they are read. A row per rule gives the shares of each verdict (for the
question asked: better/worse, not_worse/worse, better/not_better) and the median number of
top-up labels at which the decided ones were taken. With equal runs (truth 0) and the question
``difference`` every ``better`` or ``worse`` is wrong. `replay_term_verdicts` reads the same rules
on terms a scenario draws directly (the synthetic rare-large-terms scenario of
`rare_large_terms`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from estimation.formats.trec import Run
from estimation.judges.design import DEFAULT_SAFETY_SHARE, judged_parts
from estimation.sampling.verdicts import (
    PEEK,
    QUESTIONS,
    RULES,
    LookArrays,
    VerdictPlan,
    decision,
    stratified_look_arrays,
)
from estimation.simulation.arrivals import (
    ArrivalReplay,
    Draws,
    arrival_strategy,
    fresh_campaign,
    stored_campaign,
    topup_q,
)
from estimation.simulation.judged import draw_until

VERDICT_RULES = (PEEK, *RULES)
"""The rules a replay reads: the naive peek, then the offered ones."""


def equal_twin(
    qrels: Mapping[str, Mapping[str, int]],
    reference: Run,
    pooled: Sequence[Run],
    depth: int,
    *,
    share: float = 0.5,
    seed: int = 0,
    tag: str = "twin",
    grade: int | None = None,
    limit: int | None = None,
) -> Run:
    """A run exactly as good as `reference` on every topic of the qrels, with new documents: each
    of its top `depth` documents is, with probability `share`, swapped for a judged document of
    the same grade that no pooled run ranks within `depth` (when one is left), so every rank keeps
    its gain and the metric's truth difference is 0 while the top-up has new documents to judge.
    With `grade`, only documents of that grade are swapped, at most `limit` in all (topics in
    the run's order): a few new documents of the top grade make the rare, large terms of importance
    sampling. Documents below `depth` are kept."""
    rng = np.random.default_rng(seed)
    rankings: dict[str, tuple[str, ...]] = {}
    scores: dict[str, tuple[float, ...]] = {}
    left = limit if limit is not None else -1
    for qid, documents in reference.rankings.items():
        grades = qrels.get(qid, {})
        pooled_top = {docno for run in pooled for docno in run.rankings.get(qid, ())[:depth]}
        spare: dict[int, list[str]] = {}
        for docno in sorted(grades):
            if docno not in pooled_top and docno not in documents:
                spare.setdefault(int(grades[docno]), []).append(docno)
        for pile in spare.values():
            rng.shuffle(pile)
        twin = list(documents)
        for rank, docno in enumerate(documents[:depth]):
            own = int(grades.get(docno, 0))
            pile = spare.get(own, [])
            if grade is not None and own != grade:
                continue
            if pile and left != 0 and rng.random() < share:
                twin[rank] = pile.pop()
                left -= 1
        rankings[qid] = tuple(twin)
        count = len(twin)
        scores[qid] = tuple(float(count - rank) for rank in range(count))
    return Run(tag=tag, rankings=rankings, scores=scores)


@dataclass(frozen=True)
class VerdictRow:
    """One rule over the repetitions: how often each verdict came, and after how many labels.
    `above` and `below` are the question's two verdicts (better/worse for ``difference``)."""

    strategy: str
    budget: int
    topup: int
    rule: str
    truth: float
    above: float
    below: float
    not_settled: float
    median_labels: float  # of the decided repetitions (nan when none decided)
    n_repetitions: int
    question: str = "difference"
    margin: float = 0.0

    @property
    def better(self) -> float:
        """The share of the upper verdict (better, not_worse)."""
        return self.above

    @property
    def worse(self) -> float:
        """The share of the lower verdict (worse, not_better)."""
        return self.below

    @property
    def wrong(self) -> float:
        """The share of verdicts on the wrong side of the threshold given the truth (both sides
        when the truth is the threshold itself)."""
        threshold = VerdictPlan(question=self.question, margin=self.margin).threshold
        if self.truth > threshold:
            return self.below
        if self.truth < threshold:
            return self.above
        return self.above + self.below


def _plain_terms(
    arrival: ArrivalReplay, draws: Draws, stratum: np.ndarray, first_phase: int = 0
) -> np.ndarray:
    """Untuned T^j (weight 1 on the control) of the draws from `first_phase` on."""
    target = arrival.target * stratum
    gain = arrival.human_gain
    terms = []
    for units, q, h in zip(
        draws.units[first_phase:], draws.propensities[first_phase:], draws.controls[first_phase:], strict=True
    ):
        plain, control = judged_parts(float(target @ h), target[units], gain[units], h[units], q)
        terms.append(plain - control)
    return np.concatenate(terms) if terms else np.zeros(0)


def _label_positions(units: np.ndarray, labelled_before: np.ndarray) -> np.ndarray:
    """The draw index (0-based) at which each new label came, in order."""
    seen = labelled_before.copy()
    positions = []
    for index, unit in enumerate(units.tolist()):
        if not seen[unit]:
            seen[unit] = True
            positions.append(index)
    return np.asarray(positions, dtype=np.int64)


def prefix_estimates(
    old_terms: np.ndarray, new_terms: np.ndarray, n_stored: int
) -> tuple[np.ndarray, np.ndarray]:
    """(value, standard error) of the two-stratum estimate after each top-up draw k = 1..n1:
    `estimation.sampling.arrivals.stratified_estimate([old_terms[:n_stored + k], new_terms[:k]])`
    for every k at once (se nan below two top-up draws)."""
    looks = _looks(old_terms, new_terms, n_stored)
    return looks.value, looks.se


def _looks(old_terms: np.ndarray, new_terms: np.ndarray, n_stored: int) -> LookArrays:
    """The two-stratum looks after each top-up draw."""
    old_terms = np.asarray(old_terms, dtype=float)[: n_stored + len(new_terms)]
    return stratified_look_arrays([old_terms, np.asarray(new_terms, dtype=float)], n_stored)


def _plans(horizon: float, question: str, margin: float, alpha: float) -> dict[str, VerdictPlan]:
    horizon = max(float(horizon), 1.0)
    return {
        rule: VerdictPlan(rule=rule, horizon=horizon, question=question, margin=margin, alpha=alpha)
        for rule in VERDICT_RULES
    }


class _Tally:
    """Each repetition's verdict and the top-up label it came at, per rule."""

    def __init__(self, repetitions: int) -> None:
        self.said = {rule: np.full(repetitions, "not_settled", dtype=object) for rule in VERDICT_RULES}
        self.when = {rule: np.full(repetitions, np.nan) for rule in VERDICT_RULES}

    def read(
        self, r: int, plans: dict[str, VerdictPlan], looks: LookArrays, checks: np.ndarray, scale: float
    ) -> None:
        """Repetition r: the looks after each draw, read at the draws `checks` that brought a new
        label (0-based), the top-up over after the last one; values in metric units (`scale`)."""
        read = looks.at(np.asarray(checks, dtype=np.int64))
        read = LookArrays(
            read.value * scale,
            read.se * scale,
            read.draws,
            read.skewness,
            read.agreement,
            np.arange(1, read.value.size + 1),
        )
        for rule, plan in plans.items():
            index, band = decision(plan, read, over=True)
            if index >= 0:
                above, below = plan.verdict_names
                self.said[rule][r] = above if band.low > plan.threshold else below
                self.when[rule][r] = read.labels[index]
            else:
                self.said[rule][r] = "not_settled"

    def rows(
        self, plans: dict[str, VerdictPlan], strategy: str, budget: int, topup: int, truth: float
    ) -> list[VerdictRow]:
        rows = []
        for rule, plan in plans.items():
            above, below = plan.verdict_names
            said, when = self.said[rule], self.when[rule]
            decided = when[np.isfinite(when)]
            rows.append(
                VerdictRow(
                    strategy=strategy,
                    budget=budget,
                    topup=topup,
                    rule=rule,
                    truth=truth,
                    above=float(np.mean(said == above)),
                    below=float(np.mean(said == below)),
                    not_settled=float(np.mean(said == "not_settled")),
                    median_labels=float(np.median(decided)) if decided.size else float("nan"),
                    n_repetitions=said.size,
                    question=plan.question,
                    margin=plan.margin,
                )
            )
        return rows


def replay_verdicts(
    arrival: ArrivalReplay,
    strategy: str,
    budget: int,
    topup: int,
    repetitions: int,
    seed: int,
    *,
    alpha: float = 0.05,
    safety_share: float = DEFAULT_SAFETY_SHARE,
    question: str = "difference",
    margin: float = 0.0,
) -> list[VerdictRow]:
    """A row per rule (`VERDICT_RULES`) for one strategy, stored budget and top-up; the question
    and its margin (metric units) as a `VerdictPlan` takes them, the horizon the top-up."""
    arrival_strategy(strategy, arrival)
    if budget < 2 or topup < 2:
        raise ValueError("the stored budget and the top-up need at least two labels")
    if question not in QUESTIONS:
        raise ValueError(f"unknown question {question!r}")
    old, new = arrival.old, arrival.new
    plans = _plans(topup, question, margin, alpha)
    tally = _Tally(repetitions)
    for r in range(repetitions):
        rng = np.random.default_rng([seed, r])
        stored_labels = np.zeros(old.size, dtype=bool)
        stored, calibration = stored_campaign(arrival, strategy, budget, stored_labels, rng)
        q = topup_q(arrival, calibration, stored.count, topup, safety_share)
        labelled = stored_labels.copy()
        units = draw_until(q, topup, labelled, np.random.default_rng([seed, r, 1]))
        draws = stored.extended(units, q, calibration.h(arrival.unit_classes))
        old_terms = _plain_terms(arrival, draws, old)
        new_terms = _plain_terms(arrival, draws, new, first_phase=len(draws.units) - 1)
        looks = _looks(old_terms, new_terms, stored.count)
        tally.read(r, plans, looks, _label_positions(units, stored_labels), arrival.replay.scale)
    return tally.rows(plans, strategy, budget, topup, arrival.truth)


def replay_campaign_verdicts(
    arrival: ArrivalReplay,
    strategy: str,
    budget: int,
    repetitions: int,
    seed: int,
    *,
    alpha: float = 0.05,
    question: str = "difference",
    margin: float = 0.0,
) -> list[VerdictRow]:
    """The rules read after every label of a two-system campaign of `budget` labels (the arrival
    and its reference pooled from the start, the strategy's difference design): one stratum, so
    the estimate is the mean of its terms (`estimation.simulation.arrivals.fresh_campaign`)."""
    arrival_strategy(strategy, arrival)
    if budget < 2:
        raise ValueError("a two-system campaign needs at least two labels")
    everything = np.ones(arrival.target.size, dtype=bool)
    plans = _plans(budget, question, margin, alpha)
    tally = _Tally(repetitions)
    for r in range(repetitions):
        labelled = np.zeros(arrival.target.size, dtype=bool)
        draws = fresh_campaign(arrival, strategy, budget, labelled, np.random.default_rng([seed, r, 3]))
        looks = stratified_look_arrays([_plain_terms(arrival, draws, everything)])
        units = np.concatenate(draws.units)
        checks = _label_positions(units, np.zeros_like(labelled))
        tally.read(r, plans, looks, checks, arrival.replay.scale)
    return tally.rows(plans, strategy, 0, budget, arrival.truth)


def rare_large_terms(
    rng: np.random.Generator, draws: int, *, share: float = 1 / 7, large: float = 6.0, noise: float = 0.0
) -> np.ndarray:
    """Terms of a difference whose truth is 0 but whose evidence comes in rare, large pieces: each
    draw picks, with probability `share`, a document worth `large` (its label is the evidence),
    else one worth a small negative amount, so that the mean is exactly 0 (the many documents the
    other run ranks higher); `noise` (a share of that small amount) blurs the small terms. Most
    runs of a few draws hold no large term at all, and their spread then says nothing of the
    estimate's error: without noise every term is alike and no rule reads them; with noise they
    look like an ordinary, precise estimate below 0."""
    if not 0 < share < 1 or not large > 0 or noise < 0:
        raise ValueError("need 0 < share < 1, large > 0 and noise >= 0")
    small = -large * share / (1 - share)
    picked = rng.random(draws) < share
    return np.where(picked, large, small) + rng.normal(0.0, abs(small) * noise, draws)


def replay_term_verdicts(
    draw_terms: Callable[[np.random.Generator, int], np.ndarray],
    horizon: int,
    repetitions: int,
    seed: int,
    *,
    truth: float = 0.0,
    alpha: float = 0.05,
    question: str = "difference",
    margin: float = 0.0,
) -> list[VerdictRow]:
    """The rules read after every draw of terms `draw_terms(rng, horizon)` gives (one stratum: a
    two-system campaign whose estimate is the mean of its terms), `truth` their mean."""
    if horizon < 2:
        raise ValueError("the horizon needs at least two draws")
    plans = _plans(horizon, question, margin, alpha)
    tally = _Tally(repetitions)
    for r in range(repetitions):
        terms = np.asarray(draw_terms(np.random.default_rng([seed, r]), horizon), dtype=float)
        looks = stratified_look_arrays([terms])
        tally.read(r, plans, looks, np.arange(terms.size), 1.0)
    return tally.rows(plans, "terms", 0, horizon, truth)


__all__ = [
    "VERDICT_RULES",
    "VerdictRow",
    "equal_twin",
    "prefix_estimates",
    "rare_large_terms",
    "replay_campaign_verdicts",
    "replay_term_verdicts",
    "replay_verdicts",
]
