"""Replayed campaigns of the judged design: a judge labelled the pool, humans label a sample.

Two variants, as the method notes describe them:

- external calibration (fitted before the campaign, e.g. on the same judge's labels of other
  topics): one stage, q fixed, draws with replacement until the budget of distinct human labels
  is spent (the stopping rule of `estimation.sampling.budget_loop`, through the batch kernels,
  so repetition r shares its uniforms with the ``items`` strategy's repetition r);
- internal calibration (no external set): stage 1 spends about a third of the budget on the
  no-model design q proportional to w; each stage-1 term uses the calibration fitted on the
  other fold (two folds by draw parity); stage 2 draws from the mixture design with the
  calibration fitted on all stage-1 items; `estimation.judges.design.two_stage_estimate`
  combines them. A label bought in stage 1 is reused for free when stage 2 draws the item again.

Budgets count distinct human labels (cost 1 per item; item costs enter the design as
1/sqrt(c) but this replay charges 1 per label, like the CLI's default).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from estimation.judges.calibration import Calibration, cross_fitted_residuals, fit_calibration
from estimation.judges.design import (
    DEFAULT_SAFETY_SHARE,
    judged_distribution,
    judged_terms,
    two_stage_estimate,
)
from estimation.sampling.budget_loop import draw_units
from estimation.sampling.intervals import t_interval
from estimation.simulation.kernels import mean_reduce, run_batches

FIRST_STAGE_SHARE = 1 / 3
"""Share of the budget the internal calibration's first stage spends (n1 ~ n / 3)."""


@dataclass(frozen=True, eq=False)
class JudgedReplay:
    """One target of a replayed judged campaign, as flat arrays over the pool's (topic, slot) units.

    Attributes
    ----------
    target : ndarray, shape (U,)
        a_i (one system) or a_i(s1) - a_i(s2) (a difference).
    no_model_weight : ndarray, shape (U,)
        w_i: the summed |a_i(s)| of the target systems.
    human_gain : ndarray, shape (U,)
        G(y_i) from the qrels (the oracle).
    classes : ndarray of int, shape (U,)
        The judge's class per unit (`estimation.judges.calibration.judge_classes`).
    n_grades : int
    n_slots : int
        Slots per topic (units are ``topic * n_slots + slot``).
    """

    target: np.ndarray
    no_model_weight: np.ndarray
    human_gain: np.ndarray
    classes: np.ndarray
    n_grades: int
    n_slots: int

    @property
    def truth(self) -> float:
        return float(self.target @ self.human_gain)

    def design(self, calibration: Calibration, safety_share: float) -> np.ndarray:
        """q of the judged design under `calibration`, shape (U,)."""
        return judged_distribution(
            np.abs(self.target),
            calibration.sigma(self.classes),
            self.no_model_weight,
            safety_share=safety_share,
        ).q


# Per budget: estimates, lows, highs, topics judged, spent (each shape (R,)), as the planner's.
Outcome = tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]


def replay_external(
    replay: JudgedReplay,
    calibration: Calibration,
    budgets: np.ndarray,
    repetitions: int,
    seed: int,
    *,
    confidence: float = 0.95,
    safety_share: float = DEFAULT_SAFETY_SHARE,
) -> list[Outcome]:
    """One-stage campaigns with a calibration fixed before them."""
    control = calibration.h(replay.classes)
    q = replay.design(calibration, safety_share)
    offset = float(replay.target @ control)
    terms = np.zeros((q.size, 1))
    drawable = q > 0
    terms[drawable, 0] = judged_terms(
        offset, replay.target[drawable], replay.human_gain[drawable], control[drawable], q[drawable]
    )
    shape = (len(budgets), repetitions)
    estimates, lows, highs, topics, spent = (np.zeros(shape) for _ in range(5))
    unit_cost = np.ones(q.size)
    for r in range(repetitions):
        stats, n_draws, _, spent_r = run_batches(
            q=q,
            unit_cost=unit_cost,
            budgets=np.asarray(budgets, dtype=float),
            n_repetitions=1,
            max_draws=None,
            rng=np.random.default_rng([seed, r]),
            reduce=lambda draws, taken: mean_reduce(draws, taken, terms),
            width=1,
        )
        estimate, error = stats[0][:, 0, 0], stats[1][:, 0, 0]
        low, high = t_interval(estimate, error, n_draws[:, 0] - 1, confidence)
        estimates[:, r], lows[:, r], highs[:, r] = estimate, low, high
        spent[:, r] = spent_r[:, 0]
        topics[:, r] = _topics_judged(q, n_draws[:, 0], seed, r, replay.n_slots)
    return [(estimates[b], lows[b], highs[b], topics[b], spent[b]) for b in range(len(budgets))]


