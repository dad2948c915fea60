"""The side-by-side judging mode, registered with the core's mode seam (labeling.modes) from
SxsConfig.ready(): assessors compare two systems' top-K lists for a topic on a five-level
scale; documents of the lists without a grade are graded first (or count as 0)."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

from django.http import HttpRequest, HttpResponse
from django.urls import reverse
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.serializers import Serializer

from labeling.leases import LeaseConflict
from labeling.models import Campaign
from labeling.modes import Export, JudgingMode
from labeling.permissions import MANAGE
from labeling.selectors import Progress, Throughput
from sxs import api, exports, selectors, services, shortcuts, views
from sxs.models import SxsAnswer, SxsTask
from sxs.serializers import SxsAnswerInputSerializer, SxsItemSerializer

SXS_EXPORTS = (
    Export(
        "api-sxs-export-answers-tsv",
        "sxs/export/answers.tsv",
        "-sxs-answers.tsv",
        "Side-by-side answers (TSV)",
        "text/tab-separated-values; charset=utf-8",
        exports.answers_tsv,
        note="first four columns: topic, system A, system B, preference (negative = A better), "
        "the core's PREFS.tsv",
    ),
    Export(
        "api-sxs-export-answers-jsonl",
        "sxs/export/answers.jsonl",
        "-sxs-answers.jsonl",
        "Side-by-side answers (JSON Lines)",
        "application/x-ndjson",
        exports.answers_jsonl,
    ),
    Export(
        "api-sxs-export-learned-dcg-json",
        "sxs/export/learned_dcg.json",
        "-learned_dcg.json",
        "Learned DCG (JSON)",
        "application/json",
        exports.learned_dcg_json,
        stream=False,
        note="gains, discounts, W, T(W), sigma2/sigma1, C, accuracies, intervals, counts, conventions",
    ),
    Export(
        "api-sxs-export-learned-dcg-gains",
        "sxs/export/learned_dcg_gains.txt",
        "-learned_dcg_gains.txt",
        "Learned gains for trec_eval, ir_measures and evaluate (text)",
        "text/plain; charset=utf-8",
        exports.learned_dcg_gains_txt,
        stream=False,
    ),
)


class SxsMode(JudgingMode):
    name = "sxs"
    label = "Side-by-side result lists"
    task_kind = selectors.ITEM_KIND
    answer_field = "preference"
    shortcut_pages = shortcuts.PAGES
    shortcut_actions = shortcuts.ACTIONS
    uploads = ("topics", "documents", "runs", "qrels")
    setting_names = tuple(services.SETTING_FIELDS)
    form_fields = (
        "metric",
        "grades",
    )  # the metric's cutoff is the lists' length; grades for documents graded first
    exports = SXS_EXPORTS
    judgments_word = "answers"
    units_word = "comparisons"

    def configure(self, campaign: Campaign, settings: Mapping[str, Any]) -> None:
        super().configure(campaign, settings)
        services.sxs_configure(campaign=campaign, **settings)

    def settings_of(self, campaign: Campaign) -> dict[str, Any]:
        settings = selectors.sxs_settings(campaign)
        return {name: getattr(settings, name) for name in self.setting_names}

    def describe(self, campaign: Campaign) -> str:
        settings = selectors.sxs_settings(campaign)
        unjudged = "ungraded documents graded first" if settings.unjudged == "judge" else "ungraded = 0"
        return f"top {settings.k} lists of two systems side by side · {settings.selection} · {unjudged}"

    def start_problem(self, campaign: Campaign) -> str | None:
        if len(selectors.compared_systems(campaign)) < 2:
            return "import two or more runs first: each task compares two systems' lists"
        return None

    def started(self, campaign: Campaign) -> None:
        services.sxs_prepare(campaign=campaign)

    def recompute(self, campaign: Campaign) -> None:
        services.sxs_refit(campaign=campaign)

    def progress(self, campaign: Campaign) -> Progress:
        return selectors.sxs_progress(campaign)

    def throughput(self, campaign: Campaign) -> list[Throughput]:
        return selectors.sxs_throughput(campaign)

    def other_answers_by(self, campaign: Campaign, user_id: int) -> int:
        return SxsAnswer.objects.filter(campaign=campaign, assessor_id=user_id).count()

    def next_response(self, request: Request, campaign: Campaign) -> Response:
        return api.next_response(request, campaign)

    def answer_response(self, request: Request, task_id: int) -> Response:
        return api.answer_response(request, task_id)

    def unit_campaign(self, unit_id: int) -> tuple[int, str] | None:
        return SxsTask.objects.filter(pk=unit_id).values_list("campaign_id", "campaign__judging_mode").first()

    def lease_hold(
        self, unit_id: int, assessor: Any, state: str, stamp: datetime | None = None
    ) -> bool | None:
        task = SxsTask.objects.filter(pk=unit_id).select_related("campaign").first()
        if task is None:
            return False
        return services.sxs_lease_hold(task=task, assessor=assessor, state=state, stamp=stamp)

    def skip(self, unit_id: int, assessor: Any, reason: str, note: str) -> bool:
        task = SxsTask.objects.filter(pk=unit_id).first()
        if task is None:
            raise LeaseConflict("no such comparison is leased to you")
        services.sxs_skip(task=task, assessor=assessor, reason=reason, note=note)
        return True

    def undo_response(self, request: Request, campaign: Campaign) -> Response:
        return api.undo_response(request, campaign)

    def item_serializer(self) -> type[Serializer]:
        return SxsItemSerializer

    def answer_serializer(self) -> type[Serializer]:
        return SxsAnswerInputSerializer

    def judge_page(self, request: HttpRequest, campaign: Campaign) -> HttpResponse:
        return views.judge_page(request, campaign)

    def dashboard_page(self, request: HttpRequest, campaign: Campaign) -> HttpResponse:
        return views.dashboard_page(request, campaign)

    def campaign_section(self, request: HttpRequest, campaign: Campaign) -> dict[str, Any] | None:
        return {
            "template": "sxs/_section.html",
            "sxs": selectors.sxs_settings(campaign),
            "data": selectors.dashboard_data(campaign),
            "settings_url": (
                reverse("sxs:settings", args=[campaign.pk])
                if request.user.has_perm(MANAGE, campaign)
                else None
            ),
            "units_word": self.units_word,
        }
