"""How current each campaign's recomputed state is (estimates, fitted models, progress), for
operators' monitoring: the estimates API shows it per campaign, `GET /api/health/` for the
installation.

A campaign is behind when its mode counts more answers than its last recompute read
(`CampaignProgress.judgments`); it is then `stale_seconds` stale, counted from that recompute.
A worker that stops while assessors judge makes that figure grow; one that runs brings it back to
0 within the recompute spacing (LABELING_RECOMPUTE_MIN_SECONDS). After a long idle pause the first
answer shows the pause until its recompute a few seconds later, so alert on a figure above a few
spacings that lasts (docs/operations.md, Monitoring).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from django.conf import settings
from django.db import DatabaseError
from django.utils import timezone

from infrastructure.unavailable import UNAVAILABLE
from labeling.models import Campaign, CampaignProgress
from labeling.modes import campaign_progress
from labeling.recompute import recompute_owed

WATCHED = (Campaign.Status.RUNNING, Campaign.Status.PAUSED)


def campaign_freshness(campaign: Campaign, now: datetime | None = None) -> dict[str, Any]:
    """The campaign's answers, those its last recompute read, when that was, and how stale its
    recomputed state is (0 when nothing is behind)."""
    now = now or timezone.now()
    answers = campaign_progress(campaign).judgments
    record = CampaignProgress.objects.filter(campaign=campaign).first()
    counted = record.judgments if record is not None else 0
    recomputed_at = record.recomputed_at if record is not None else None
    age = (now - recomputed_at).total_seconds() if recomputed_at is not None else None
    behind = max(answers - counted, 0)
    return {
        "campaign": campaign.pk,
        "status": campaign.status,
        "answers": answers,
        "counted": counted,
        "behind": behind,
        "recomputed_at": recomputed_at.isoformat() if recomputed_at is not None else None,
        "age_seconds": round(age, 1) if age is not None else None,
        "stale_seconds": round(age, 1) if behind and age is not None else 0.0,
    }


def installation_health() -> dict[str, Any]:
    """The database's answer, every running or paused campaign's freshness, and the campaigns owed
    a recompute (None when the cache cannot tell); `status` "stale" when a campaign is staler
    than HEALTH_STALE_SECONDS, "down" when the database does not answer."""
    now = timezone.now()
    try:
        campaigns = [
            campaign_freshness(campaign, now) for campaign in Campaign.objects.filter(status__in=WATCHED)
        ]
    except DatabaseError as error:
        return {"status": "down", "database": f"no answer: {type(error).__name__}", "campaigns": []}
    try:
        owed: int | None = len(recompute_owed([row["campaign"] for row in campaigns]))
    except UNAVAILABLE:
        owed = None
    stalest = max((row["stale_seconds"] for row in campaigns), default=0.0)
    return {
        "status": "stale" if stalest > settings.HEALTH_STALE_SECONDS else "ok",
        "database": "ok",
        "stale_seconds_max": stalest,
        "stale_after_seconds": settings.HEALTH_STALE_SECONDS,
        "answers_behind": sum(row["behind"] for row in campaigns),
        "recompute_owed": owed,
        "campaigns": campaigns,
    }
