"""Reads of graded tasks: progress and throughput of a graded campaign, an assessor's held task,
and a task with what answering it needs."""

from __future__ import annotations

from django.contrib.auth.models import User
from django.db.models import Count, F, JSONField, OuterRef, Q, QuerySet, Subquery

from infrastructure.compiled_queries import CompiledQuery
from labeling.models import Campaign, Draw, PoolItem, Task
from labeling.permissions import member_role_remember
from labeling.selectors import (
    Progress,
    Throughput,
    assessor_judgments,
    campaign_spent,
    campaign_state,
    member_role_of,
    throughput_of,
)
from sampling import SamplingState, strategy_for


def graded_progress(campaign: Campaign) -> Progress:
    """`labeling.modes.campaign_progress` of a graded campaign: assessor judgments, pool items,
    draws, tasks."""
    count, spent = campaign_spent(campaign)
    open_tasks = Task.objects.filter(campaign=campaign, answered_at__isnull=True).count()
    pool = PoolItem.objects.filter(campaign=campaign).aggregate(
        size=Count("id"),
        prejudged=Count("id", filter=Q(prejudged=True)),
        drawn=Count("id", filter=Q(drawn=True)),
    )
    return Progress(
        judgments=count,
        budget=campaign.budget,
        budget_unit=campaign.budget_unit,
        spent=spent,
        remaining=max(0.0, campaign.budget - spent),
        pool_size=pool["size"] or 0,
        prejudged=pool["prejudged"] or 0,
        drawn=pool["drawn"] or 0,
        status=str(campaign.status),
        state=_graded_state(campaign, open_tasks),
        strategy=campaign.strategy,
        open_tasks=open_tasks,
        draws=Draw.objects.filter(campaign=campaign).count(),
    )


def _graded_state(campaign: Campaign, open_tasks: int) -> str:
    """`campaign_state`, or "refitting" while the sampling may draw nothing until the worker
    makes its next version (the judged strategy's first stage is drawn and its calibration is
    being fitted): assessors are told items come back by themselves, not that nothing is left."""
    state = campaign_state(campaign, open_tasks)
    if state == Campaign.Status.RUNNING and strategy_for(campaign).items_drawable(campaign) == 0:
        return "refitting"
    return state


def task_active_for_assessor(campaign: Campaign, assessor: User) -> Task | None:
    """The assessor's unanswered task in this campaign (leased, possibly expired), if any."""
    return (
        Task.objects.filter(campaign=campaign, assessor_id=assessor.pk, answered_at__isnull=True)
        .select_related("topic", "document", "draw")
        .order_by("order", "slot")
        .first()
    )


def task_get_for_assessor(task_id: int, user: User | None = None) -> Task | None:
    """A task with its campaign, its document's length as `document_length` and the campaign's cost
    model as `sampling_cost_model` (what pricing the answer needs; None when unknown).

    Given the user, the same query reads their role in the task's campaign and remembers it
    for the request (see `campaign_visible`).
    """
    if user is None or not user.is_authenticated:
        return _task_with_pricing().filter(pk=task_id).first()
    task = _TASK_FOR_ANSWER.first(task_id, user.pk)
    if task is not None:
        member_role_remember(user, task.campaign_id, task.member_role)  # type: ignore[attr-defined]
    return task


def _task_with_pricing() -> QuerySet[Task]:
    # The document's length prices the judgment; its text is not needed to answer.
    cost_model = SamplingState.objects.filter(campaign_id=OuterRef("campaign_id")).values("cost_model")[:1]
    return Task.objects.select_related("campaign").annotate(
        document_length=F("document__length"),
        sampling_cost_model=Subquery(cost_model, output_field=JSONField()),
    )


# Every answer reads it: compiled once (infrastructure.compiled_queries).
_TASK_FOR_ANSWER: CompiledQuery[Task] = CompiledQuery(
    lambda task_id, user_id: (
        _task_with_pricing()
        .annotate(member_role=member_role_of(user_id, "campaign_id"))
        .filter(pk=task_id)[:1]
    ),
    (int, int),
)


def graded_throughput(campaign: Campaign) -> tuple[Throughput, list[Throughput]]:
    """`throughput_of` the campaign's assessor judgments."""
    rows = (
        assessor_judgments(campaign)
        .order_by("created_at", "id")
        .values_list("assessor__username", "seconds", "created_at")
        .iterator(chunk_size=5000)
    )
    return throughput_of(rows)


def campaign_throughput_summary(campaign: Campaign) -> dict[str, object]:
    """Assessor throughput: per assessor judgments, median and mean seconds, judgments per hour of
    judging time; overall the same, and the median seconds per judgment."""
    overall, assessors = graded_throughput(campaign)

    def summary(pace: Throughput) -> dict[str, float | int | None]:
        return {
            "judgments": pace.judgments,
            "median_seconds": pace.median_seconds,
            "mean_seconds": pace.mean_seconds,
            "per_hour": pace.per_hour,
        }

    return {
        **summary(overall),
        "assessors": [
            {"assessor": pace.assessor, **summary(pace), "last": pace.last.isoformat()}  # type: ignore[union-attr]  # throughput rows with answers have a last time
            for pace in assessors
        ],
    }
