"""Reads: QuerySets and small result records for views, the API and exports."""

from __future__ import annotations

import statistics
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.contrib.auth.models import AnonymousUser, User
from django.db.models import Count, F, OuterRef, Q, QuerySet, Subquery, Sum, Window
from django.db.models.functions import RowNumber

from labeling.models import (
    AssessorPreferences,
    Campaign,
    CampaignMember,
    Judgment,
    PoolItem,
    RankingEntry,
    Verdict,
)
from labeling.permissions import campaign_member_role, is_admin, member_role_remember

# Budget in assessor-hours before anyone has judged: assume this many seconds per judgment.
DEFAULT_SECONDS_PER_JUDGMENT = 30.0


@dataclass(frozen=True)
class Progress:
    """How far a campaign is: judgments made, budget, spent and remaining (budget units)."""

    judgments: int
    budget: float
    budget_unit: str
    spent: float
    remaining: float
    pool_size: int
    prejudged: int
    drawn: int
    status: str
    state: str = "running"
    strategy: str = ""
    open_tasks: int = 0
    draws: int = 0

    @property
    def fraction(self) -> float:
        """Spent / budget, in [0, 1], for a progress bar."""
        if self.budget <= 0:
            return 1.0
        return min(1.0, self.spent / self.budget)


def units_progress(
    campaign: Campaign,
    units: QuerySet,
    *,
    started: Q,
    open_: Q,
    judgments: int,
    spent: float,
    prepared: bool,
    strategy: str = "",
) -> Progress:
    """The progress of a mode whose work comes in units it prepares up front (pair tasks,
    top-k heaps, side-by-side comparisons): `started` and `open_` say which units are; the
    campaign counts as done once it runs, was prepared, and no unit is open."""
    counts = units.aggregate(
        size=Count("id"), started=Count("id", filter=started), open=Count("id", filter=open_)
    )
    state = str(campaign.status)
    if campaign.status == Campaign.Status.RUNNING and prepared and not counts["open"]:
        state = "done"
    return Progress(
        judgments=judgments,
        budget=campaign.budget,
        budget_unit=campaign.budget_unit,
        spent=spent,
        remaining=max(0.0, campaign.budget - spent),
        pool_size=counts["size"] or 0,
        prejudged=0,
        drawn=counts["started"] or 0,
        status=str(campaign.status),
        state=state,
        strategy=strategy,
        open_tasks=counts["open"] or 0,
        draws=counts["started"] or 0,
    )


def campaign_list_for_user(user: User | AnonymousUser) -> QuerySet[Campaign]:
    """Campaigns the user may see: all for admins, else those they are a member of."""
    if not user.is_authenticated:
        return Campaign.objects.none()
    if is_admin(user):
        return Campaign.objects.all()
    return Campaign.objects.filter(members__user_id=user.pk).distinct()


def member_role(user: User, campaign_ref: str) -> Subquery:
    return member_role_of(user.pk, campaign_ref)


def member_role_of(user_id: int, campaign_ref: str) -> Subquery:
    """The user's role in the campaign `campaign_ref` names (an outer column), None if not a member."""
    return Subquery(
        CampaignMember.objects.filter(campaign_id=OuterRef(campaign_ref), user_id=user_id).values("role")[:1]
    )


def campaign_get_for_user(user: User | AnonymousUser, campaign_id: int) -> Campaign | None:
    """One campaign if the user may see it, else None (callers answer 404).

    One query fetches the campaign and the user's role in it; the role is remembered for the
    request, so the permission check that usually follows costs no query.
    """
    if not user.is_authenticated:
        return None
    campaign = Campaign.objects.annotate(member_role=member_role(user, "pk")).filter(pk=campaign_id).first()
    if campaign is None:
        return None
    member_role_remember(user, campaign.pk, campaign.member_role)
    return campaign if campaign_visible(user, campaign) else None


def campaign_visible(user: User | AnonymousUser, campaign: Campaign) -> bool:
    """True for the campaign's members and for admins."""
    return campaign_member_role(user, campaign.pk) is not None or is_admin(user)


def campaign_assessors(campaign: Campaign) -> QuerySet[CampaignMember]:
    """The campaign's assessor memberships, with users."""
    return (
        campaign.members.filter(role=CampaignMember.Role.ASSESSOR)
        .select_related("user")
        .order_by("user__username")
    )


def assessor_judgments(campaign: Campaign) -> QuerySet[Judgment]:
    """Judgments made by assessors (not imported qrels)."""
    return Judgment.objects.filter(campaign=campaign, source=Judgment.Source.ASSESSOR)