def replay_internal(
    replay: JudgedReplay,
    budgets: np.ndarray,
    repetitions: int,
    seed: int,
    *,
    confidence: float = 0.95,
    safety_share: float = DEFAULT_SAFETY_SHARE,
) -> list[Outcome]:
    """Two-stage campaigns calibrated on their own first stage (cross-fitted)."""
    shape = (len(budgets), repetitions)
    estimates, lows, highs, topics, spent = (np.zeros(shape) for _ in range(5))
    first_q = replay.no_model_weight / replay.no_model_weight.sum()
    for b, budget in enumerate(budgets):
        labels = int(np.floor(budget + 1e-9))
        first_budget = max(2, int(round(labels * FIRST_STAGE_SHARE)))
        for r in range(repetitions):
            rng = np.random.default_rng([seed, r])
            labelled = np.zeros(first_q.size, dtype=bool)
            first = _draw_until(first_q, min(first_budget, labels), labelled, rng)
            first_terms = _first_stage_terms(replay, first, first_q)
            items = np.flatnonzero(labelled)
            calibration = fit_calibration(
                replay.classes[items], replay.human_gain[items], n_grades=replay.n_grades, source="internal"
            )
            control = calibration.h(replay.classes)
            q = replay.design(calibration, safety_share)
            second = _draw_until(q, labels - int(labelled.sum()), labelled, rng)
            offset = float(replay.target @ control)
            second_terms = judged_terms(
                offset, replay.target[second], replay.human_gain[second], control[second], q[second]
            )
            estimate = two_stage_estimate(
                first_terms, second_terms, confidence=confidence, n_judged=int(labelled.sum())
            )
            estimates[b, r], lows[b, r], highs[b, r] = estimate.value, estimate.low, estimate.high
            spent[b, r] = labelled.sum()
            topics[b, r] = np.unique(np.flatnonzero(labelled) // replay.n_slots).size
    return [(estimates[b], lows[b], highs[b], topics[b], spent[b]) for b in range(len(budgets))]


def _first_stage_terms(replay: JudgedReplay, draws: np.ndarray, q: np.ndarray) -> np.ndarray:
    """Stage-1 terms, each with the calibration fitted on the other fold's draws."""
    if draws.size == 0:
        return np.zeros(0)
    folds = np.arange(draws.size) % 2
    for_fold = cross_fitted_residuals(
        replay.classes[draws], replay.human_gain[draws], folds, n_grades=replay.n_grades
    )
    terms = np.empty(draws.size)
    for fold, calibration in enumerate(for_fold):
        rows = folds == fold
        control = calibration.h(replay.classes)
        offset = float(replay.target @ control)
        chosen = draws[rows]
        terms[rows] = judged_terms(
            offset, replay.target[chosen], replay.human_gain[chosen], control[chosen], q[chosen]
        )
    return terms


def _draw_until(q: np.ndarray, new_labels: int, labelled: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Draws from q until the next one would need a label beyond ``new_labels`` new ones, or every
    drawable unit is labelled; ``labelled`` is updated in place. Repeats of labelled units are free."""
    drawable = q > 0
    n_drawable = int(drawable.sum())
    have = int((labelled & drawable).sum())
    draws: list[np.ndarray] = []
    bought = 0
    chunk = max(64, 2 * max(new_labels, 1))
    while have < n_drawable:
        units = draw_units(q, rng.random(chunk))
        stop = None
        for position, unit in enumerate(units.tolist()):
            if labelled[unit]:
                continue
            if bought >= new_labels:
                stop = position
                break
            labelled[unit] = True
            bought += 1
            have += 1
            if have == n_drawable:
                stop = position + 1
                break
        if stop is not None:
            draws.append(units[:stop])
            break
        draws.append(units)
    return np.concatenate(draws) if draws else np.zeros(0, dtype=np.int64)


def _topics_judged(
    q: np.ndarray, n_draws: np.ndarray, seed: int, repetition: int, n_slots: int
) -> np.ndarray:
    longest = int(n_draws.max())
    if longest == 0:
        return np.zeros(n_draws.shape)
    uniforms = np.random.default_rng([seed, repetition]).random(longest)
    topic_of = draw_units(q, uniforms) // n_slots
    return np.array([np.unique(topic_of[:n]).size for n in n_draws], dtype=float)


__all__ = ["FIRST_STAGE_SHARE", "JudgedReplay", "replay_external", "replay_internal"]
