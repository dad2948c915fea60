"""The `training` judging mode: assessors grade the items each round selects (the graded page
and answer flow unchanged); the mode uploads the feature pool, selects rounds in the worker's
recompute, and has its own dashboard and exports."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django.http import HttpRequest, HttpResponse
from rest_framework.request import Request

from graded.modes import GradedTasksMode
from labeling.models import Campaign, Document, Topic
from labeling.modes import Export
from labeling.preflight import EXAMPLES_SHOWN, Problem
from labeling.selectors import Progress
from training import exports, selectors, services, views
from training.models import TrainingPool

TRAINING_EXPORTS = (
    Export(
        "api-training-export-letor",
        "training/export/training.letor",
        "-training.letor",
        "Judged training set (LETOR)",
        "text/plain",
        exports.letor_training_set,
        place="dashboard",
        note="every labeled row: uploaded labels and the assessors' grades",
    ),
    Export(
        "api-training-export-qrels",
        "training/export/qrels.txt",
        "-training-qrels.txt",
        "Training labels (qrels)",
        "text/plain",
        exports.training_qrels,
        place="dashboard",
    ),
    Export(
        "api-training-export-selection",
        "training/export/selection.csv",
        "-selection.csv",
        "Selection log (CSV)",
        "text/csv",
        exports.selection_log,
        place="dashboard",
        note="round, qid, docid, strategy, EL(q), EL(j), inclusion probabilities if drawn, seed, versions",
    ),
)


class TrainingMode(GradedTasksMode):
    """Items are graded tasks (served, answered, skipped and undone the graded way); the mode
    chooses them in rounds."""

    name = "training"
    label = "Training data (ELO-DCG)"
    uploads = ("topics", "documents", "features", "training_labels", "test", "scores")
    setting_names = services.SETTING_NAMES
    form_fields = ("grades",)
    exports = TRAINING_EXPORTS

    def configure(self, campaign: Campaign, settings: Mapping[str, Any]) -> None:
        super().configure(campaign, settings)
        services.training_configure(campaign, settings)

    def settings_of(self, campaign: Campaign) -> dict[str, Any]:
        record = services.settings_of(campaign)
        return {name: getattr(record, name) for name in self.setting_names}

    def describe(self, campaign: Campaign) -> str:
        record = services.settings_of(campaign)
        how = "drawn" if record.drawn else "top"
        return (
            f"{record.strategy} ({how}), {record.round_size} labels per round · {campaign.grade_count} grades"
        )

    def cloned(self, source: Campaign, clone: Campaign) -> None:
        super().cloned(source, clone)  # gold questions
        record = TrainingPool.objects.filter(campaign=source).first()
        if record is not None:
            record.pk, record.campaign = None, clone
            record.save(force_insert=True)

    def preflight_problems(self, campaign: Campaign) -> list[Problem]:
        """The pool's queries and documents have no text until topics and documents are uploaded:
        assessors would judge by ids alone."""
        record = TrainingPool.objects.filter(campaign=campaign).first()
        if record is None:
            return []
        problems = []
        if not Topic.objects.filter(campaign=campaign, is_stub=False).exists():
            pool = services.pool_from_bytes(record.pool)
            problems.append(
                Problem(
                    "topics_missing",
                    pool.n_queries,
                    tuple(pool.query_ids[:EXAMPLES_SHOWN]),
                    "no topics uploaded for the pool's queries: assessors see only the query id "
                    "(upload the topics file)",
                )
            )
        if not Document.objects.filter(campaign=campaign, is_stub=False).exists():
            problems.append(
                Problem(
                    "documents_missing",
                    record.rows,
                    (),
                    "no documents uploaded for the pool's rows: assessors judge by the document id "
                    "(upload the documents file)",
                )
            )
        return problems

    def start_problem(self, campaign: Campaign) -> str | None:
        if not TrainingPool.objects.filter(campaign=campaign).exists():
            return "upload the feature pool first"
        return None

    def started(self, campaign: Campaign) -> None:
        # The first round is selected by the worker's recompute (fitting takes seconds to
        # minutes): the start transaction only asks for it.
        from django.db import transaction

        from labeling.recompute import recompute_soon

        campaign_id = campaign.pk
        transaction.on_commit(lambda: recompute_soon(campaign_id))

    def recompute(self, campaign: Campaign) -> None:
        services.rounds_advance(campaign=campaign)

    def next_response(self, request: Request, campaign: Campaign) -> HttpResponse:
        response = super().next_response(request, campaign)
        if (
            response.status_code == 204
            and campaign.status == Campaign.Status.RUNNING
            and not services.round_waiting(campaign)
        ):
            # Nothing to claim: the last items of the round are held (no answer asked for the
            # recompute since). Ask for it now, so the next round is selected without waiting on
            # them; the request is coalesced, however many assessors ask.
            from labeling.recompute import recompute_soon

            recompute_soon(campaign.pk)
        return response

    def progress(self, campaign: Campaign) -> Progress:
        return selectors.training_progress(campaign)

    def dashboard_page(self, request: HttpRequest, campaign: Campaign) -> HttpResponse:
        return views.dashboard_page(request, campaign)

    def campaign_section(self, request: HttpRequest, campaign: Campaign) -> dict[str, Any] | None:
        return views.campaign_section(request, campaign)
