"""The graded judging mode: assessors grade (topic, document) items that a sampling strategy
draws, and the dashboard estimates DCG/ERR of the runs from them.

Everything graded-specific that the core asks of a mode is wired here (labeling.modes); the
work itself lives in the services, selectors and API modules it names.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.urls import reverse
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.serializers import Serializer

from labeling import dashboard, exports
from labeling.agreement import grade_agreement
from labeling.api import graded as graded_api
from labeling.formats.fields import NOTE_MAX_CHARS
from labeling.leases import LeaseConflict
from labeling.models import Campaign, PoolItem, Skip, System, Task
from labeling.modes import Export, JudgingMode, export_links
from labeling.permissions import EXPORT, MANAGE
from labeling.selectors import Progress, Throughput, graded_progress, graded_throughput
from labeling.serializers import AnswerInputSerializer, TaskOutputSerializer
from labeling.services.gold import gold_paused_assessors
from labeling.services.judging import task_lease_hold
from labeling.services.pool_arrays import campaign_metric_label
from labeling.services.skips import (
    items_skipped_by_every_assessor,
    notes_and_skips,
    skip_counts,
    task_skip,
)
from labeling.token_access import TokenJudge

# How often the dashboard polls the API: often enough to feel live, rare enough to stay cheap.
DASHBOARD_POLL_SECONDS = 5

GRADED_EXPORTS = (
    Export(
        "api-export-qrels",
        "export/qrels/",
        ".qrels",
        "Qrels (TREC format)",
        "text/plain; charset=utf-8",
        exports.qrels_trec,
    ),
    Export(
        "api-export-judgments-csv",
        "export/judgments.csv",
        "-judgments.csv",
        "Judgments (CSV)",
        "text/csv; charset=utf-8",
        exports.judgments_csv,
        note="with assessor, seconds, draw order and propensity",
    ),
    Export(
        "api-export-judgments-jsonl",
        "export/judgments.jsonl",
        "-judgments.jsonl",
        "Judgments (JSON Lines)",
        "application/jsonl; charset=utf-8",
        exports.judgments_jsonl,
    ),
    Export(
        "api-export-draws-csv",
        "export/draws.csv",
        "-draws.csv",
        "Draws with propensities (CSV)",
        "text/csv; charset=utf-8",
        exports.draws_csv,
        place="dashboard",
    ),
    Export(
        "api-export-estimates-csv",
        "export/estimates.csv",
        "-estimates.csv",
        "Estimate history (CSV)",
        "text/csv; charset=utf-8",
        exports.estimates_history_csv,
        place="dashboard",
    ),
    Export(
        "api-export-estimates-json",
        "export/estimates.json",
        "-estimates.json",
        "Estimate history (JSON)",
        "application/json",
        exports.estimates_history_json,
        stream=False,
        place="dashboard",
    ),
    Export(
        "api-export-offline",
        "export/offline.zip",
        "-offline.zip",
        "Everything to recompute this page offline (zip)",
        "application/zip",
        exports.offline_bundle,
        stream=False,
        place="dashboard",
    ),
)


def grade_scale(campaign: Campaign) -> list[dict[str, Any]]:
    """The campaign's grades with their values and keys, lowest first."""
    return [
        {
            "value": value,
            "name": grade["name"],
            "key": grade["key"],
            "description": grade.get("description", ""),
        }
        for value, grade in enumerate(campaign.grades)
    ]


class GradedTasksMode(JudgingMode):
    """A mode whose items are the core's graded tasks (`Task`, answered with a grade): the graded
    mode itself, and modes that choose their items otherwise (training data). It serves them
    with the graded page, API, skip and undo; a subclass says how items are chosen and shown
    to coordinators."""

    task_kind = "grade"
    answer_field = "grade"

    def throughput(self, campaign: Campaign) -> list[Throughput]:
        return graded_throughput(campaign)[1]

    def next_response(self, request: Request, campaign: Campaign) -> HttpResponse:
        return graded_api.next_response(request, campaign)

    def answer_response(self, request: Request, task_id: int) -> Response:
        return graded_api.answer_response(request, task_id)

    def undo_response(self, request: Request, campaign: Campaign) -> Response:
        return graded_api.undo_response(request, campaign)

    def unit_campaign_id(self, unit_id: int) -> int | None:
        return Task.objects.filter(pk=unit_id).values_list("campaign_id", flat=True).first()

    def lease_hold(self, unit_id: int, assessor: Any, state: str) -> bool | None:
        return task_lease_hold(task_id=unit_id, assessor=assessor, state=state)

    def skip(self, unit_id: int, assessor: Any, reason: str, note: str) -> bool:
        task = Task.objects.filter(pk=unit_id).first()
        if task is None:
            raise LeaseConflict("no such item is leased to you")
        task_skip(task=task, assessor=assessor, reason=reason, note=note)
        return True

    def token_next(self, judge: TokenJudge) -> HttpResponse | None:
        return graded_api.token_next(judge)

    def token_answer(
        self, request: HttpRequest, token: str, task_id: int, payload: dict[str, Any]
    ) -> HttpResponse | None:
        return graded_api.token_answer(request, token, task_id, payload)

    def item_serializer(self) -> type[Serializer]:
        return TaskOutputSerializer

    def answer_serializer(self) -> type[Serializer]:
        return AnswerInputSerializer

    def judge_page(self, request: HttpRequest, campaign: Campaign) -> HttpResponse:
        grades = grade_scale(campaign)
        undo_seconds = settings.LABELING_UNDO_SECONDS
        config = {
            "campaign": campaign.pk,
            "grades": grades,
            "undo_window_seconds": undo_seconds,
            "next_url": reverse("api-next", args=[campaign.pk]),
            "answer_url": reverse("api-answer", args=[0]).replace("/0/", "/{task}/"),
            "undo_url": reverse("api-undo", args=[campaign.pk]),
            "skip_url": reverse("api-skip", args=[0]).replace("/0/", "/{task}/"),
            "lease_url": reverse("api-lease", args=[0]).replace("/0/", "/{task}/"),
            "progress_url": reverse("api-progress", args=[campaign.pk]),
            "login_url": reverse("login"),
        }
        context = {
            "campaign": campaign,
            "grades": grades,
            "undo_window_seconds": undo_seconds,
            "judge_config": config,
            "skip_reasons": Skip.Reason.choices,
            "note_max_chars": NOTE_MAX_CHARS,
            # Words of the shared judging chrome (labeling/_judge_chrome.html).
            "judge_unit": "item",
            "judge_answer": "judgment",
        }
        return render(request, "labeling/judge.html", context)


