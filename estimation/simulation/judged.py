"""Replayed campaigns of the judged design: a judge labelled the pool, humans label a sample.

Two variants, as the app runs them (`sampling.judged`):

- external calibration (fitted before the campaign, e.g. on the same judge's labels of other
  topics): one stage, q fixed, draws with replacement until the budget of distinct human labels
  is spent;
- internal calibration (no external set): stage 1 spends about a third of the budget on the
  no-model design (the judged design with h = 0, sigma = 1: q mostly proportional to |a|) with
  plain importance-sampling terms; the calibration is then fitted on the stage-1 labels and
  kept, and stage 2 draws from the judged design. A label bought in stage 1 is reused for free
  when stage 2 draws the item again. (The method notes' cross-fitted stage-1 terms,
  `estimation.judges.design.two_stage_estimate`, are kept as a function; the app does not use
  them, since a stage-1 term with h = 0 is already unbiased.)

In both, the control variate's weight is tuned on the earlier draws
(`estimation.judges.design.tuned_terms`) and the estimate is the mean of every term with a
Student interval (`estimation.judges.design.judged_estimate`).

Budgets count distinct human labels (cost 1 per item; item costs enter the design as
1/sqrt(c) but this replay charges 1 per label, like the CLI's default).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from estimation.judges.calibration import Calibration, fit_calibration, no_calibration
from estimation.judges.design import (
    DEFAULT_SAFETY_SHARE,
    judged_distribution,
    judged_estimate,
    judged_parts,
    tuned_terms,
)
from estimation.sampling.budget_loop import draw_units

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
    """One-stage campaigns with a calibration fixed before them; the control's weight is tuned
    on the earlier draws (`estimation.judges.design.tuned_terms`), as the app does."""
    control = calibration.h(replay.classes)
    q = replay.design(calibration, safety_share)
    offset = float(replay.target @ control)
    shape = (len(budgets), repetitions)
    estimates, lows, highs, topics, spent = (np.zeros(shape) for _ in range(5))
    for b, budget in enumerate(budgets):
        labels = int(np.floor(budget + 1e-9))
        for r in range(repetitions):
            rng = np.random.default_rng([seed, r])
            labelled = np.zeros(q.size, dtype=bool)
            draws = draw_until(q, labels, labelled, rng)
            plain, controls = judged_parts(
                offset, replay.target[draws], replay.human_gain[draws], control[draws], q[draws]
            )
            estimate = judged_estimate(
                tuned_terms(plain, controls), confidence=confidence, n_judged=int(labelled.sum())
            )
            estimates[b, r], lows[b, r], highs[b, r] = estimate.value, estimate.low, estimate.high
            spent[b, r] = labelled.sum()
            topics[b, r] = np.unique(np.flatnonzero(labelled) // replay.n_slots).size
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
    """Two-stage campaigns calibrated on their own first stage, as the app runs them: stage 1
    draws from the no-model design with plain importance-sampling terms (h = 0), the calibration
    is fitted on its labels and kept, stage 2 draws from the judged design with the control's
    weight tuned over the draws in order; one mean over every term."""
    shape = (len(budgets), repetitions)
    estimates, lows, highs, topics, spent = (np.zeros(shape) for _ in range(5))
    none = no_calibration(replay.n_grades)
    first_q = replay.design(none, safety_share)
    for b, budget in enumerate(budgets):
        labels = int(np.floor(budget + 1e-9))
        first_budget = max(2, int(round(labels * FIRST_STAGE_SHARE)))
        for r in range(repetitions):
            rng = np.random.default_rng([seed, r])
            labelled = np.zeros(first_q.size, dtype=bool)
            first = draw_until(first_q, min(first_budget, labels), labelled, rng)
            first_plain, first_control = judged_parts(
                0.0, replay.target[first], replay.human_gain[first], np.zeros(first.size), first_q[first]
            )
            items = np.flatnonzero(labelled)
            calibration = fit_calibration(
                replay.classes[items], replay.human_gain[items], n_grades=replay.n_grades, source="internal"
            )
            control = calibration.h(replay.classes)
            q = replay.design(calibration, safety_share)
            second = draw_until(q, labels - int(labelled.sum()), labelled, rng)
            offset = float(replay.target @ control)
            second_plain, second_control = judged_parts(
                offset, replay.target[second], replay.human_gain[second], control[second], q[second]
            )
            terms = tuned_terms(
                np.concatenate([first_plain, second_plain]), np.concatenate([first_control, second_control])
            )
            estimate = judged_estimate(terms, confidence=confidence, n_judged=int(labelled.sum()))
            estimates[b, r], lows[b, r], highs[b, r] = estimate.value, estimate.low, estimate.high
            spent[b, r] = labelled.sum()
            topics[b, r] = np.unique(np.flatnonzero(labelled) // replay.n_slots).size
    return [(estimates[b], lows[b], highs[b], topics[b], spent[b]) for b in range(len(budgets))]


def draw_until(q: np.ndarray, new_labels: int, labelled: np.ndarray, rng: np.random.Generator) -> np.ndarray:
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


__all__ = ["FIRST_STAGE_SHARE", "JudgedReplay", "draw_until", "replay_external", "replay_internal"]
