"""An assessor corrects their own judgments: a new grade, every change kept."""

from __future__ import annotations

from django.contrib.auth.models import User
from django.db import transaction

from labeling.models import Campaign, Judgment, JudgmentChange
from labeling.recompute import recompute_soon

# A grade may change while the campaign can still take judgments; once it is done (or archived)
# its results are final.
_OPEN = (Campaign.Status.RUNNING, Campaign.Status.PAUSED)


class RegradeRefused(ValueError):
    """The judgment may not be changed (not the assessor's, or the grade is off the scale)."""


class JudgmentFinal(RegradeRefused):
    """The judgment's campaign is done or archived: its judgments are final (HTTP 409)."""


@transaction.atomic
def judgment_regrade(*, judgment: Judgment, assessor: User, grade: int) -> Judgment:
    """Give one of the assessor's own judgments a new grade, keeping the old one in its history.

    The judgment keeps its task, draw and propensity: the estimators see the same draw with the
    latest grade, and the recompute (requested after commit) refits with it.
    """
    judgment = Judgment.objects.select_for_update().select_related("campaign").get(pk=judgment.pk)
    campaign = judgment.campaign
    if judgment.assessor_id != assessor.pk or judgment.source != Judgment.Source.ASSESSOR:
        raise RegradeRefused("only the assessor who made a judgment can change it")
    if campaign.archived_at is not None:
        raise JudgmentFinal("the campaign is archived: its judgments are final")
    if campaign.status not in _OPEN:
        raise JudgmentFinal(
            f"the campaign is {campaign.get_status_display().lower()}: its judgments are final"
        )
    if not 0 <= grade < campaign.grade_count:
        raise RegradeRefused(f"grade must be 0..{campaign.grade_count - 1}")
    if grade == judgment.grade:
        return judgment
    JudgmentChange.objects.create(
        judgment=judgment, old_grade=judgment.grade, new_grade=grade, changed_by=assessor
    )
    judgment.grade = grade
    judgment.save(update_fields=["grade"])
    campaign_id = campaign.pk
    transaction.on_commit(lambda: recompute_soon(campaign_id))
    return judgment
