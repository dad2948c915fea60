"""Release verdicts replayed the way a pipeline reads them: after every label of the top-up.

Each repetition spends ``budget`` labels on the pooled runs (as `estimation.simulation.arrivals`),
then the run arrives and up to ``topup`` top-up labels are drawn from the top-up design. After
each new label three rules are read (`estimation.sampling.sequences`):

- ``peek``: the fixed-sample 95 % t interval of the stratified estimate, read after every label,
  the verdict taken the first time it excludes 0 (what a naive pipeline does);
- ``anytime``: the anytime-valid 95 % confidence sequence, read after every label, the verdict
  taken the first time it excludes 0 (judging of the arrival may stop there);
- ``fixed``: the fixed-sample interval read once, when the top-up is spent.

Every rule here uses the untuned terms (the judge's control with weight 1, no power tuning), so
the three differ only in how they are read. A row per rule gives the shares of ``better``,
``worse`` and ``not_settled`` verdicts and the median number of top-up labels at which the
decided ones were taken. With equal runs (truth 0) every ``better`` or ``worse`` is wrong.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from estimation.formats.trec import Run
from estimation.judges.design import DEFAULT_SAFETY_SHARE, judged_parts
from estimation.sampling.sequences import MIN_ANYTIME_DRAWS, anytime_interval, fixed_interval, verdict
from estimation.simulation.arrivals import (
    ARRIVAL_STRATEGIES,
    ArrivalReplay,
    Draws,
    fresh_campaign,
    stored_campaign,
    topup_q,
)
from estimation.simulation.judged import draw_until

VERDICT_RULES = ("peek", "anytime", "fixed")


def equal_twin(
    qrels: Mapping[str, Mapping[str, int]],
    reference: Run,
    pooled: Sequence[Run],
    depth: int,
    *,
    share: float = 0.5,
    seed: int = 0,
    tag: str = "twin",
) -> Run:
    """A run exactly as good as `reference` on every topic of the qrels, with new documents: each
    of its top `depth` documents is, with probability `share`, swapped for a judged document of
    the same grade that no pooled run ranks within `depth` (when one is left), so every rank keeps
    its gain and the metric's truth difference is 0 while the top-up has new documents to judge.
    Documents below `depth` are kept."""
    rng = np.random.default_rng(seed)
    rankings: dict[str, tuple[str, ...]] = {}
    scores: dict[str, tuple[float, ...]] = {}
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
            pile = spare.get(int(grades.get(docno, 0)), [])
            if pile and rng.random() < share:
                twin[rank] = pile.pop()
        rankings[qid] = tuple(twin)
        count = len(twin)
        scores[qid] = tuple(float(count - rank) for rank in range(count))
    return Run(tag=tag, rankings=rankings, scores=scores)


@dataclass(frozen=True)
class VerdictRow:
    """One rule over the repetitions: how often each verdict came, and after how many labels."""

    strategy: str
    budget: int
    topup: int
    rule: str
    truth: float
    better: float
    worse: float
    not_settled: float
    median_labels: float  # of the decided repetitions (nan when none decided)
    n_repetitions: int


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
    for every k at once, from running sums (se nan below two top-up draws)."""
    old_terms = np.asarray(old_terms, dtype=float)
    new_terms = np.asarray(new_terms, dtype=float)
    k = np.arange(1, new_terms.size + 1)
    n = n_stored + k
    old_sum = np.cumsum(old_terms)[n - 1]
    old_square = np.cumsum(old_terms**2)[n - 1]
    topup_old = old_terms[n_stored:]
    new_sum, new_square = np.cumsum(new_terms), np.cumsum(new_terms**2)
    cross_old = np.cumsum(topup_old)
    cross = np.cumsum(topup_old * new_terms)
    old_mean, new_mean = old_sum / n, new_sum / k
    # sum psi^2 = sum (T^O - m_O)^2 / n^2 + sum_top (T^N - m_N)^2 / k^2
    #           + 2 sum_top (T^O - m_O)(T^N - m_N) / (n k)
    old_part = (old_square - n * old_mean**2) / n**2
    new_part = (new_square - k * new_mean**2) / k**2
    joint = (cross - old_mean * new_sum - new_mean * cross_old + k * old_mean * new_mean) / (n * k)
    total = np.maximum(old_part + new_part + 2 * joint, 0.0)
    with np.errstate(invalid="ignore", divide="ignore"):
        error = np.where(k >= 2, np.sqrt(n / (n - 1) * total), np.nan)
    return old_mean + new_mean, error


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
    min_draws: int = MIN_ANYTIME_DRAWS,
) -> list[VerdictRow]:
    """Rows ``peek``, ``anytime``, ``fixed`` for one strategy, stored budget and top-up
    (`min_draws`: top-up draws before the anytime sequence is read)."""
    if strategy not in ARRIVAL_STRATEGIES:
        raise ValueError(f"verdicts are replayed for {', '.join(ARRIVAL_STRATEGIES)}, not {strategy!r}")
    if strategy == "judged" and arrival.classes is None:
        raise ValueError("the judged strategy needs a judge's labels of the grown pool")
    if budget < 2 or topup < 2:
        raise ValueError("the stored budget and the top-up need at least two labels")
    old, new = arrival.old, arrival.new
    # Per rule: each repetition's verdict and the top-up label it came at.
    said = {rule: np.full(repetitions, "not_settled", dtype=object) for rule in VERDICT_RULES}
    when = {rule: np.full(repetitions, np.nan) for rule in VERDICT_RULES}
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
        value, error = prefix_estimates(old_terms, new_terms, stored.count)
        checks = _label_positions(units, stored_labels)
        _read(said, when, r, value, error, checks, topup, alpha, min_draws)
    return _rows(said, when, strategy, budget, topup, arrival.truth, repetitions)


