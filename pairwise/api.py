"""The pairwise REST API under /api/campaigns/{id}/pairwise/: one APIView per operation."""

from __future__ import annotations

from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import status
from rest_framework.exceptions import NotFound
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from labeling.access import campaign_for, request_user
from labeling.api.common import bad_request, conflict
from labeling.models import Campaign
from labeling.permissions import JUDGE, MANAGE, VIEW_RESULTS
from labeling.serializers import AgreementSerializer
from pairwise import selectors, services
from pairwise.models import PairwiseSettings, TopKHeap
from pairwise.serializers import (
    ComparisonOutputSerializer,
    PairAnswerInputSerializer,
    PairOutputSerializer,
    PairwiseSettingsSerializer,
    ResultsSerializer,
    TopKOrderSerializer,
)


def _settings_for(campaign: Campaign) -> PairwiseSettings:
    pairwise = selectors.pairwise_settings_get(campaign)
    if pairwise is None:
        raise NotFound("This campaign does not judge in pairs.")
    return pairwise


class PairwiseSettingsApi(APIView):
    """Read (members) or set (coordinators) how the campaign judges in pairs."""

    @extend_schema(responses={200: PairwiseSettingsSerializer})
    def get(self, request: Request, campaign_id: int) -> Response:
        campaign = campaign_for(request, campaign_id, None)
        return Response(PairwiseSettingsSerializer(_settings_for(campaign)).data)

    @extend_schema(request=PairwiseSettingsSerializer, responses={200: PairwiseSettingsSerializer})
    def put(self, request: Request, campaign_id: int) -> Response:
        campaign = campaign_for(request, campaign_id, MANAGE)
        data = PairwiseSettingsSerializer(data=request.data, partial=True)
        data.is_valid(raise_exception=True)
        fields = dict(data.validated_data)
        mode = fields.pop("campaign", {}).get("judging_mode")
        if mode is None:
            _settings_for(campaign)  # only a pair campaign has pair settings to change
        try:
            pairwise = services.pairwise_configure(campaign=campaign, mode=mode, **fields)
        except ValueError as error:
            return bad_request(str(error))
        return Response(PairwiseSettingsSerializer(pairwise).data)


def next_response(request: Request, campaign: Campaign) -> Response:
    """200 with the user's pending pair, 204 when nothing is left (also serves labeling's /next/)."""
    pairwise = _settings_for(campaign)
    task = services.pair_next(campaign=campaign, assessor=request_user(request))
    if task is None:
        return Response(status=status.HTTP_204_NO_CONTENT)
    return Response(PairOutputSerializer.of(task, pairwise))


def answer_response(request: Request, task_id: int, campaign_id: int | None = None) -> Response:
    """Store the user's answer to a pair task (also serves labeling's /tasks/{task}/answer/)."""
    task = selectors.pair_task_get(task_id)
    if task is None or (campaign_id is not None and task.campaign_id != campaign_id):
        raise NotFound("No such pair.")
    campaign_for(request, task.campaign_id, JUDGE)
    data = PairAnswerInputSerializer(data=request.data)
    data.is_valid(raise_exception=True)
    try:
        comparison = services.pair_answer(
            task=task,
            assessor=request_user(request),
            outcome=data.validated_data["outcome"],
            seconds=data.validated_data.get("seconds"),
        )
    except (services.PairNotPending, services.LeaseConflict) as clash:
        return conflict(str(clash))
    except ValueError as error:
        return bad_request(str(error))
    return Response(ComparisonOutputSerializer(comparison).data, status=status.HTTP_201_CREATED)


def undo_response(request: Request, campaign: Campaign) -> Response:
    """Undo the user's last answer; 200 with its pair again (also serves labeling's /undo/)."""
    pairwise = _settings_for(campaign)
    try:
        task = services.pair_undo(campaign=campaign, assessor=request_user(request))
    except services.UndoNotAllowed as refusal:
        return conflict(str(refusal))
    return Response(PairOutputSerializer.of(task, pairwise))


