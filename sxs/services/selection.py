"""Which (topic, system pair) an assessor compares next: at random, or by SimpleMargin (Tong &
Koller; the learned-DCG doc, section 5) once `random_start` answers exist and a fit is stored.

Each choice is recorded on the task: the rule, and for "random" its propensity (1 / the open
units the assessor could have been given), for "margin" the |w^T d| that ranked it first. The
margin rule falls back to random while there is no fit (fewer answers than the core needs) or
when every open comparison left shows two lists with the same grades.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from estimation.learned_dcg.fit import simple_margin, utilities
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
    fit or no candidate the rule may pick (every one's two lists hold the same grades).

    The candidates are already the units this assessor may get (never answered, held by
    someone, or skipped by them). An ungraded document (the "judge" policy) is scored as grade
    0, but such candidates are passed over (`exclude`) while a fully graded one is eligible:
    their margin is a guess, and choosing them costs grade tasks before the comparison. Once
    only they are left, they are chosen by that guess, so their documents still get graded.
    """
    fit = latest_fit(campaign)
    if fit is None or "weights" not in fit.result:
        return None
    weights = np.asarray(fit.result["weights"], dtype=float)
    if weights.shape != (settings.k, campaign.grade_count):
        return None
    k = settings.k
    grades = known_grades(campaign)
    left = np.array([list_grades(c.topic_id, c.documents_a, grades, k, 0) for c in candidates])
    right = np.array([list_grades(c.topic_id, c.documents_b, grades, k, 0) for c in candidates])
    groups = np.array([candidate.topic_id for candidate in candidates])
    graded = np.array(
        [
            all((c.topic_id, document) in grades for document in (*c.documents_a[:k], *c.documents_b[:k]))
            for c in candidates
        ]
    )
    if settings.unjudged == SxsSettings.Unjudged.ZERO:
        graded[:] = True  # ungraded is grade 0 by the campaign's rule, not a guess
    informative = ~np.all(left == right, axis=1)
    exclude = ~graded if np.any(graded & informative) else None
    picked = simple_margin(weights, left, right, groups, batch=1, exclude=exclude)
    if len(picked) == 0:
        return None
    index = int(picked[0])
    margin = abs(float(utilities(weights, left[[index]])[0] - utilities(weights, right[[index]])[0]))
    return Choice(candidates[index].task_id, SxsSettings.Selection.MARGIN, None, margin)


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
