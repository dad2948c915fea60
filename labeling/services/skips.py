"""Skip: an assessor passes an item on with a reason (cannot judge, not sure, document broken,
other) and an optional note. The item goes back to the pool for someone else, never to this
assessor again; nothing is dropped from the campaign: the task stays open under its draw and
propensity until another assessor judges it (see the README on what the estimates do meanwhile).
"""

from __future__ import annotations

from datetime import datetime
from typing import cast

from django.contrib.auth.models import User
from django.db.models import Count, Exists, OuterRef, Q, Subquery

from labeling.fields import NOTE_MAX_CHARS
from labeling.models import Campaign, CampaignMember, Skip, Task


def skip_checked(reason: str, note: str) -> tuple[str, str]:
    """The reason and note of a skip, checked (ValueError naming what is wrong)."""
    if reason not in Skip.Reason.values:
        raise ValueError(f"reason must be one of {', '.join(Skip.Reason.values)}, got {reason!r}")
    note = (note or "").strip()
    if len(note) > NOTE_MAX_CHARS:
        raise ValueError(f"the note is longer than {NOTE_MAX_CHARS} characters")
    return reason, note


def skipped_by(campaign_id: int, assessor: User) -> Q:
    """Tasks of items this assessor skipped (for the claim queries: never offer them again)."""
    skipped = Skip.objects.filter(
        campaign_id=campaign_id,
        assessor_id=assessor.pk,
        topic_id=OuterRef("topic_id"),
        document_id=OuterRef("document_id"),
    )
    return Q(Exists(skipped))


def skip_counts(campaign: Campaign) -> dict[str, int]:
    """Skips of the campaign by reason (every reason listed, 0 when none)."""
    counts = dict.fromkeys(Skip.Reason.values, 0)
    for reason in Skip.objects.filter(campaign=campaign).values_list("reason", flat=True):
        counts[reason] += 1
    return counts


def items_skipped_by_every_assessor(campaign: Campaign) -> int:
    """Open graded items that every assessor of the campaign skipped: nobody is offered them any
    more, so they stay open (their draws count once judged) until another assessor joins or a
    coordinator judges them. 0 when the campaign has no assessor."""
    assessors = CampaignMember.objects.filter(campaign=campaign, role=CampaignMember.Role.ASSESSOR).values(
        "user_id"
    )
    count = assessors.count()
    if count == 0:
        return 0
    skippers = (
        Skip.objects.filter(
            campaign=campaign,
            assessor_id__in=assessors,
            topic_id=OuterRef("topic_id"),
            document_id=OuterRef("document_id"),
        )
        .values("topic_id")
        .annotate(skippers=Count("assessor_id", distinct=True))
        .values("skippers")
    )
    return (
        Task.objects.filter(campaign=campaign, answered_at__isnull=True, document__isnull=False)
        .annotate(skippers=Subquery(skippers))
        .filter(skippers__gte=count)
        .values("topic_id", "document_id")
        .distinct()
        .count()
    )


def notes_and_skips(campaign: Campaign, limit: int = 12) -> list[dict[str, object]]:
    """The latest notes on judgments and skips of the campaign, newest first (the dashboard)."""
    from labeling.models import Judgment

    notes = (
        Judgment.objects.filter(campaign=campaign, source=Judgment.Source.ASSESSOR)
        .exclude(note="")
        .order_by("-created_at")
        .values("created_at", "assessor__username", "topic__qid", "document__docno", "grade", "note")[:limit]
    )
    skips = (
        Skip.objects.filter(campaign=campaign)
        .order_by("-created_at")
        .values("created_at", "assessor__username", "topic__qid", "document__docno", "reason", "note")[:limit]
    )
    reasons = dict(Skip.Reason.choices)
    rows = [{**row, "what": f"grade {row['grade']}"} for row in notes] + [
        {**row, "what": f"skipped: {reasons.get(row['reason'], row['reason']).lower()}"} for row in skips
    ]
    rows.sort(key=lambda row: cast(datetime, row["created_at"]), reverse=True)
    return rows[:limit]
