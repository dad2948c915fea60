"""Pre-flight: what assessors would miss, listed before a campaign starts.

Each check is one query over the campaign's imports and returns a `Problem` (a kind, how many,
a few examples, and what to do) or nothing. `Start` asks for confirmation while any problem is
listed; the API lists them at ``GET /api/campaigns/{id}/preflight/`` and the campaign page shows
them while the campaign is a draft. A judging mode adds its own checks through
`JudgingMode.preflight_problems`; `labeling.modes.campaign_preflight` lists both (this module
sits below the mode registry and never imports it).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from django.db.models import Count, Max, Q, QuerySet

from labeling.models import Campaign, CampaignMember, Document, Judgment, PoolItem, RankingEntry, Topic

EXAMPLES_SHOWN = 5


@dataclass(frozen=True)
class Problem:
    """One thing assessors or the estimates would miss: `count` cases, a few `examples`;
    `blocking` when Start refuses until it is fixed (confirming does not help)."""

    kind: str
    count: int
    examples: tuple[str, ...]
    message: str
    blocking: bool = False

    def as_dict(self) -> dict[str, object]:
        return {
            "kind": self.kind,
            "count": self.count,
            "examples": list(self.examples),
            "message": self.message,
            "blocking": self.blocking,
        }


def _examples(values: QuerySet, field: str) -> tuple[str, ...]:
    return tuple(
        str(value) for value in values.order_by(field).values_list(field, flat=True)[:EXAMPLES_SHOWN]
    )


def _problem(kind: str, queryset: QuerySet, field: str, message: str) -> Problem | None:
    count = queryset.count()
    if count == 0:
        return None
    return Problem(kind, count, _examples(queryset, field), message)


def _topics_missing(campaign: Campaign) -> Problem | None:
    return _problem(
        "topics_missing",
        Topic.objects.filter(campaign=campaign, is_stub=True),
        "qid",
        "topics ranked by runs but not in any topics upload: assessors see only the query id "
        "(upload the topics file)",
    )


def _topics_without_text(campaign: Campaign) -> Problem | None:
    return _problem(
        "topics_without_text",
        Topic.objects.filter(campaign=campaign, is_stub=False, title="", description="", narrative=""),
        "qid",
        "topics uploaded without a title, description or narrative: assessors see only the query id",
    )


def _documents_missing(campaign: Campaign) -> Problem | None:
    stubs = Document.objects.filter(campaign=campaign, is_stub=True)
    message = (
        "documents named by runs or qrels but not in any documents upload: assessors judge them by "
        "their identifier (upload the documents file)"
    )
    pool = PoolItem.objects.filter(campaign=campaign)
    pooled = stubs.filter(pk__in=pool.values("document_id")).count() if pool.exists() else None
    if pooled is not None and pooled < stubs.count():
        # Runs rank deeper than the pool: say how many of them assessors will actually see, so the
        # count is not read against the pool's size.
        message = (
            f"documents named by runs or qrels but not in any documents upload ({pooled} of them in "
            "the pool assessors judge, the rest ranked below the pool depth or named by qrels only): "
            "assessors judge them by their identifier (upload the documents file)"
        )
    return _problem("documents_missing", stubs, "docno", message)


def _documents_without_text(campaign: Campaign) -> Problem | None:
    return _problem(
        "documents_without_text",
        Document.objects.filter(campaign=campaign, is_stub=False, title="", text="", url=""),
        "docno",
        "documents uploaded without a title, text or URL: assessors judge them by their identifier",
    )


def _topics_unranked(campaign: Campaign) -> Problem | None:
    if not campaign.systems.exists():
        return None  # the mode's start check says that runs are missing
    ranked = RankingEntry.objects.filter(system__campaign=campaign).values("topic_id")
    return _problem(
        "topics_unranked",
        Topic.objects.filter(campaign=campaign).exclude(pk__in=ranked),
        "qid",
        "topics no run ranks: nothing of them will be judged or estimated",
    )


def _runs_with_ties(campaign: Campaign) -> Problem | None:
    # Only the top of each ranking matters to the metric and the pool; trec_eval breaks score ties
    # by document id, which other tools do not, so tied scores there make results tool-dependent.
    tied = (
        RankingEntry.objects.filter(system__campaign=campaign, rank__lte=campaign.effective_pool_depth)
        .values("system__name", "topic_id", "score")
        .annotate(entries=Count("pk"))
        .filter(entries__gt=1)
    )
    per_system: dict[str, int] = {}
    for row in tied:
        per_system[row["system__name"]] = per_system.get(row["system__name"], 0) + 1
    if not per_system:
        return None
    names = sorted(per_system)
    return Problem(
        "runs_with_ties",
        len(names),
        tuple(f"{name} ({per_system[name]} tied score group(s))" for name in names[:EXAMPLES_SHOWN]),
        f"runs with equal scores within the top {campaign.effective_pool_depth}: they are ordered "
        "by score, then by document id descending, as trec_eval does, not by the rank column",
    )


def _no_assessors(campaign: Campaign) -> Problem | None:
    if CampaignMember.objects.filter(campaign=campaign, role=CampaignMember.Role.ASSESSOR).exists():
        return None
    return Problem("no_assessors", 0, (), "assessors assigned: nobody will see the campaign's items")


def _grade_scale(campaign: Campaign) -> Problem | None:
    # ERR and the gains of nDCG depend on the top grade of the scale; qrels that never use the top
    # grades suggest the campaign's scale is not the one the qrels were made on.
    top = campaign.grade_count - 1
    used = Judgment.objects.filter(campaign=campaign, source=Judgment.Source.QRELS).aggregate(
        top=Max("grade"), pairs=Count("pk"), relevant=Count("pk", filter=Q(grade__gt=0))
    )
    if used["pairs"] == 0 or used["top"] >= top:
        return None
    return Problem(
        "grade_scale",
        used["pairs"],
        (f"qrels top grade {used['top']}", f"campaign scale 0-{top}"),
        f"imported qrels never use grades above {used['top']}, but the scale goes to {top}: the "
        f"metric's gains (and ERR's top grade) follow the scale; check that it matches the qrels",
    )


def _shallow_pool(campaign: Campaign) -> Problem | None:
    if campaign.pool_depth is None or campaign.pool_depth >= campaign.metric_cutoff:
        return None
    return Problem(
        "shallow_pool",
        campaign.metric_cutoff - campaign.pool_depth,
        (f"pool depth {campaign.pool_depth}", f"{campaign.metric} looks at {campaign.metric_cutoff}"),
        "the pool is shallower than the metric's cutoff: documents ranked below the pool depth are "
        "never judged and count as not relevant",
    )


CHECKS: tuple[Callable[[Campaign], Problem | None], ...] = (
    _topics_missing,
    _topics_without_text,
    _topics_unranked,
    _documents_missing,
    _documents_without_text,
    _runs_with_ties,
    _grade_scale,
    _shallow_pool,
    _no_assessors,
)


def core_preflight(campaign: Campaign) -> list[Problem]:
    """Every problem the core's checks find, in a fixed order (`labeling.modes.campaign_preflight`
    adds the mode's own)."""
    return [problem for check in CHECKS if (problem := check(campaign)) is not None]