def campaign_spent(campaign: Campaign) -> tuple[int, float]:
    """(number of assessor judgments, budget spent in the campaign's unit)."""
    return judgments_spent(campaign, assessor_judgments(campaign))


def judgments_spent(campaign: Campaign, judgments: QuerySet[Judgment]) -> tuple[int, float]:
    """(number of these judgments, what they spent in the campaign's budget unit)."""
    totals = judgments.aggregate(count=Count("id"), cost=Sum("cost"), seconds=Sum("seconds"))
    count = totals["count"] or 0
    if campaign.budget_unit == Campaign.BudgetUnit.JUDGMENTS:
        return count, float(count)
    if campaign.budget_unit == Campaign.BudgetUnit.COST:
        return count, float(totals["cost"] or 0.0)
    return count, float(totals["seconds"] or 0.0) / 3600.0


STATE_LABELS = {
    "draft": "Draft",
    "running": "Running",
    "paused": "Paused",
    "done": "Done",
    "budget_spent": "Budget spent",
    "next_round": "Next round",
    "refitting": "Refitting",
}
"""The words of each state assessors see (a page's badge, the progress API's `state_label`)."""


def campaign_state(campaign: Campaign, open_tasks: int) -> str:
    """What assessors see: "running", "paused", "done", "budget_spent" or "draft"."""
    status, blocked = Campaign.objects.filter(pk=campaign.pk).values_list("status", "blocked").first() or (
        campaign.status,
        campaign.blocked,
    )
    if status == Campaign.Status.RUNNING and open_tasks == 0 and blocked:
        return "budget_spent" if blocked == "budget" else "done"
    return str(status)


def seconds_per_judgment(campaign: Campaign) -> float:
    """Mean seconds per assessor judgment so far (a default before the first one)."""
    mean = (
        assessor_judgments(campaign)
        .filter(seconds__isnull=False)
        .aggregate(total=Sum("seconds"), n=Count("id"))
    )
    if not mean["n"]:
        return DEFAULT_SECONDS_PER_JUDGMENT
    return max(1.0, float(mean["total"]) / mean["n"])


def campaign_counts(campaign: Campaign) -> dict[str, int]:
    """How many topics and documents (and their stubs: named by runs, never uploaded), systems
    (and of them the runs uploaded for evaluation only, never pooled), pool items, judgments, gold
    items and model judges a campaign holds."""
    return {
        "topics": campaign.topics.count(),
        "topic_stubs": campaign.topics.filter(is_stub=True).count(),
        "documents": campaign.documents.count(),
        "document_stubs": campaign.documents.filter(is_stub=True).count(),
        "systems": campaign.systems.count(),
        "evaluation_only": campaign.systems.filter(evaluation_only=True).count(),
        "pool_items": PoolItem.objects.filter(campaign=campaign).count(),
        "judgments": Judgment.objects.filter(campaign=campaign).count(),
        "qrels_judgments": Judgment.objects.filter(campaign=campaign, source=Judgment.Source.QRELS).count(),
        # The graded mode's and the engine's tables, through their relations to the campaign.
        "gold_items": campaign.gold_items.count(),
        "judges": campaign.judges.count(),
    }


@dataclass(frozen=True)
class Throughput:
    """One assessor's (or everyone's) pace: answers, median and mean seconds per answer, answers
    per hour of judging time (measured seconds, pauses excluded), and the latest answer."""

    assessor: str
    judgments: int
    median_seconds: float | None
    mean_seconds: float | None
    per_hour: float | None
    last: datetime | None


def _pace(assessor: str, seconds: list[float], count: int, last: datetime | None) -> Throughput:
    total = sum(seconds)
    return Throughput(
        assessor,
        count,
        statistics.median(seconds) if seconds else None,
        total / len(seconds) if seconds else None,
        3600.0 * len(seconds) / total if total > 0 else None,
        last,
    )


def throughput_of(
    rows: Iterable[tuple[str | None, float | None, datetime]],
) -> tuple[Throughput, list[Throughput]]:
    """(everyone, per assessor busiest first) from (username, seconds, created) rows of answers,
    oldest first; every judging mode reports its pace this way."""
    seconds_by: dict[str, list[float]] = defaultdict(list)
    counts: dict[str, int] = defaultdict(int)
    last: dict[str, datetime] = {}
    for username, seconds, created in rows:
        name = username or "(deleted user)"
        counts[name] += 1
        last[name] = created
        if seconds is not None:
            seconds_by[name].append(float(seconds))
    everything = [value for values in seconds_by.values() for value in values]
    overall = _pace("", everything, sum(counts.values()), max(last.values(), default=None))
    per_assessor = [
        _pace(name, seconds_by[name], count, last[name])
        for name, count in sorted(counts.items(), key=lambda item: (-item[1], item[0]))
    ]
    return overall, per_assessor


