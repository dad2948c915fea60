"""Judges of a graded campaign: list and add them, upload their labels and a calibration set,
read one judge's coverage and agreement (404 for modes that do not sample)."""

from __future__ import annotations

from typing import Any

from django.db import transaction
from django.shortcuts import get_object_or_404
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import serializers, status
from rest_framework.parsers import FormParser, MultiPartParser
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from graded.api_estimates import sampling_campaign_for
from labeling.access import request_user
from labeling.api.common import bad_request, import_failed, upload_errors
from labeling.import_reports import ImportFailed
from labeling.models import Campaign
from labeling.permissions import MANAGE, VIEW_RESULTS
from labeling.serializers import ErrorsSerializer, ImportReportSerializer
from labeling.strict_json import StrictSerializer
from sampling import (
    Judge,
    JudgeSetting,
    judge_calibration_import,
    judge_choose_for_sampling,
    judge_create,
    judge_kind_choices,
    judge_kinds_help,
    judge_labels_import,
    judge_run_cancel,
    judge_run_start,
    judge_setting_kinds,
    judge_settings_all,
    judge_summary,
    judge_update,
    judges_summaries,
)


def _setting_field(setting: JudgeSetting, *, output: bool = False) -> serializers.Field:
    """The API's field of a kind's setting (`JudgeKind.settings`): optional on input, every
    judge's value (the default for another kind's) on output."""
    help_text = f"{' and '.join(judge_setting_kinds(setting.name))}: {setting.help or setting.label}"
    options: dict[str, Any] = {"help_text": help_text}
    if output:
        options["allow_null"] = True
    else:
        options["required"] = False
        if setting.blank_is_none:
            options["allow_null"] = True
    if setting.type == "text":
        if not output:
            options |= {"max_length": setting.max_length, "allow_blank": True}
        return serializers.CharField(**options)
    if setting.type == "boolean":
        return serializers.BooleanField(**options)
    if setting.type == "date":
        return serializers.CharField(**options) if output else serializers.DateField(**options)
    bounds: dict[str, Any] = {} if output else {"min_value": setting.minimum, "max_value": setting.maximum}
    if setting.type == "integer":
        return serializers.IntegerField(**options, **bounds)
    return serializers.FloatField(**options, **bounds)


class _WithKindSettings:
    """A serializer whose fields include every registered kind's settings, read when the
    serializer is made: a kind registered after this module was imported is offered too."""

    output = False

    def get_fields(self) -> dict[str, serializers.Field]:
        fields = super().get_fields()  # type: ignore[misc]
        for name, setting in judge_settings_all().items():
            fields.setdefault(name, _setting_field(setting, output=self.output))
        return fields


class JudgeInputSerializer(_WithKindSettings, StrictSerializer):
    kind = serializers.ChoiceField(choices=[], default="upload")
    name = serializers.CharField(max_length=200)
    model = serializers.CharField(max_length=200, required=False, allow_blank=True, default="")
    prompt = serializers.CharField(max_length=100_000, required=False, allow_blank=True, default="")
    notes = serializers.CharField(max_length=10_000, required=False, allow_blank=True, default="")
    shares_model_with = serializers.CharField(
        max_length=500,
        required=False,
        allow_blank=True,
        default="",
        help_text="systems under evaluation built on the judge's model, comma-separated "
        "(circularity warning)",
    )

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        kind = self.fields["kind"]
        kind.choices = [name for name, _ in judge_kind_choices()]  # type: ignore[attr-defined]
        kind.help_text = judge_kinds_help()


class JudgeSerializer(_WithKindSettings, StrictSerializer):
    output = True

    id = serializers.IntegerField()
    name = serializers.CharField()
    kind = serializers.CharField()
    model = serializers.CharField()
    prompt = serializers.CharField()
    notes = serializers.CharField()
    shares_model_with = serializers.ListField(child=serializers.CharField())
    simulated = serializers.BooleanField()
    used_for_sampling = serializers.BooleanField(help_text="the judge the 'judged' strategy uses")
    coverage = serializers.JSONField(help_text="{labelled, pool, outside, labels}")
    calibration_set = serializers.IntegerField(
        help_text="calibration-set pairs (other topics, with human grades)"
    )
    agreement = serializers.JSONField(
        help_text="{n_items, confusion (rows human, columns judge), kappa, weighted_kappa, binary_kappa, "
        "leniency, exact[, topics]} on the pool items both labelled"
    )
    warnings = serializers.ListField(child=serializers.CharField())
    version = serializers.IntegerField(help_text="raised by every edit of what the judge is asked")
    api_key_set = serializers.BooleanField(
        allow_null=True, help_text="endpoint: whether the web server's environment has the key variable"
    )
    total_cost = serializers.FloatField()
    thresholds = serializers.JSONField(allow_null=True, help_text="lexical: {cuts, source}")
    runnable = serializers.BooleanField()
    run = serializers.JSONField(
        allow_null=True,
        help_text="the latest run: {status, version, pairs_total, done, fraction, cached, labels, refusals, "
        "errors, skipped (pairs not sent: nothing to judge in the data; asked again by the next run), "
        "version_totals {labels, refusals, errors, skipped} (the version over every run), reasons "
        "[{outcome, reason, count}] (the commonest refusals and reasons not sent, once the run stopped), "
        "warning, requests, per_minute, tokens_in, tokens_out, cost, last_error, started_at, finished_at}",
    )