class PairNextApi(APIView):
    """Lease your next pair: 200 with `kind: "pair"`, `left` and `right`; 204 when nothing is left."""

    @extend_schema(responses={200: PairOutputSerializer, 204: None})
    def get(self, request: Request, campaign_id: int) -> Response:
        return next_response(request, campaign_for(request, campaign_id, JUDGE))


class PairAnswerApi(APIView):
    """Answer your pending pair: 201 stored; 409 when the pair is not the pending one (already
    answered, superseded after an undo) or is leased to someone else; 400 for bad input."""

    @extend_schema(
        request=PairAnswerInputSerializer,
        responses={
            201: ComparisonOutputSerializer,
            400: OpenApiResponse(description="invalid outcome or seconds"),
            409: OpenApiResponse(description="not the pending pair, or leased to someone else"),
        },
    )
    def post(self, request: Request, campaign_id: int, task_id: int) -> Response:
        campaign = campaign_for(request, campaign_id, JUDGE)
        return answer_response(request, task_id, campaign.pk)


class PairUndoApi(APIView):
    """Take back your last answer (within the undo window); returns its pair, leased to you again."""

    @extend_schema(
        request=None,
        responses={200: PairOutputSerializer, 409: OpenApiResponse(description="nothing to undo")},
    )
    def post(self, request: Request, campaign_id: int) -> Response:
        return undo_response(request, campaign_for(request, campaign_id, JUDGE))


class TopKApi(APIView):
    """Per topic and assessor: the top-k order (once done), judgments, done."""

    @extend_schema(responses={200: TopKOrderSerializer(many=True)})
    def get(self, request: Request, campaign_id: int) -> Response:
        campaign = campaign_for(request, campaign_id, VIEW_RESULTS)
        _settings_for(campaign)
        rows = [heap for heap in selectors.topk_results(campaign) if heap.assessor is not None]
        return Response(TopKOrderSerializer(rows, many=True).data)


class HeapReleaseApi(APIView):
    """Take an unfinished top-k list back from its assessor (coordinators), e.g. when they left:
    the next assessor continues it where it stopped. 409 when finished or nobody holds it."""

    @extend_schema(request=None, responses={200: TopKOrderSerializer, 409: OpenApiResponse()})
    def post(self, request: Request, campaign_id: int, heap_id: int) -> Response:
        campaign = campaign_for(request, campaign_id, MANAGE)
        _settings_for(campaign)
        try:
            services.heap_release(campaign=campaign, heap_id=heap_id)
        except TopKHeap.DoesNotExist:
            raise NotFound("No such top-k heap in this campaign.") from None
        except ValueError as error:
            return conflict(str(error))
        row = next(heap for heap in selectors.topk_results(campaign) if heap.heap_id == heap_id)
        return Response(TopKOrderSerializer(row).data)


class ResultsApi(APIView):
    """Top-k orders, kappa-NDCG@k and kappa-ERR per run, Bradley-Terry merges and agreement."""

    @extend_schema(responses={200: ResultsSerializer})
    def get(self, request: Request, campaign_id: int) -> Response:
        campaign = campaign_for(request, campaign_id, VIEW_RESULTS)
        data = selectors.pairwise_results(campaign, _settings_for(campaign))
        return Response(ResultsSerializer(data).data)


class AgreementApi(APIView):
    """Assessor agreement on preferences and on preferences inferred from grades (any campaign)."""

    @extend_schema(responses={200: AgreementSerializer})
    def get(self, request: Request, campaign_id: int) -> Response:
        campaign = campaign_for(request, campaign_id, VIEW_RESULTS)
        return Response(AgreementSerializer(selectors.campaign_agreement(campaign)).data)


__all__ = [
    "AgreementApi",
    "PairAnswerApi",
    "PairNextApi",
    "PairUndoApi",
    "PairwiseSettingsApi",
    "ResultsApi",
    "TopKApi",
]
