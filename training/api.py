"""The training mode's REST routes: its uploads and its summary."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.exceptions import NotFound
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from labeling.access import campaign_for
from labeling.api.common import ImportApi
from labeling.models import Campaign
from labeling.permissions import VIEW_RESULTS
from labeling.strict_json import StrictSerializer
from training import selectors, services


class FeaturesImportApi(ImportApi):
    """The feature pool: LETOR / SVMlight rows (`grade qid:Q 1:v ... # docid = D`; grade -1 or
    missing = unlabeled; without docids, ids are positions within the query)."""

    kind = "features"
    many_files = True

    def run_import(self, campaign: Campaign, files: list[tuple[str, Any]], file_format: str | None) -> Any:
        return services.pool_upload(campaign=campaign, files=files)


class TrainingLabelsImportApi(ImportApi):
    """Existing labels for pool rows: TREC qrels or labeled LETOR rows."""

    kind = "training_labels"
    many_files = True

    def run_import(self, campaign: Campaign, files: list[tuple[str, Any]], file_format: str | None) -> Any:
        return services.labels_upload(campaign=campaign, files=files)


class TestQueriesImportApi(ImportApi):
    """Held-out test queries (labeled LETOR rows) for the learning curve."""

    kind = "test"
    many_files = True

    def run_import(self, campaign: Campaign, files: list[tuple[str, Any]], file_format: str | None) -> Any:
        return services.test_upload(campaign=campaign, files=files)


class ScoresImportApi(ImportApi):
    """Scores of your own N models per pool row (`qid docid s_1 ... s_N`): no model is trained."""

    kind = "scores"

    def run_import(self, campaign: Campaign, files: list[tuple[str, Any]], file_format: str | None) -> Any:
        return services.scores_upload(campaign=campaign, files=files)


class RoundSerializer(StrictSerializer):
    number = serializers.IntegerField()
    strategy = serializers.CharField(
        help_text="the selection rule (' (drawn)' when drawn), or 'final': the row after the last "
        "round, which selects nothing and scores a model fitted on every label"
    )
    model = serializers.CharField()
    labels_before = serializers.IntegerField()
    selected = serializers.IntegerField()
    judged = serializers.IntegerField()
    assessor_seconds = serializers.FloatField()
    fit_seconds = serializers.FloatField()
    select_seconds = serializers.FloatField()
    test_dcg = serializers.FloatField(allow_null=True)
    seed = serializers.IntegerField()
    final = serializers.BooleanField(help_text="the row after the last round (strategy 'final')")


class TrainingSummarySerializer(StrictSerializer):
    strategy = serializers.CharField()
    drawn = serializers.BooleanField()
    selection_mode = serializers.CharField()
    rounds = RoundSerializer(many=True)
    learning_curve = serializers.ListField(child=serializers.DictField())
    grade_mix = serializers.ListField(child=serializers.DictField())
    coverage = serializers.DictField()
    queries = serializers.ListField(child=serializers.DictField())


class TrainingSummaryApi(APIView):
    """Rounds, learning curve, grade mix, coverage and the queries picked (with EL(q))."""

    @extend_schema(responses={200: TrainingSummarySerializer})
    def get(self, request: Request, campaign_id: int) -> Response:
        campaign = campaign_for(request, campaign_id, VIEW_RESULTS)
        if campaign.judging_mode != "training":
            raise NotFound("This campaign is not a training-data campaign.")
        return Response(TrainingSummarySerializer(selectors.training_summary(campaign)).data)