def _judge_of(campaign_id: int, judge_id: int, campaign: Campaign) -> Judge:
    return get_object_or_404(Judge, pk=judge_id, campaign=campaign)


class JudgesApi(APIView):
    """The campaign's judges with coverage, agreement and runs; POST adds one: uploaded labels, an
    OpenAI-compatible endpoint or the built-in lexical judge (`kind`)."""

    @extend_schema(responses={200: JudgeSerializer(many=True)})
    def get(self, request: Request, campaign_id: int) -> Response:
        campaign = sampling_campaign_for(request, campaign_id, VIEW_RESULTS)
        return Response(JudgeSerializer(judges_summaries(campaign), many=True).data)

    @extend_schema(request=JudgeInputSerializer, responses={201: JudgeSerializer, 400: OpenApiResponse()})
    def post(self, request: Request, campaign_id: int) -> Response:
        campaign = sampling_campaign_for(request, campaign_id, MANAGE)
        data = JudgeInputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        try:
            judge = judge_create(campaign=campaign, user=request_user(request), **data.validated_data)
        except ValueError as error:
            return bad_request(str(error))
        return Response(JudgeSerializer(judge_summary(judge)).data, status=status.HTTP_201_CREATED)


class JudgeEditSerializer(_WithKindSettings, StrictSerializer):
    """What an edit may change: every judge's model, prompt, notes and shared systems, and the
    settings of the judge's kind (`judge_update` refuses another kind's)."""

    model = serializers.CharField(max_length=200, required=False)
    prompt = serializers.CharField(max_length=100_000, required=False)
    notes = serializers.CharField(max_length=10_000, required=False, allow_blank=True)
    shares_model_with = serializers.CharField(max_length=500, required=False, allow_blank=True)
    refit = serializers.BooleanField(
        required=False, help_text="lexical: refit the thresholds at the next run (a new version)"
    )
    use_for_sampling = serializers.BooleanField(
        required=False, help_text="true: the judged strategy samples with this judge from the next refit on"
    )


class JudgeApi(APIView):
    """One judge: version, coverage of the pool, agreement with the humans (per topic on demand),
    and its latest run's progress, tokens, cost, refusals and last error. PATCH edits it: a new
    model, prompt or a setting its kind marks as changing the answers (an endpoint's base URL,
    probabilities, max_tokens; `refit` for a lexical judge) makes a new version; the other
    settings do not."""

    @extend_schema(request=JudgeEditSerializer, responses={200: JudgeSerializer, 400: OpenApiResponse()})
    def patch(self, request: Request, campaign_id: int, judge_id: int) -> Response:
        campaign = sampling_campaign_for(request, campaign_id, MANAGE)
        judge = _judge_of(campaign_id, judge_id, campaign)
        data = JudgeEditSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        changes = dict(data.validated_data)
        use_for_sampling = changes.pop("use_for_sampling", False)
        try:
            # One transaction, the edit (which checks everything before it writes) first: a
            # refused PATCH changes nothing, not even the sampling judge.
            with transaction.atomic():
                judge = judge_update(judge, user=request_user(request), **changes) if changes else judge
                if use_for_sampling:
                    judge_choose_for_sampling(judge)
        except ValueError as error:
            return bad_request(str(error))
        return Response(JudgeSerializer(judge_summary(judge)).data)

    @extend_schema(
        parameters=[OpenApiParameter("per_topic", bool, description="add the agreement per topic")],
        responses={200: JudgeSerializer},
    )
    def get(self, request: Request, campaign_id: int, judge_id: int) -> Response:
        campaign = sampling_campaign_for(request, campaign_id, VIEW_RESULTS)
        judge = _judge_of(campaign_id, judge_id, campaign)
        per_topic = request.query_params.get("per_topic", "") in ("1", "true", "yes")
        return Response(JudgeSerializer(judge_summary(judge, per_topic=per_topic)).data)


