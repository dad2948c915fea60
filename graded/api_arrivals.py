"""Runs that arrive in a living campaign (`sampling.arrivals`): add one with a human top-up, and
read its estimate and its difference with the reference as the top-up is judged."""

from __future__ import annotations

from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import status
from rest_framework.exceptions import NotFound
from rest_framework.parsers import FormParser, MultiPartParser
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from graded.api_estimates import sampling_campaign_for
from graded.serializers import ArrivalInputSerializer, ArrivalSerializer
from labeling.api.common import bad_request, import_failed, upload_errors
from labeling.import_reports import ImportFailed
from labeling.models import Arrival
from labeling.permissions import MANAGE, VIEW_RESULTS
from labeling.serializers import ErrorsSerializer
from sampling import arrival_add, arrival_report, arrivals_summaries


class ArrivalsApi(APIView):
    """The campaign's arrivals (GET), or a run that arrives (POST multipart: `file`, `budget` or
    `target_width`, optional `reference`, and its verdict's `rule`, `question`, `margin`, fixed
    with it): it joins the pool, the campaign reopens for the top-up, 201 with its `id`. A run
    identical to its reference answers at once with the verdict `unchanged` and no top-up. A
    query-level campaign judges its documents on the drawn topics first (a budget too small for
    them answers 400 with the amount needed)."""

    parser_classes = [MultiPartParser, FormParser]

    @extend_schema(responses={200: ArrivalSerializer(many=True)})
    def get(self, request: Request, campaign_id: int) -> Response:
        campaign = sampling_campaign_for(request, campaign_id, VIEW_RESULTS)
        return Response(arrivals_summaries(campaign))

    @extend_schema(
        request={"multipart/form-data": ArrivalInputSerializer},
        responses={201: ArrivalSerializer, 400: OpenApiResponse(ErrorsSerializer)},
    )
    def post(self, request: Request, campaign_id: int) -> Response:
        campaign = sampling_campaign_for(request, campaign_id, MANAGE)
        uploads = request.FILES.getlist("file")
        if not uploads:
            return upload_errors("upload the arriving run in the field 'file'")
        fields = ArrivalInputSerializer(data=request.data)  # a form: its fields parsed as forms are
        fields.is_valid(raise_exception=True)
        try:
            arrival = arrival_add(
                campaign=campaign,
                files=[(upload.name, upload) for upload in uploads],
                budget=fields.validated_data.get("budget"),
                target_width=fields.validated_data.get("target_width"),
                reference=fields.validated_data.get("reference"),
                rule=fields.validated_data.get("rule"),
                question=fields.validated_data.get("question"),
                margin=fields.validated_data.get("margin"),
            )
        except ImportFailed as failure:
            return import_failed(failure)
        except ValueError as error:
            return bad_request(str(error))
        return Response(arrival_report(arrival), status=status.HTTP_201_CREATED)


class ArrivalApi(APIView):
    """One arrival: status, its estimate, the difference with the reference (value, se, low,
    high), the probability that their order is right, new items, top-up budget and judged: as
    the worker last computed them (`report_at`), with the verdict as stored now."""

    @extend_schema(responses={200: ArrivalSerializer})
    def get(self, request: Request, campaign_id: int, arrival_id: int) -> Response:
        campaign = sampling_campaign_for(request, campaign_id, VIEW_RESULTS)
        arrival = (
            Arrival.objects.filter(campaign=campaign, pk=arrival_id)
            .select_related("campaign", "system", "reference", "verdict_record")
            .first()
        )
        if arrival is None:
            raise NotFound("No such arrival in this campaign.")
        return Response(arrival_report(arrival))