class GradedMode(GradedTasksMode):
    name = "graded"
    label = "Graded judgments"
    uses_sampling = True
    uploads = ("topics", "documents", "runs", "qrels", "labels")
    exports = GRADED_EXPORTS

    def settings_of(self, campaign: Campaign) -> dict[str, Any]:
        return {"k": None}

    def describe(self, campaign: Campaign) -> str:
        goal = campaign.get_goal_display().lower()
        if campaign.goal == Campaign.Goal.LEADERBOARD and campaign.goal_k:
            goal = f"leaderboard of {campaign.goal_k} systems"
        metric = campaign_metric_label(campaign)
        return f"{metric} · {goal} · {campaign.strategy} · {campaign.grade_count} grades"

    def start_problem(self, campaign: Campaign) -> str | None:
        if not PoolItem.objects.filter(campaign=campaign).exists():
            return "import runs first: the pool is empty"
        pooled = System.objects.filter(campaign=campaign, evaluation_only=False).count()
        if campaign.goal in (Campaign.Goal.DIFFERENCE, Campaign.Goal.RELATIVE) and pooled < 2:
            return f"a {campaign.goal} goal needs at least two pooled systems (runs)"
        return None

    def started(self, campaign: Campaign) -> None:
        from labeling.services.sampling import draws_top_up

        draws_top_up(campaign_id=campaign.pk)

    def recompute(self, campaign: Campaign) -> None:
        """The sampling engine after answers: refit the label and cost models, recompute q (when
        anything changed), top up the draws, store an estimate snapshot (when anything changed)."""
        from labeling.services.estimates import snapshot_record
        from labeling.services.sampling import draws_top_up
        from labeling.services.sampling_state import sampling_state_refresh

        if not PoolItem.objects.filter(campaign=campaign).exists():
            return
        # Fitting runs outside any transaction: a judgment never waits for it.
        sampling_state_refresh(campaign)
        draws_top_up(campaign_id=campaign.pk)
        campaign.refresh_from_db()
        snapshot_record(campaign)

    def progress(self, campaign: Campaign) -> Progress:
        return graded_progress(campaign)

    def dashboard_page(self, request: HttpRequest, campaign: Campaign) -> HttpResponse:
        api = {
            name: reverse(f"api-{name}", args=[campaign.pk])
            for name in ("estimates", "estimates-history", "sampling", "throughput", "progress", "evaluate")
        }
        downloads = export_links(campaign, "dashboard") if request.user.has_perm(EXPORT, campaign) else []
        config = {
            "campaign": campaign.pk,
            "metric": campaign.metric,
            "urls": {**api, "model": reverse("labeling:campaign_dashboard_model", args=[campaign.pk])},
            "poll_seconds": DASHBOARD_POLL_SECONDS,
            "can_evaluate": request.user.has_perm(MANAGE, campaign),
        }
        context = {
            "campaign": campaign,
            "model": dashboard.campaign_model_summary(campaign),
            "exports": downloads,
            "dashboard_config": config,
            "can_manage": request.user.has_perm(MANAGE, campaign),
            "skips": skip_counts(campaign),
            "skipped_by_everyone": items_skipped_by_every_assessor(campaign),
            "notes": notes_and_skips(campaign),
            "gold_paused": gold_paused_assessors(campaign) if request.user.has_perm(MANAGE, campaign) else [],
        }
        return render(request, "labeling/dashboard.html", context)

    def campaign_section(self, request: HttpRequest, campaign: Campaign) -> dict[str, Any] | None:
        can_plan = (
            request.user.has_perm(MANAGE, campaign) and PoolItem.objects.filter(campaign=campaign).exists()
        )
        return {
            "template": "labeling/_graded_section.html",
            "grades": grade_scale(campaign),
            "agreement": grade_agreement(campaign),
            "plan_url": reverse("api-plan", args=[campaign.pk]) if can_plan else None,
        }