class JudgeRunApi(APIView):
    """Start (or resume) a run of an endpoint or lexical judge over the pool in the worker; the
    active run when there is one. Pairs the judge's version answered already are not asked again."""

    @extend_schema(request=None, responses={202: JudgeSerializer, 400: OpenApiResponse(ErrorsSerializer)})
    def post(self, request: Request, campaign_id: int, judge_id: int) -> Response:
        campaign = sampling_campaign_for(request, campaign_id, MANAGE)
        judge = _judge_of(campaign_id, judge_id, campaign)
        try:
            judge_run_start(judge, user=request_user(request))
        except ValueError as error:
            return bad_request(str(error))
        return Response(JudgeSerializer(judge_summary(judge)).data, status=status.HTTP_202_ACCEPTED)


class JudgeCancelApi(APIView):
    """Cancel the judge's active run (after the requests in flight; their answers are kept)."""

    @extend_schema(request=None, responses={200: JudgeSerializer})
    def post(self, request: Request, campaign_id: int, judge_id: int) -> Response:
        campaign = sampling_campaign_for(request, campaign_id, MANAGE)
        judge = _judge_of(campaign_id, judge_id, campaign)
        judge_run_cancel(judge)
        return Response(JudgeSerializer(judge_summary(judge)).data)


class JudgeLabelsUploadSerializer(serializers.Serializer):
    file = serializers.ListField(child=serializers.FileField(), help_text="one or more label files")


class JudgeCalibrationUploadSerializer(serializers.Serializer):
    human_qrels = serializers.ListField(child=serializers.FileField(), help_text="human qrels (TREC)")
    judge_labels = serializers.ListField(
        child=serializers.FileField(), help_text="the same judge's labels of those pairs"
    )


class JudgeLabelsApi(APIView):
    """Upload a judge's labels (field `file`, repeatable): TREC qrels, JSONL ({qid, docid, grade}
    or probs, optional rationale, seconds, cost) or BEIR/Hugging Face qrels (query-id, corpus-id,
    score; TSV or JSONL). A pair labelled again replaces its label; an error stores nothing."""

    parser_classes = [MultiPartParser, FormParser]
    serializer_class = JudgeLabelsUploadSerializer

    @extend_schema(
        request={"multipart/form-data": JudgeLabelsUploadSerializer},
        responses={201: ImportReportSerializer, 400: OpenApiResponse(ErrorsSerializer)},
    )
    def post(self, request: Request, campaign_id: int, judge_id: int) -> Response:
        campaign = sampling_campaign_for(request, campaign_id, MANAGE)
        judge = _judge_of(campaign_id, judge_id, campaign)
        uploads = request.FILES.getlist("file")
        if not uploads:
            return upload_errors("upload a file in the field 'file'")
        try:
            report = judge_labels_import(judge=judge, files=[(upload.name, upload) for upload in uploads])
        except ImportFailed as failure:
            return import_failed(failure)
        return Response(ImportReportSerializer(report).data, status=status.HTTP_201_CREATED)


class JudgeCalibrationApi(APIView):
    """Upload a calibration set: human qrels (field `human_qrels`) and the same judge's labels on
    other topics (field `judge_labels`). Pairs on this campaign's topics are dropped."""

    parser_classes = [MultiPartParser, FormParser]
    serializer_class = JudgeCalibrationUploadSerializer

    @extend_schema(
        request={"multipart/form-data": JudgeCalibrationUploadSerializer},
        responses={201: ImportReportSerializer, 400: OpenApiResponse(ErrorsSerializer)},
    )
    def post(self, request: Request, campaign_id: int, judge_id: int) -> Response:
        campaign = sampling_campaign_for(request, campaign_id, MANAGE)
        judge = _judge_of(campaign_id, judge_id, campaign)
        humans, labels = request.FILES.getlist("human_qrels"), request.FILES.getlist("judge_labels")
        if not humans or not labels:
            return upload_errors(
                "upload the human qrels in 'human_qrels' and the judge's labels in 'judge_labels'"
            )
        try:
            report = judge_calibration_import(
                judge=judge,
                human_qrels=[(upload.name, upload) for upload in humans],
                judge_labels=[(upload.name, upload) for upload in labels],
            )
        except ImportFailed as failure:
            return import_failed(failure)
        return Response(ImportReportSerializer(report).data, status=status.HTTP_201_CREATED)
