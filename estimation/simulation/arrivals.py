"""Replayed campaigns in which a run arrives: stored draws on the pooled runs, then a top-up.

Each repetition first spends ``budget`` human labels on the pooled runs with the strategy's own
design for the campaign's goal (``items``: Schnabel et al.'s item design with its uniform floor
over the pooled runs' items; ``judged``: the judge-assisted design, one stage with an external
calibration, else two stages calibrated on the first, as `estimation.simulation.judged`). Then
the run arrives, the pool grows by its new items, and three answers to "arrival minus
reference" are scored against the qrels:

- ``reuse``: the stored draws only, as the app's "Evaluate a new run" does today (the new
  items were never drawable: their part is missing);
- ``fresh``: a new campaign over the grown pool spending only the top-up, same strategy, its
  goal the difference;
- ``topup``: the stored draws plus ``topup`` labels drawn from the top-up design, estimated
  with the stratified estimator (`estimation.sampling.arrivals`). With a judge, the top-up is
  designed with the calibration current when the run arrives (the external one, or one refitted
  on every stored label).

Budgets count distinct human labels (a drawn item already labelled is reused for free, as in
the app), one per item. Repetition r draws from ``numpy.random.default_rng([seed, r])``; every
top-up of a repetition continues the same stored campaign.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from estimation.formats.trec import Run
from estimation.judges.calibration import Calibration, fit_calibration, no_calibration
from estimation.judges.design import (
    DEFAULT_SAFETY_SHARE,
    judged_distribution,
    judged_estimate,
    judged_parts,
    tuned_terms,
)
from estimation.metrics.spec import Metric
from estimation.metrics.values import summarize_run
from estimation.sampling.arrivals import stratified_estimate, stratum_shares, topup_distribution
from estimation.sampling.items import ItemGoal, item_sampling_distribution, system_weights
from estimation.sampling.results import Estimate
from estimation.simulation.judged import FIRST_STAGE_SHARE, draw_until
from estimation.simulation.planner import Replay, accuracy, prepare_replay

ARRIVAL_KINDS = ("reuse", "fresh", "topup")
ARRIVAL_GOALS = {"one": 1, "difference": 2, "leaderboard": 1}


@dataclass(frozen=True, eq=False)
class ArrivalReplay:
    """The grown pool and its oracle: system 0 is the arriving run, systems 1.. the pooled runs
    in the order given (the stored phase's goal reads the first one or two of them).

    Attributes
    ----------
    replay : Replay
        `estimation.simulation.planner.prepare_replay` over the arrival and the pooled runs.
    goal : {"one", "difference", "leaderboard"}
        What the stored phase's design was made for (leaderboard: every pooled run).
    reference : int
        The reference's system index (a pooled run).
    truth : float
        metric(arrival) - metric(reference) over the qrels topics, as `evaluate` computes it.
    """

    replay: Replay
    goal: str
    reference: int
    truth: float
    weights: np.ndarray = field(init=False)  # (S, U): a_i(S) per system, flat over the pool's units

    def __post_init__(self) -> None:
        pool, metric = self.replay.pool, self.replay.metric
        weights = np.stack([system_weights(pool, metric, s).ravel() for s in range(pool.n_systems)])
        object.__setattr__(self, "weights", weights)

    @property
    def pooled(self) -> tuple[int, ...]:
        return tuple(range(1, self.replay.pool.n_systems))

    @property
    def old(self) -> np.ndarray:
        """Units some pooled run ranks: drawable before the run arrived."""
        return np.asarray((self.weights[1:] > 0).any(axis=0))

    @property
    def new(self) -> np.ndarray:
        """Units only the arriving run ranks."""
        return (self.weights[0] > 0) & ~self.old

    @property
    def target(self) -> np.ndarray:
        """a = a(arrival) - a(reference), flat."""
        return self.weights[0] - self.weights[self.reference]

    @property
    def human_gain(self) -> np.ndarray:
        return (self.replay.utility * float(self.replay.metric.gain_table().max())).ravel()

    @property
    def classes(self) -> np.ndarray | None:
        return None if self.replay.judge_classes is None else self.replay.judge_classes.ravel()

    @property
    def n_grades(self) -> int:
        return self.replay.metric.y_max + 1

    @property
    def unit_stratum(self) -> np.ndarray:
        """0 for the pooled runs' units, 1 for the arrival's new ones, -1 for units no run ranks."""
        return np.where(self.old, 0, np.where(self.new, 1, -1))

    @property
    def unit_classes(self) -> np.ndarray:
        """The judge's class of every unit (all 0 without a judge)."""
        return self.classes if self.classes is not None else np.zeros(self.old.size, dtype=np.int64)


@dataclass(frozen=True)
class ArrivalRow:
    """One (strategy, budget, topup, arrival kind): how its estimates of arrival minus reference
    did against the truth over the repetitions (columns as `estimation.simulation.planner.PlannerRow`)."""

    strategy: str
    budget: float
    topup: int
    arrival: str
    truth: float
    mean: float
    bias_se: float
    rmse: float
    coverage: float
    mean_width: float
    new_items: int
    n_repetitions: int


def prepare_arrival_replay(
    qrels: Mapping[str, Mapping[str, int]],
    pooled_runs: Sequence[Run],
    arrival: Run,
    reference: int,
    metric: Metric,
    goal: str,
    *,
    labels: Mapping[tuple[str, str], Sequence[float]] | None = None,
    judge: Mapping[tuple[str, str], tuple[int | None, Sequence[float] | None]] | None = None,
    judge_calibration: Calibration | None = None,
) -> ArrivalReplay:
    """The grown pool, its oracles and the truth; `reference` indexes `pooled_runs`."""
    if goal not in ARRIVAL_GOALS:
        raise ValueError(f"unknown goal {goal!r}; expected one of {', '.join(ARRIVAL_GOALS)}")
    if len(pooled_runs) < ARRIVAL_GOALS[goal]:
        raise ValueError(
            f"goal {goal} needs at least {ARRIVAL_GOALS[goal]} pooled run(s), got {len(pooled_runs)}"
        )
    if not 0 <= reference < len(pooled_runs):
        raise ValueError(f"the reference must be one of the {len(pooled_runs)} pooled runs")
    if not metric.is_linear_in_labels:
        raise ValueError(f"{metric}: arrivals are replayed at item level, which needs DCG@K")
    replay = prepare_replay(
        qrels,
        [arrival, *pooled_runs],
        metric,
        "one",
        labels=labels,
        judge=judge,
        judge_calibration=judge_calibration,
    )
    truth = (
        summarize_run(qrels, arrival, metric).mean - summarize_run(qrels, pooled_runs[reference], metric).mean
    )
    return ArrivalReplay(replay=replay, goal=goal, reference=reference + 1, truth=float(truth))


@dataclass
class Draws:
    """A campaign's draws in order: the unit, its propensity, and the calibration it was drawn with."""

    units: list[np.ndarray] = field(default_factory=list)
    propensities: list[np.ndarray] = field(default_factory=list)
    controls: list[np.ndarray] = field(default_factory=list)  # h of every unit, one array per phase

    def add(self, units: np.ndarray, q: np.ndarray, control: np.ndarray) -> None:
        self.units.append(units)
        self.propensities.append(q[units])
        self.controls.append(control)

    def extended(self, units: np.ndarray, q: np.ndarray, control: np.ndarray) -> Draws:
        """A copy with one more phase (the stored campaign stays as it was for the next top-up)."""
        copy = Draws(list(self.units), list(self.propensities), list(self.controls))
        copy.add(units, q, control)
        return copy

    def stratum_terms(self, arrival: ArrivalReplay, stratum: np.ndarray, first_phase: int = 0) -> np.ndarray:
        """Tuned T^j of the draws from `first_phase` on, for the units of `stratum` (module docstring
        of `estimation.sampling.arrivals`)."""
        target = arrival.target * stratum
        gain = arrival.human_gain
        plain, controls = [], []
        for units, q, h in zip(
            self.units[first_phase:],
            self.propensities[first_phase:],
            self.controls[first_phase:],
            strict=True,
        ):
            y, x = judged_parts(float(target @ h), target[units], gain[units], h[units], q)
            plain.append(y)
            controls.append(x)
        return tuned_terms(np.concatenate(plain), np.concatenate(controls))

    @property
    def count(self) -> int:
        return sum(units.size for units in self.units)


def _stored_importance(arrival: ArrivalReplay) -> tuple[np.ndarray, np.ndarray]:
    """(|a| of the stored phase's goal, w = the summed |a| of the pooled runs)."""
    weights = arrival.weights
    first = arrival.pooled[0]
    if arrival.goal == "one":
        importance = np.abs(weights[first])
    elif arrival.goal == "difference":
        importance = np.abs(weights[first] - weights[first + 1])
    else:
        importance = np.abs(weights[1:]).sum(axis=0)
    return importance, np.abs(weights[1:]).sum(axis=0)


def stored_items(
    arrival: ArrivalReplay, budget: int, labelled: np.ndarray, rng: np.random.Generator
) -> Draws:
    replay = arrival.replay
    first = arrival.pooled[0]
    designs: dict[str, tuple[ItemGoal, tuple[int, ...]]] = {
        "one": ("one", (first,)),
        "difference": ("difference", (first, first + 1)),
        "leaderboard": ("absolute", arrival.pooled),
    }
    goal, systems = designs[arrival.goal]
    q = item_sampling_distribution(
        replay.pool,
        replay.metric,
        goal,
        systems,
        floor_systems=arrival.pooled,
    ).q.ravel()
    draws = Draws()
    draws.add(draw_until(q, budget, labelled, rng), q, np.zeros(q.size))
    return draws


def stored_judged(
    arrival: ArrivalReplay, budget: int, labelled: np.ndarray, rng: np.random.Generator
) -> tuple[Draws, Calibration]:
    classes = arrival.classes
    assert classes is not None
    importance, weight = _stored_importance(arrival)
    draws = Draws()
    calibration = arrival.replay.judge_calibration
    if calibration is None:  # internal: a first stage without a model, then calibrate on it
        first_q = judged_distribution(importance, np.ones(importance.size), weight).q
        first_budget = min(budget, max(2, int(round(budget * FIRST_STAGE_SHARE))))
        draws.add(draw_until(first_q, first_budget, labelled, rng), first_q, np.zeros(first_q.size))
        calibration = fitted_calibration(arrival, labelled)
    q = judged_distribution(importance, calibration.sigma(classes), weight).q
    draws.add(draw_until(q, budget - int(labelled.sum()), labelled, rng), q, calibration.h(classes))
    return draws, calibration


def stored_campaign(
    arrival: ArrivalReplay, strategy: str, budget: int, labelled: np.ndarray, rng: np.random.Generator
) -> tuple[Draws, Calibration]:
    """One repetition's stored phase, and the calibration the run's top-up is designed with (none
    for items; the external one, or one refitted on every stored label, for judged)."""
    return arrival_strategy(strategy, arrival).stored(arrival, budget, labelled, rng)


def _stored_items_phase(
    arrival: ArrivalReplay, budget: int, labelled: np.ndarray, rng: np.random.Generator
) -> tuple[Draws, Calibration]:
    return stored_items(arrival, budget, labelled, rng), no_calibration(arrival.n_grades)


def _stored_judged_phase(
    arrival: ArrivalReplay, budget: int, labelled: np.ndarray, rng: np.random.Generator
) -> tuple[Draws, Calibration]:
    stored, calibration = stored_judged(arrival, budget, labelled, rng)
    if arrival.replay.judge_calibration is None:
        calibration = fitted_calibration(arrival, labelled)
    return stored, calibration


def topup_q(
    arrival: ArrivalReplay, calibration: Calibration, stored_draws: int, topup: int, safety_share: float
) -> np.ndarray:
    """The top-up design over the grown pool (`estimation.sampling.arrivals.topup_distribution`),
    the floor over every run of it."""
    return topup_distribution(
        np.abs(arrival.target),
        calibration.sigma(arrival.unit_classes),
        np.abs(arrival.weights).sum(axis=0),
        stratum_shares(arrival.unit_stratum, [stored_draws], topup),
        safety_share=safety_share,
    ).q


def fitted_calibration(arrival: ArrivalReplay, labelled: np.ndarray) -> Calibration:
    assert arrival.classes is not None
    items = np.flatnonzero(labelled)
    return fit_calibration(
        arrival.classes[items], arrival.human_gain[items], n_grades=arrival.n_grades, source="internal"
    )


def _triple(estimate: Estimate) -> tuple[float, float, float]:
    """(value, low, high)."""
    return estimate.value, estimate.low, estimate.high


def _fresh(
    arrival: ArrivalReplay, strategy: str, topup: int, rng: np.random.Generator, confidence: float
) -> tuple[float, float, float]:
    """A new difference campaign of `topup` labels over the grown pool."""
    labelled = np.zeros(arrival.target.size, dtype=bool)
    draws = fresh_campaign(arrival, strategy, topup, labelled, rng)
    everything = np.ones(arrival.target.size, dtype=bool)
    terms = draws.stratum_terms(arrival, everything)
    return _triple(judged_estimate(terms, confidence=confidence, n_judged=int(labelled.sum())))


def fresh_items(arrival: ArrivalReplay, labels: int, labelled: np.ndarray, rng: np.random.Generator) -> Draws:
    """A two-system campaign of `labels` labels with the item design for the difference."""
    replay = arrival.replay
    q = item_sampling_distribution(replay.pool, replay.metric, "difference", (0, arrival.reference)).q.ravel()
    draws = Draws()
    draws.add(draw_until(q, labels, labelled, rng), q, np.zeros(q.size))
    return draws


def fresh_judged(
    arrival: ArrivalReplay, labels: int, labelled: np.ndarray, rng: np.random.Generator
) -> Draws:
    """A two-system campaign of `labels` labels with the judged design for the difference (a first
    stage without the judge when its calibration is fitted on the campaign's own labels)."""
    target = arrival.target
    draws = Draws()
    classes = arrival.classes
    assert classes is not None
    importance = np.abs(target)
    weight = np.abs(arrival.weights[0]) + np.abs(arrival.weights[arrival.reference])
    calibration = arrival.replay.judge_calibration
    if calibration is None:
        first_q = judged_distribution(importance, np.ones(target.size), weight).q
        first_budget = min(labels, max(2, int(round(labels * FIRST_STAGE_SHARE))))
        draws.add(draw_until(first_q, first_budget, labelled, rng), first_q, np.zeros(target.size))
        calibration = fitted_calibration(arrival, labelled)
    q = judged_distribution(importance, calibration.sigma(classes), weight).q
    draws.add(draw_until(q, labels - int(labelled.sum()), labelled, rng), q, calibration.h(classes))
    return draws


def fresh_campaign(
    arrival: ArrivalReplay, strategy: str, labels: int, labelled: np.ndarray, rng: np.random.Generator
) -> Draws:
    """The draws of a two-system campaign of `labels` labels, the arrival minus its reference over
    the grown pool, with the strategy's difference design (`labelled` is updated)."""
    return arrival_strategy(strategy, arrival).fresh(arrival, labels, labelled, rng)


_Phase = Callable[[ArrivalReplay, int, np.ndarray, np.random.Generator], tuple[Draws, Calibration]]
_Fresh = Callable[[ArrivalReplay, int, np.ndarray, np.random.Generator], Draws]


@dataclass(frozen=True)
class ArrivalStrategy:
    """A strategy the arrival replays run: how its stored phase is drawn (with the calibration its
    top-up is designed with), how a fresh two-system campaign of it is drawn, and whether it needs
    a judge's labels of the grown pool. The replays and the command line ask it, never its name."""

    name: str
    stored: _Phase
    fresh: _Fresh
    needs_judge: bool = False


ARRIVAL_STRATEGIES: dict[str, ArrivalStrategy] = {
    strategy.name: strategy
    for strategy in (
        ArrivalStrategy("items", _stored_items_phase, fresh_items),
        ArrivalStrategy("judged", _stored_judged_phase, fresh_judged, needs_judge=True),
    )
}
"""The item-level strategies whose arrivals are replayed, by name."""


def arrival_strategy(name: str, arrival: ArrivalReplay | None = None) -> ArrivalStrategy:
    """The replayed strategy `name`; ValueError for another, or (given the arrival) for one that
    needs a judge's labels the replay does not have."""
    strategy = ARRIVAL_STRATEGIES.get(name)
    if strategy is None:
        raise ValueError(f"arrivals are replayed for {', '.join(ARRIVAL_STRATEGIES)}, not {name!r}")
    if arrival is not None and strategy.needs_judge and arrival.classes is None:
        raise ValueError(f"the {name} strategy needs a judge's labels of the grown pool (--judge)")
    return strategy


def replay_arrival(
    arrival: ArrivalReplay,
    strategy: str,
    budget: int,
    topups: Sequence[int],
    repetitions: int,
    seed: int,
    *,
    confidence: float = 0.95,
    safety_share: float = DEFAULT_SAFETY_SHARE,
) -> list[ArrivalRow]:
    """Rows ``reuse``, ``fresh``, ``topup`` per top-up size, for one strategy and stored budget."""
    arrival_strategy(strategy, arrival)
    if budget < 2 or any(topup < 2 for topup in topups):
        raise ValueError("the stored budget and every top-up need at least two labels")
    old, new = arrival.old, arrival.new
    results = {(topup, kind): np.full((3, repetitions), np.nan) for topup in topups for kind in ARRIVAL_KINDS}
    for r in range(repetitions):
        rng = np.random.default_rng([seed, r])
        stored_labels = np.zeros(old.size, dtype=bool)
        stored, calibration = stored_campaign(arrival, strategy, budget, stored_labels, rng)
        reuse = _triple(
            judged_estimate(
                stored.stratum_terms(arrival, old), confidence=confidence, n_judged=int(stored_labels.sum())
            )
        )
        for topup in topups:
            results[topup, "reuse"][:, r] = reuse
            q = topup_q(arrival, calibration, stored.count, topup, safety_share)
            labelled = stored_labels.copy()
            draws = stored.extended(
                draw_until(q, topup, labelled, np.random.default_rng([seed, r, 1])),
                q,
                calibration.h(arrival.unit_classes),
            )
            terms = [
                draws.stratum_terms(arrival, old),
                draws.stratum_terms(arrival, new, first_phase=len(draws.units) - 1),
            ]
            results[topup, "topup"][:, r] = _triple(
                stratified_estimate(terms, confidence=confidence, n_judged=int(labelled.sum()))
            )
            results[topup, "fresh"][:, r] = _fresh(
                arrival, strategy, topup, np.random.default_rng([seed, r, 2]), confidence
            )
    scale = arrival.replay.scale
    rows = []
    for topup in topups:
        for kind in ARRIVAL_KINDS:
            estimates, lows, highs = results[topup, kind] * scale
            summary = accuracy(estimates, lows, highs, arrival.truth)
            rows.append(
                ArrivalRow(
                    strategy=strategy,
                    budget=float(budget),
                    topup=int(topup),
                    arrival=kind,
                    truth=arrival.truth,
                    mean=summary.mean,
                    bias_se=summary.bias_se,
                    rmse=summary.rmse,
                    coverage=summary.coverage,
                    mean_width=summary.mean_width,
                    new_items=int(new.sum()),
                    n_repetitions=repetitions,
                )
            )
    return rows


__all__ = [
    "ARRIVAL_GOALS",
    "ARRIVAL_KINDS",
    "ARRIVAL_STRATEGIES",
    "ArrivalReplay",
    "ArrivalRow",
    "ArrivalStrategy",
    "arrival_strategy",
    "fresh_items",
    "fresh_judged",
    "Draws",
    "fitted_calibration",
    "fresh_campaign",
    "stored_campaign",
    "stored_items",
    "stored_judged",
    "topup_q",
    "prepare_arrival_replay",
    "replay_arrival",
]
