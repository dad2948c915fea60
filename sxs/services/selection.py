"""Which (topic, system pair) an assessor compares next: at random, or by SimpleMargin (Tong &
Koller; the learned-DCG doc, section 5) once `random_start` answers exist and a fit is stored.

Each choice is recorded on the task: the rule, and for "random" its propensity (1 / the open
units the assessor could have been given), for "margin" the |w^T d| that ranked it first.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from labeling.models import Campaign
from sxs.models import SxsAnswer, SxsSettings
from sxs.selectors import known_grades, latest_fit, list_grades


@dataclass(frozen=True)
class Candidate:
    """An open task the assessor may be given (the lowest open slot of its unit)."""

    task_id: int
    topic_id: int
    documents_a: list[int]
    documents_b: list[int]


@dataclass(frozen=True)
class Choice:
    task_id: int
    rule: str
    propensity: float | None
    margin: float | None


def choose_random(candidates: list[Candidate], rng: np.random.Generator) -> Choice:
    """One candidate uniformly at random; its propensity is 1 / len(candidates)."""
    picked = candidates[int(rng.integers(len(candidates)))]
    return Choice(picked.task_id, SxsSettings.Selection.RANDOM, 1.0 / len(candidates), None)


def _margin_choice(campaign: Campaign, settings: SxsSettings, candidates: list[Candidate]) -> Choice | None:
    """The candidate with the smallest |w^T d| under the latest fit; None when there is no usable
    fit or no candidate the rule may pick (identical lists, say)."""
    try:
        from estimation.learned_dcg import simple_margin
    except ImportError:  # the numeric core is not there yet: random selection stands in
        return None
    fit = latest_fit(campaign)
    if fit is None or "weights" not in fit.result:
        return None
    weights = np.asarray(fit.result["weights"], dtype=float)
    if weights.shape[0] != settings.k:
        return None
    grades = known_grades(campaign)
    # An ungraded document is scored as grade 0 here: its grade is asked just before the
    # comparison, so leaving such pairs out would never pick them.
    left = np.array([list_grades(c.topic_id, c.documents_a, grades, settings.k, 0) for c in candidates])
    right = np.array([list_grades(c.topic_id, c.documents_b, grades, settings.k, 0) for c in candidates])
    groups = np.array([candidate.topic_id for candidate in candidates])
    picked = simple_margin(weights, left, right, groups, batch=1)
    if len(picked) == 0:
        return None
    index = int(picked[0])
    margin = abs(float(_utility(weights, left[index]) - _utility(weights, right[index])))
    return Choice(candidates[index].task_id, SxsSettings.Selection.MARGIN, None, margin)


def _utility(weights: np.ndarray, grades: np.ndarray) -> float:
    """w^T s(pi) = sum over filled positions of W[k, grade]."""
    return float(sum(weights[position, grade] for position, grade in enumerate(grades) if grade >= 0))


def choose(
    campaign: Campaign, settings: SxsSettings, candidates: list[Candidate], rng: np.random.Generator
) -> Choice:
    """The next task by the campaign's selection rule."""
    if settings.selection == SxsSettings.Selection.MARGIN:
        answers = SxsAnswer.objects.filter(campaign=campaign).count()
        if answers >= settings.random_start:
            choice = _margin_choice(campaign, settings, candidates)
            if choice is not None:
                return choice
    return choose_random(candidates, rng)
