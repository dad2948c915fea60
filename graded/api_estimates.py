"""What graded sampling estimates: current estimates, their history, the sampling distribution,
throughput and new runs evaluated on the stored draws."""

from __future__ import annotations

from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import status
from rest_framework.exceptions import NotFound
from rest_framework.parsers import FormParser, MultiPartParser
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

import sampling
from graded import selectors as graded_selectors
from graded.serializers import (
    EstimatesSerializer,
    RunEvaluationSerializer,
    SamplingTopicSerializer,
    SnapshotSerializer,
    ThroughputSerializer,
)
from labeling.access import campaign_for
from labeling.api.common import import_failed, query_number, upload_errors
from labeling.import_reports import ImportFailed
from labeling.models import Campaign
from labeling.modes import mode_of
from labeling.permissions import MANAGE, VIEW_RESULTS
from labeling.serializers import ErrorsSerializer, UploadSerializer
from operations.freshness import campaign_freshness
from sampling import estimates_current, evaluation_runs_import, run_evaluate, sampling_per_topic


def sampling_campaign_for(request: Request, campaign_id: int, permission: str) -> Campaign:
    """`campaign_for`, and 404 when the campaign's judging mode does not sample and estimate
    (pairwise, top-k: their results are on their own dashboard and endpoints)."""
    campaign = campaign_for(request, campaign_id, permission)
    if not mode_of(campaign).uses_sampling:
        raise NotFound("This campaign's judging mode does not sample or estimate metrics.")
    return campaign


class EstimatesApi(APIView):
    """The current estimate of every pooled system and metric, the goal's difference, spent and budget."""

    @extend_schema(responses={200: EstimatesSerializer})
    def get(self, request: Request, campaign_id: int) -> Response:
        campaign = sampling_campaign_for(request, campaign_id, VIEW_RESULTS)
        result = estimates_current(campaign)
        result.pop("fingerprint", None)
        # How current the worker's stored state is (the figures above are current either way:
        # computed here when the stored ones are behind).
        result["freshness"] = campaign_freshness(campaign)
        return Response(result)


class EstimatesHistoryApi(APIView):
    """The stored estimate snapshots, oldest first (estimates against budget spent); with
    `?after=<id>` only the snapshots newer than that one, so a dashboard fetches what is new."""

    @extend_schema(
        parameters=[OpenApiParameter("after", int, description="only snapshots with a larger id")],
        responses={200: SnapshotSerializer(many=True)},
    )
    def get(self, request: Request, campaign_id: int) -> Response:
        campaign = sampling_campaign_for(request, campaign_id, VIEW_RESULTS)
        return Response(sampling.estimates_history(campaign, after=query_number(request, "after")))


class SamplingApi(APIView):
    """The current sampling distribution per topic: q, query cost (mean 1) and expected metric."""

    @extend_schema(responses={200: SamplingTopicSerializer(many=True)})
    def get(self, request: Request, campaign_id: int) -> Response:
        campaign = sampling_campaign_for(request, campaign_id, VIEW_RESULTS)
        return Response(sampling_per_topic(campaign))


class ThroughputApi(APIView):
    """Assessor throughput: judgments, median and mean seconds per judgment, judgments per hour."""

    @extend_schema(responses={200: ThroughputSerializer})
    def get(self, request: Request, campaign_id: int) -> Response:
        campaign = sampling_campaign_for(request, campaign_id, VIEW_RESULTS)
        return Response(graded_selectors.campaign_throughput_summary(campaign))


class EvaluateRunApi(APIView):
    """Evaluate new runs on the stored draws (GET: every evaluation-only run; POST: upload one)."""

    parser_classes = [MultiPartParser, FormParser]

    @extend_schema(responses={200: RunEvaluationSerializer(many=True)})
    def get(self, request: Request, campaign_id: int) -> Response:
        campaign = sampling_campaign_for(request, campaign_id, VIEW_RESULTS)
        systems = campaign.systems.filter(evaluation_only=True).order_by("id")
        return Response([run_evaluate(campaign, system) for system in systems])

    @extend_schema(
        request={"multipart/form-data": UploadSerializer},
        responses={201: RunEvaluationSerializer(many=True), 400: OpenApiResponse(ErrorsSerializer)},
    )
    def post(self, request: Request, campaign_id: int) -> Response:
        campaign = sampling_campaign_for(request, campaign_id, MANAGE)
        uploads = request.FILES.getlist("file")
        if not uploads:
            return upload_errors("upload a run in the field 'file'")
        try:
            systems = evaluation_runs_import(
                campaign=campaign, files=[(upload.name, upload) for upload in uploads]
            )
        except ImportFailed as failure:
            return import_failed(failure)
        return Response(
            [run_evaluate(campaign, system) for system in systems], status=status.HTTP_201_CREATED
        )