def _read(
    said: dict[str, np.ndarray],
    when: dict[str, np.ndarray],
    r: int,
    value: np.ndarray,
    error: np.ndarray,
    checks: np.ndarray,
    t_opt: int,
    alpha: float,
    min_draws: int,
) -> None:
    """Repetition r's verdict by each rule: `value`, `error` after each draw, read at the draws
    `checks` that brought a new label (the fixed rule at the last one)."""
    for rule in ("peek", "anytime"):
        for label, position in enumerate(checks.tolist(), start=1):
            draws_made = position + 1
            if rule == "peek":
                interval = fixed_interval(value[position], error[position], draws_made, alpha=alpha)
            else:
                interval = anytime_interval(
                    value[position], error[position], draws_made, t_opt, alpha=alpha, min_draws=min_draws
                )
            decided = verdict(*interval)
            if decided != "not_settled":
                said[rule][r], when[rule][r] = decided, label
                break
    if checks.size:
        last = int(checks[-1])
        said["fixed"][r] = verdict(*fixed_interval(value[last], error[last], last + 1, alpha=alpha))
        when["fixed"][r] = checks.size if said["fixed"][r] != "not_settled" else np.nan


def _rows(
    said: dict[str, np.ndarray],
    when: dict[str, np.ndarray],
    strategy: str,
    budget: int,
    topup: int,
    truth: float,
    repetitions: int,
) -> list[VerdictRow]:
    rows = []
    for rule in VERDICT_RULES:
        decided = when[rule][np.isfinite(when[rule])]
        rows.append(
            VerdictRow(
                strategy=strategy,
                budget=budget,
                topup=topup,
                rule=rule,
                truth=truth,
                better=float(np.mean(said[rule] == "better")),
                worse=float(np.mean(said[rule] == "worse")),
                not_settled=float(np.mean(said[rule] == "not_settled")),
                median_labels=float(np.median(decided)) if decided.size else float("nan"),
                n_repetitions=repetitions,
            )
        )
    return rows


def replay_campaign_verdicts(
    arrival: ArrivalReplay,
    strategy: str,
    budget: int,
    repetitions: int,
    seed: int,
    *,
    alpha: float = 0.05,
    min_draws: int = MIN_ANYTIME_DRAWS,
) -> list[VerdictRow]:
    """The rules read after every label of a two-system campaign of `budget` labels (the arrival
    and its reference pooled from the start, the strategy's difference design): one stratum, so
    the estimate is the mean of its terms (`estimation.simulation.arrivals.fresh_campaign`)."""
    if strategy not in ARRIVAL_STRATEGIES or budget < 2:
        raise ValueError("a two-system campaign of items or judged, with at least two labels")
    everything = np.ones(arrival.target.size, dtype=bool)
    said = {rule: np.full(repetitions, "not_settled", dtype=object) for rule in VERDICT_RULES}
    when = {rule: np.full(repetitions, np.nan) for rule in VERDICT_RULES}
    for r in range(repetitions):
        labelled = np.zeros(arrival.target.size, dtype=bool)
        draws = fresh_campaign(arrival, strategy, budget, labelled, np.random.default_rng([seed, r, 3]))
        terms = _plain_terms(arrival, draws, everything)
        value, error = prefix_estimates(np.zeros(terms.size), terms, 0)
        units = np.concatenate(draws.units)
        checks = _label_positions(units, np.zeros_like(labelled))
        _read(said, when, r, value, error, checks, budget, alpha, min_draws)
    return _rows(said, when, strategy, 0, budget, arrival.truth, repetitions)


__all__ = [
    "VERDICT_RULES",
    "VerdictRow",
    "equal_twin",
    "prefix_estimates",
    "replay_campaign_verdicts",
    "replay_verdicts",
]