def ranking_positions(entries: QuerySet[RankingEntry], depth: int) -> QuerySet[Any]:
    """Run entries annotated with `position` in trec_eval order (score descending, then docno
    descending; the run's rank column is ignored), cut at `depth`."""
    return entries.annotate(
        position=Window(
            RowNumber(),
            partition_by=[F("system_id"), F("topic_id")],
            order_by=[F("score").desc(), F("document__docno").desc()],
        )
    ).filter(position__lte=depth)


@dataclass(frozen=True)
class OwnTally:
    """An assessor's own numbers: judgments and measured seconds, today and in all."""

    today: int
    today_seconds: float
    total: int
    total_seconds: float


def own_judgments(user: User, campaign_id: int | None = None, search: str = "") -> QuerySet[Judgment]:
    """The assessor's own judgments, newest first, with topic, document, campaign and how many times
    each was changed; `search` matches query id, topic title, docno or document title."""
    judgments = Judgment.objects.filter(assessor_id=user.pk, source=Judgment.Source.ASSESSOR)
    if campaign_id is not None:
        judgments = judgments.filter(campaign_id=campaign_id)
    text = search.strip()
    if text:
        judgments = judgments.filter(
            Q(topic__qid=text)
            | Q(topic__title__icontains=text)
            | Q(document__docno__icontains=text)
            | Q(document__title__icontains=text)
        )
    return (
        judgments.select_related("topic", "document", "campaign")
        .annotate(change_count=Count("changes"))
        .order_by("-created_at", "-id")
    )


def own_tally(user: User, campaign_id: int | None = None, now: datetime | None = None) -> OwnTally:
    """Judged today (since local midnight) and in all, with the time measured (pauses excluded)."""
    from django.utils import timezone

    now = now or timezone.now()
    midnight = timezone.localtime(now).replace(hour=0, minute=0, second=0, microsecond=0)
    judgments = Judgment.objects.filter(assessor_id=user.pk, source=Judgment.Source.ASSESSOR)
    if campaign_id is not None:
        judgments = judgments.filter(campaign_id=campaign_id)
    totals = judgments.aggregate(
        total=Count("id"),
        total_seconds=Sum("seconds"),
        today=Count("id", filter=Q(created_at__gte=midnight)),
        today_seconds=Sum("seconds", filter=Q(created_at__gte=midnight)),
    )
    return OwnTally(
        today=totals["today"],
        today_seconds=totals["today_seconds"] or 0.0,
        total=totals["total"],
        total_seconds=totals["total_seconds"] or 0.0,
    )


@dataclass(frozen=True)
class ShortcutPreferences:
    """A user's shortcut switch and the keys they remapped (the defaults when never set)."""

    enabled: bool
    keys: dict[str, str]


def shortcut_preferences(user: User | AnonymousUser) -> ShortcutPreferences:
    """The user's shortcut preferences; no row (or nobody logged in) is the defaults."""
    found = AssessorPreferences.objects.filter(user_id=user.pk).first() if user.pk else None
    if found is None:
        return ShortcutPreferences(enabled=True, keys={})
    return ShortcutPreferences(enabled=found.shortcuts_enabled, keys=dict(found.shortcut_keys))


def verdict_stopped(campaign: Campaign) -> Verdict | None:
    """The campaign's own verdict when it came before its budget was spent (and took the rest
    off), else None."""
    return (
        Verdict.objects.filter(campaign=campaign, arrival__isnull=True, returned__gt=0)
        .exclude(outcome="")
        .first()
    )


def verdict_summary(verdict: Verdict | None) -> dict[str, Any] | None:
    """What the API, the pages and the webhook events say of a release verdict and its plan."""
    if verdict is None:
        return None
    return {
        "verdict": verdict.outcome or None,
        "rule": verdict.rule,
        "question": verdict.question,
        "margin": verdict.margin,
        "horizon": verdict.horizon,
        "alpha": verdict.alpha,
        "plan_fixed_at": verdict.plan_fixed_at.isoformat() if verdict.plan_fixed_at else None,
        "decided_at": verdict.decided_at.isoformat() if verdict.decided_at else None,
        "decided_labels": verdict.decided_labels,
        "decided_draws": verdict.decided_draws,
        "value": verdict.value,
        "low": verdict.low,
        "high": verdict.high,
        "reason": verdict.reason,
        "returned": verdict.returned,
    }
