"""The graded judging mode: assessors grade (topic, document) items that a sampling strategy
draws, and the dashboard estimates DCG/ERR of the runs from them.

Everything graded-specific that the core asks of a mode is wired here (labeling.modes); the
work itself lives in the services, selectors and API modules it names.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from django.http import HttpRequest, HttpResponse
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.serializers import Serializer

import sampling
from estimation.metrics.spec import Metric
from graded import api as graded_api
from graded import exports, views
from graded.gold import gold_clone
from graded.judging import task_lease_hold, task_skip
from graded.selectors import graded_progress, graded_throughput
from graded.serializers import AnswerInputSerializer, TaskOutputSerializer
from labeling.leases import LeaseConflict
from labeling.metric import campaign_metric_label
from labeling.models import Campaign, PoolItem, System, Task
from labeling.modes import Export, JudgingMode
from labeling.preflight import Problem
from labeling.selectors import Progress, Throughput
from labeling.shortcuts import EVERY, GRADES, NOTE
from labeling.token_access import TokenJudge
from sampling import (
    VERDICT_SETTINGS,
    arrival_reports_refresh,
    budget_spent_emit,
    campaign_verdict_change_problem,
    campaign_verdict_sync,
    compared_systems,
    draws_top_up,
    goal_words,
    plan_problem,
    sampling_state_recompute,
    snapshot_record,
    strategy_choices,
    strategy_for,
    tasks_trim_to_budget,
    verdict_events_emit,
    verdicts_update,
)

# Campaign fields the sampling distribution depends on: a change refits it at once.
PLANNING_FIELDS = {
    "strategy",
    "goal",
    "goal_k",
    "focus_systems",
    "mix",
    "prior_strength",
    "metric",
    "custom_dcg",
}


def _has_judges(campaign: Campaign) -> bool:
    """The judge exports' links show only where a model judge is."""
    return campaign.judges.exists()


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
        sampling.draws_csv,
        place="dashboard",
    ),
    Export(
        "api-export-estimates-csv",
        "export/estimates.csv",
        "-estimates.csv",
        "Estimate history (CSV)",
        "text/csv; charset=utf-8",
        sampling.estimates_history_csv,
        place="dashboard",
    ),
    Export(
        "api-export-estimates-json",
        "export/estimates.json",
        "-estimates.json",
        "Estimate history (JSON)",
        "application/json",
        sampling.estimates_history_json,
        stream=False,
        place="dashboard",
    ),
    Export(
        "api-export-judges-json",
        "export/judges.json",
        "-judges.json",
        "Judges: versions, coverage, agreement, calibrations (JSON)",
        "application/json",
        sampling.judges_json,
        stream=False,
        place="dashboard",
        shown=_has_judges,
    ),
    Export(
        "api-export-judge-labels-csv",
        "export/judge-labels.csv",
        "-judge-labels.csv",
        "Judge labels with provenance (CSV)",
        "text/csv; charset=utf-8",
        sampling.judge_labels_csv,
        place="dashboard",
        shown=_has_judges,
    ),
    Export(
        "api-export-judge-calls-csv",
        "export/judge-calls.csv",
        "-judge-calls.csv",
        "Judge calls: every answer, refusal with its reason, error and pair not sent (CSV)",
        "text/csv; charset=utf-8",
        sampling.judge_calls_csv,
        place="dashboard",
        shown=_has_judges,
    ),
    Export(
        "api-export-judged-sample-csv",
        "export/judged-sample.csv",
        "-judged-sample.csv",
        "Human sample with propensities and the judge's label (CSV)",
        "text/csv; charset=utf-8",
        sampling.judged_sample_csv,
        stream=False,
        place="dashboard",
        shown=_has_judges,
        note="per drawn item: q, sampling version, judge class, that version's h, human grade",
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


class GradedTasksMode(JudgingMode):
    """A mode whose items are the core's graded tasks (`Task`, answered with a grade): the graded
    mode itself, and modes that choose their items otherwise (training data). It serves them
    with the graded page, API, skip and undo; a subclass says how items are chosen and shown
    to coordinators."""

    task_kind = "grade"
    answer_field = "grade"
    shortcut_pages = {views.GRADED_PAGE: (EVERY, NOTE, GRADES)}

    def throughput(self, campaign: Campaign) -> list[Throughput]:
        return graded_throughput(campaign)[1]

    def next_response(self, request: Request, campaign: Campaign) -> HttpResponse:
        return graded_api.next_response(request, campaign)

    def answer_response(self, request: Request, task_id: int) -> Response:
        return graded_api.answer_response(request, task_id)

    def undo_response(self, request: Request, campaign: Campaign) -> Response:
        return graded_api.undo_response(request, campaign)

    def unit_campaign(self, unit_id: int) -> tuple[int, str] | None:
        return Task.objects.filter(pk=unit_id).values_list("campaign_id", "campaign__judging_mode").first()

    def lease_hold(
        self, unit_id: int, assessor: Any, state: str, stamp: datetime | None = None
    ) -> bool | None:
        return task_lease_hold(task_id=unit_id, assessor=assessor, state=state, stamp=stamp)

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
        return views.judge_page(request, campaign)

    def cloned(self, source: Campaign, clone: Campaign) -> None:
        gold_clone(source=source, clone=clone)

    def campaign_panels(self, request: HttpRequest, campaign: Campaign) -> list[dict[str, Any]]:
        return [views.gold_panel(campaign)]


class GradedMode(GradedTasksMode):
    name = "graded"
    label = "Graded judgments"
    uses_sampling = True
    uploads = ("topics", "documents", "runs", "qrels", "labels")
    form_fields = (
        "metric",
        "goal",
        "goal_k",
        "strategy",
        "grades",
        "verdict_rule",
        "verdict_question",
        "verdict_margin",
    )
    exports = GRADED_EXPORTS

    def settings_of(self, campaign: Campaign) -> dict[str, Any]:
        return {"k": None}

    def finished(self, campaign: Campaign, progress: Progress) -> bool:
        """Every pool item judged: none left to draw, no task open."""
        pool = PoolItem.objects.filter(campaign=campaign)
        return (
            progress.open_tasks == 0
            and pool.exists()
            and not pool.filter(drawn=False, prejudged=False).exists()
        )

    def describe(self, campaign: Campaign) -> str:
        goal = goal_words(campaign)
        metric = campaign_metric_label(campaign)
        return f"{metric} · {goal} · {campaign.strategy} · {campaign.grade_count} grades"

    def start_problem(self, campaign: Campaign) -> str | None:
        if not PoolItem.objects.filter(campaign=campaign).exists():
            return "import runs first: the pool is empty"
        pooled = System.objects.filter(campaign=campaign, evaluation_only=False).count()
        if campaign.goal in (Campaign.Goal.DIFFERENCE, Campaign.Goal.RELATIVE) and pooled < 2:
            return f"a {campaign.goal} goal needs at least two pooled systems (runs)"
        return None

    def field_choices(self) -> dict[str, list[tuple[str, str]]]:
        return {"strategy": strategy_choices()}

    def validate(self, campaign: Campaign, metric: Metric) -> None:
        """The strategy takes the metric; the verdict's rule, question and margin can be read on
        its level, and (a two-system campaign with judgments) are not changed any more."""
        strategy = strategy_for(campaign)
        strategy.validate(metric)
        problem = plan_problem(
            strategy.level,
            str(campaign.verdict_rule),
            str(campaign.verdict_question),
            campaign.verdict_margin,
        )
        if problem is not None:
            raise ValueError(f"verdict: {problem}")
        stored = Campaign.objects.filter(pk=campaign.pk).first() if campaign.pk else None
        if stored is not None:
            problem = campaign_verdict_change_problem(campaign, stored)
            if problem is not None:
                raise ValueError(problem)

    def updated(self, campaign: Campaign, fields: set[str]) -> None:
        """A budget cut drops idle queued draws; a change of what the sampling plans for refits
        at once; a running campaign's queue is topped up; a two-system campaign's verdict plan
        follows its settings until its first judgment."""
        tasks_trim_to_budget(campaign_id=campaign.pk)
        if fields & {*VERDICT_SETTINGS, "budget", "goal"} and campaign.status != Campaign.Status.DRAFT:
            campaign_verdict_sync(campaign)
        if PLANNING_FIELDS & fields and PoolItem.objects.filter(campaign=campaign).exists():
            sampling_state_recompute(campaign, force=True)
        if campaign.status == Campaign.Status.RUNNING:
            draws_top_up(campaign_id=campaign.pk)
        if "budget" in fields and campaign.status != Campaign.Status.DRAFT:
            # A cut may end a top-up with nothing left open: its verdict is read now, not at the
            # next answer (which may never come).
            verdict_events_emit(campaign, verdicts_update(campaign))

    def preflight_problems(self, campaign: Campaign) -> list[Problem]:
        """What the strategy lacks (the judged strategy's judge labels), and a goal of one system
        or a pair whose systems nobody chose: the runs that would be taken (the first uploaded, in
        the order a file picker gave them)."""
        return [*strategy_for(campaign).preflight_problems(campaign), *self._compared_problems(campaign)]

    def _compared_problems(self, campaign: Campaign) -> list[Problem]:
        pooled = System.objects.filter(campaign=campaign, evaluation_only=False).count()
        needed = {str(Campaign.Goal.ONE): 1, str(Campaign.Goal.DIFFERENCE): 2}.get(campaign.goal)
        if campaign.focus_systems or needed is None or pooled <= needed:
            return []
        current = compared_systems(campaign)
        what = "the pair compared" if needed == 2 else "the system evaluated"
        taken = " minus ".join(current)
        return [
            Problem(
                "compared_not_chosen",
                pooled,
                tuple(current),
                f"runs uploaded and {what} not chosen: the first uploaded would be taken ({taken}); "
                f"choose under {'Compared pair' if needed == 2 else 'Evaluated system'} on this page",
            )
        ]

    def started(self, campaign: Campaign) -> None:
        # The systems the sampling plans for are stored as chosen, so that the page, the API and
        # config.json name them even when the coordinator kept the first runs uploaded.
        if not campaign.focus_systems and campaign.goal in (Campaign.Goal.ONE, Campaign.Goal.DIFFERENCE):
            campaign.focus_systems = compared_systems(campaign)
            Campaign.objects.filter(pk=campaign.pk).update(focus_systems=campaign.focus_systems)
        # What changed in the draft since its last fit (a judge's labels, say) shapes the first draws.
        sampling_state_recompute(campaign)
        campaign_verdict_sync(campaign)
        draws_top_up(campaign_id=campaign.pk)

    def recompute(self, campaign: Campaign) -> None:
        """The sampling engine after answers: refit the label and cost models, recompute q (when
        anything changed), top up the draws, store an estimate snapshot (when anything changed)."""
        if not PoolItem.objects.filter(campaign=campaign).exists():
            return
        # Fitting runs outside any transaction: a judgment never waits for it.
        sampling_state_recompute(campaign)
        decided = verdicts_update(campaign)
        if decided:
            # A verdict stops its top-up: the design changes, and tasks beyond the budget go.
            campaign.refresh_from_db()
            sampling_state_recompute(campaign)
            tasks_trim_to_budget(campaign_id=campaign.pk)
        draws_top_up(campaign_id=campaign.pk)
        campaign.refresh_from_db()
        snapshot_record(campaign)
        arrival_reports_refresh(campaign)
        verdict_events_emit(campaign, decided)
        budget_spent_emit(campaign)

    def progress(self, campaign: Campaign) -> Progress:
        return graded_progress(campaign)

    def dashboard_page(self, request: HttpRequest, campaign: Campaign) -> HttpResponse:
        return views.dashboard_page(request, campaign)

    def campaign_section(self, request: HttpRequest, campaign: Campaign) -> dict[str, Any] | None:
        return views.campaign_section(request, campaign)

    def campaign_panels(self, request: HttpRequest, campaign: Campaign) -> list[dict[str, Any]]:
        return [*super().campaign_panels(request, campaign), views.judges_panel(request, campaign)]
