"""Assessor agreement as JSON types: pooled over assessors and between every two of them.

Every judging mode reports agreement on preferences: pair modes on the answers, the graded mode
on preferences inferred from grades (`estimation.learned_dcg.preferences`).
"""

from __future__ import annotations

import math
from typing import Any

from estimation.learned_dcg.preferences import (
    Agreement,
    Preference,
    agreement_between,
    agreement_pooled,
    preferences_from_grades,
)
from labeling.models import Campaign, Judgment
from labeling.modes import mode_of


def _finite(value: float) -> float | None:
    return None if value is None or not math.isfinite(value) else float(value)


def agreement_data(agreement: Agreement) -> dict[str, Any]:
    """An `Agreement` as JSON types (NaN as null)."""
    table = agreement.row_normalised
    return {
        "labels": ["A>B", "A~B", "A<B"],
        "counts": agreement.counts.tolist(),
        "row_normalised": [[_finite(value) for value in row] for row in table],
        "overall": _finite(agreement.overall),
        "ignoring_ties": _finite(agreement.ignoring_ties),
        "kappa": _finite(agreement.kappa),
        "kappa_kind": agreement.kappa_kind,
        "n_pairs": agreement.n_pairs,
    }


def agreement_of(preferences: list[Preference]) -> dict[str, Any] | None:
    """Pooled agreement plus Cohen's kappa for every two assessors with pairs in common; None
    when no pair was judged twice."""
    try:
        pooled = agreement_pooled(preferences)
    except ValueError:
        return None
    assessors = sorted({preference.assessor for preference in preferences})
    pairs = []
    for i, first in enumerate(assessors):
        for second in assessors[i + 1 :]:
            try:
                between = agreement_between(preferences, first, second)
            except ValueError:
                continue
            pairs.append({"first": first, "second": second, **agreement_data(between)})
    return {"pooled": agreement_data(pooled), "between": pairs}


def grade_agreement(campaign: Campaign) -> dict[str, Any] | None:
    """Agreement on the preferences the assessors' grades imply (None without doubly judged items)."""
    graded = list(
        Judgment.objects.filter(
            campaign=campaign, source=Judgment.Source.ASSESSOR, assessor__isnull=False
        ).values_list("topic__qid", "document__docno", "grade", "assessor__username")
    )
    return agreement_of(preferences_from_grades(graded)) if graded else None


def campaign_agreement(campaign: Campaign) -> dict[str, Any]:
    """Agreement on the preferences the campaign's answers state (pair modes) and on those
    inferred from its grades: the agreement export every campaign offers."""
    return {
        "preferences": agreement_of(mode_of(campaign).answer_preferences(campaign)),
        "inferred_from_grades": grade_agreement(campaign),
    }
