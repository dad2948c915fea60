"""The pair judging modes, registered with the core's mode seam (labeling.modes) from
PairwiseConfig.ready(): `pairwise` (pre-drawn random pairs per topic) and `topk` (Niu et al.'s
HeapSort top-k per topic and assessor). Both keep their settings in PairwiseSettings and serve
pairs from the pairwise app's services; they differ in what a unit of work is and in the
top-k exports."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django import forms
from django.http import HttpRequest, HttpResponse
from django.urls import reverse
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.serializers import Serializer

from estimation.learned_dcg.preferences import Preference
from labeling.models import Campaign, PoolItem
from labeling.modes import Export, JudgingMode
from labeling.permissions import MANAGE
from labeling.selectors import Progress, Throughput
from pairwise import api, dashboard, exports, selectors, services, shortcuts, views
from pairwise.models import Comparison, PairTask
from pairwise.serializers import PairAnswerInputSerializer, PairOutputSerializer


def _topk_qrels(campaign: Campaign) -> Any:
    return exports.topk_qrels(campaign, selectors.pairwise_settings(campaign).k)


PREFERENCE_EXPORTS = (
    Export(
        "api-pairwise-export-preferences-csv",
        "pairwise/export/preferences.csv",
        "-preferences.csv",
        "Preferences (CSV)",
        "text/csv",
        exports.preferences_csv,
        note="topic, documents as shown, outcome, assessor, seconds, side",
    ),
    Export(
        "api-pairwise-export-preferences-jsonl",
        "pairwise/export/preferences.jsonl",
        "-preferences.jsonl",
        "Preferences (JSON Lines)",
        "application/x-ndjson",
        exports.preferences_jsonl,
    ),
)
TOPK_EXPORTS = (
    Export(
        "api-pairwise-export-topk",
        "pairwise/export/topk.jsonl",
        "-topk.jsonl",
        "Top-k orders (JSON Lines)",
        "application/x-ndjson",
        exports.topk_jsonl,
    ),
    Export(
        "api-pairwise-export-qrels",
        "pairwise/export/topk.qrels",
        "-topk.qrels",
        "Position-aware labels (TREC qrels)",
        "text/plain",
        _topk_qrels,
        note="k + 1 - position for the top k, 0 for the other compared documents",
    ),
)


class PairMode(JudgingMode):
    """What both pair modes share."""

    task_kind = "pair"
    answer_field = "outcome"
    shortcut_pages = shortcuts.PAGES
    shortcut_actions = shortcuts.ACTIONS
    setting_names = tuple(services.SETTING_FIELDS)
    units_word = "pairs"
    judgments_word = "comparisons"

    def configure(self, campaign: Campaign, settings: Mapping[str, Any]) -> None:
        super().configure(campaign, settings)
        services.pairwise_configure(campaign=campaign, **settings)

    def settings_of(self, campaign: Campaign) -> dict[str, Any]:
        pairwise = selectors.pairwise_settings(campaign)
        return {name: getattr(pairwise, name) for name in self.setting_names}

    def start_problem(self, campaign: Campaign) -> str | None:
        if not PoolItem.objects.filter(campaign=campaign).exists():
            return "import runs first: pairs are made from the documents the runs rank"
        return None

    def progress(self, campaign: Campaign) -> Progress:
        return selectors.pair_progress(campaign)

    def answer_preferences(self, campaign: Campaign) -> list[Preference]:
        return selectors.campaign_preferences(campaign)

    def throughput(self, campaign: Campaign) -> list[Throughput]:
        return selectors.comparison_throughput(campaign)["assessors"]

    def other_answers_by(self, campaign: Campaign, user_id: int) -> int:
        return Comparison.objects.filter(campaign=campaign, assessor_id=user_id).count()

    def next_response(self, request: Request, campaign: Campaign) -> Response:
        return api.next_response(request, campaign)

    def answer_response(self, request: Request, task_id: int) -> Response:
        return api.answer_response(request, task_id)

    def undo_response(self, request: Request, campaign: Campaign) -> Response:
        return api.undo_response(request, campaign)

    def unit_campaign(self, unit_id: int) -> tuple[int, str] | None:
        units = PairTask.objects.filter(pk=unit_id)
        return units.values_list("campaign_id", "campaign__judging_mode").first()

    def skip(self, unit_id: int, assessor: Any, reason: str, note: str) -> bool:
        task = PairTask.objects.filter(pk=unit_id).first()
        if task is None:
            raise services.LeaseConflict("no such pair is leased to you")
        services.pair_skip(task=task, assessor=assessor, reason=reason, note=note)
        return True

    def item_serializer(self) -> type[Serializer]:
        return PairOutputSerializer

    def answer_serializer(self) -> type[Serializer]:
        return PairAnswerInputSerializer

    def judge_page(self, request: HttpRequest, campaign: Campaign) -> HttpResponse:
        return views.judge_page(request, campaign)

    def dashboard_page(self, request: HttpRequest, campaign: Campaign) -> HttpResponse:
        return views.dashboard_page(request, campaign)

    def campaign_section(self, request: HttpRequest, campaign: Campaign) -> dict[str, Any] | None:
        section = dashboard.dashboard_section(campaign) or {}
        return {
            **section,
            "template": "pairwise/_dashboard.html",
            "settings_url": (
                reverse("pairwise:settings", args=[campaign.pk])
                if request.user.has_perm(MANAGE, campaign)
                else None
            ),
            "units_word": self.units_word,
        }


class PairwiseMode(PairMode):
    name = "pairwise"
    label = "Pairwise preferences"
    exports = PREFERENCE_EXPORTS

    def settings_of(self, campaign: Campaign) -> dict[str, Any]:
        return {**super().settings_of(campaign), "k": None}  # k orders a top-k; no top-k here

    def describe(self, campaign: Campaign) -> str:
        pairwise = selectors.pairwise_settings(campaign)
        return (
            f"{pairwise.pairs_per_topic} random pairs per topic from the best "
            f"{pairwise.documents_per_topic} documents of the runs"
        )


class TopKMode(PairMode):
    name = "topk"
    label = "HeapSort top-k by pairwise preferences"
    exports = PREFERENCE_EXPORTS + TOPK_EXPORTS
    form_fields = ("topk_k",)
    units_word = "top-k lists"

    def setting_form_fields(self) -> dict[str, tuple[str, forms.Field]]:
        k = forms.IntegerField(
            label="k (top-k)", min_value=1, required=False, help_text="Only for top-k judging: default 10."
        )
        return {"topk_k": ("k", k)}

    def describe(self, campaign: Campaign) -> str:
        pairwise = selectors.pairwise_settings(campaign)
        return f"top {pairwise.k} of the best {pairwise.documents_per_topic} documents per topic"
