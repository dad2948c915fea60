"""The side-by-side mode's API: its answers to the core's /next/, /tasks/{id}/answer/ and
/undo/, its own routes under /api/campaigns/{id}/sxs/ (settings, skip), and the learned DCG
(/api/campaigns/{id}/learned-dcg/ and its apply/)."""

from __future__ import annotations

from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import status
from rest_framework.exceptions import NotFound
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from graded.serializers import TaskOutputSerializer
from labeling.access import campaign_for, request_user
from labeling.api.common import bad_request, conflict
from labeling.metric import campaign_metric_label
from labeling.models import Campaign, Skip
from labeling.permissions import JUDGE, MANAGE, VIEW_RESULTS
from sxs import selectors, services
from sxs.models import SxsSettings
from sxs.serializers import (
    LearnedDcgApplyInputSerializer,
    LearnedDcgApplyOutputSerializer,
    LearnedDcgSerializer,
    SkipInputSerializer,
    SxsAnswerInputSerializer,
    SxsAnswerOutputSerializer,
    SxsItemSerializer,
    SxsSettingsSerializer,
)


def _settings_for(campaign: Campaign) -> SxsSettings:
    settings = selectors.sxs_settings_get(campaign)
    if settings is None:
        raise NotFound("This campaign does not judge side by side.")
    return settings


def _item_response(item: services.Item | None, settings: SxsSettings) -> Response:
    if item is None:
        return Response(status=status.HTTP_204_NO_CONTENT)
    if item.grade is not None:
        return Response(TaskOutputSerializer.of(item.grade))
    assert item.sxs is not None
    return Response(SxsItemSerializer.of(item.sxs, settings.k))


def next_response(request: Request, campaign: Campaign) -> Response:
    """200 with the user's next item (`kind` "sxs", or "grade" for a document grade mixed in),
    204 when nothing is left."""
    settings = _settings_for(campaign)
    return _item_response(services.sxs_next(campaign=campaign, assessor=request_user(request)), settings)


def answer_response(request: Request, task_id: int) -> Response:
    """Store the user's answer to an SxS task: 201 stored, 200 a repeat, 409 lease, 400 input."""
    task = selectors.sxs_task_get(task_id)
    if task is None:
        raise NotFound("No such task.")
    campaign_for(request, task.campaign_id, JUDGE)
    data = SxsAnswerInputSerializer(data=request.data)
    data.is_valid(raise_exception=True)
    try:
        answer, created = services.sxs_answer(
            task=task,
            assessor=request_user(request),
            preference=data.validated_data["preference"],
            seconds=data.validated_data.get("seconds"),
            comment=data.validated_data.get("comment", ""),
        )
    except services.LeaseConflict as clash:
        return conflict(str(clash))
    except ValueError as error:
        return bad_request(str(error))
    code = status.HTTP_201_CREATED if created else status.HTTP_200_OK
    return Response(SxsAnswerOutputSerializer(answer).data, status=code)


def undo_response(request: Request, campaign: Campaign) -> Response:
    """Undo the user's last answer (SxS or grade); 200 with its item again, 409 if not allowed."""
    settings = _settings_for(campaign)
    try:
        item = services.sxs_undo(campaign=campaign, assessor=request_user(request))
    except services.UndoNotAllowed as refusal:
        return conflict(str(refusal))
    return _item_response(item, settings)


class SxsSettingsApi(APIView):
    """Read (members) or change (coordinators, before the first answer) the SxS settings."""

    @extend_schema(responses={200: SxsSettingsSerializer})
    def get(self, request: Request, campaign_id: int) -> Response:
        campaign = campaign_for(request, campaign_id, None)
        return Response(SxsSettingsSerializer(_settings_for(campaign)).data)

    @extend_schema(request=SxsSettingsSerializer, responses={200: SxsSettingsSerializer})
    def put(self, request: Request, campaign_id: int) -> Response:
        campaign = campaign_for(request, campaign_id, MANAGE)
        _settings_for(campaign)
        data = SxsSettingsSerializer(data=request.data, partial=True)
        data.is_valid(raise_exception=True)
        try:
            settings = services.sxs_configure(campaign=campaign, **data.validated_data)
        except ValueError as error:
            return bad_request(str(error))
        return Response(SxsSettingsSerializer(settings).data)


class SxsSkipApi(APIView):
    """Pass your current SxS task on: the same skip as `POST /api/tasks/{task}/skip/` with
    `"kind": "sxs"` (recorded alike: skip counts, the skips export). `reason` is one of the skip
    reasons, or free text, stored as reason "other" with the text as its note. 204 done; 409
    when you do not hold it."""

    @extend_schema(
        request=SkipInputSerializer,
        responses={204: None, 409: OpenApiResponse(description="not your task (answered, expired)")},
    )
    def post(self, request: Request, campaign_id: int, task_id: int) -> Response:
        campaign = campaign_for(request, campaign_id, JUDGE)
        _settings_for(campaign)
        task = selectors.sxs_task_get(task_id)
        if task is None or task.campaign_id != campaign.pk:
            raise NotFound("No such task.")
        data = SkipInputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        text = data.validated_data["reason"].strip()
        reason, note = (text, "") if text in Skip.Reason.values else (Skip.Reason.OTHER, text)
        try:
            services.sxs_skip(task=task, assessor=request_user(request), reason=reason, note=note)
        except services.LeaseConflict as clash:
            return conflict(str(clash))
        except ValueError as error:
            return bad_request(str(error))
        return Response(status=status.HTTP_204_NO_CONTENT)


class LearnedDcgApi(APIView):
    """The learned DCG gains and discounts of an SxS campaign, with intervals, accuracies and the
    leaderboard under learned and standard DCG (coordinators and admins; 404 for other modes)."""

    @extend_schema(responses={200: LearnedDcgSerializer})
    def get(self, request: Request, campaign_id: int) -> Response:
        campaign = campaign_for(request, campaign_id, VIEW_RESULTS)
        _settings_for(campaign)
        return Response(LearnedDcgSerializer(selectors.learned_dcg_summary(campaign)).data)


class LearnedDcgApplyApi(APIView):
    """Make another campaign (that you manage) measure DCG and nDCG with the gains and discounts
    learned here: 200 done; 400 with the reason when there is no fit or they do not fit it."""

    @extend_schema(
        request=LearnedDcgApplyInputSerializer,
        responses={
            200: LearnedDcgApplyOutputSerializer,
            400: OpenApiResponse(description="no fit yet, or wrong number of grades or cutoff > K"),
        },
    )
    def post(self, request: Request, campaign_id: int) -> Response:
        campaign = campaign_for(request, campaign_id, VIEW_RESULTS)
        _settings_for(campaign)
        data = LearnedDcgApplyInputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        target = campaign_for(request, data.validated_data["campaign"], MANAGE)
        try:
            target = services.learned_dcg_apply(campaign=campaign, target=target)
        except ValueError as error:
            return bad_request(str(error))
        body = {
            "campaign": target.pk,
            "custom_dcg": target.custom_dcg,
            "metric_label": campaign_metric_label(target),
        }
        return Response(LearnedDcgApplyOutputSerializer(body).data)
