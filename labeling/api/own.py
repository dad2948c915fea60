"""An assessor's own judgments: the list (with each one's changes) and a new grade for one."""

from __future__ import annotations

from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import serializers
from rest_framework.exceptions import NotFound
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from labeling import selectors
from labeling.access import request_user
from labeling.api.common import bad_request, conflict, query_number
from labeling.models import Judgment
from labeling.services.own_judgments import JudgmentFinal, RegradeRefused, judgment_regrade
from labeling.strict_json import StrictSerializer

PAGE_SIZE = 100


class JudgmentChangeSerializer(StrictSerializer):
    old_grade = serializers.IntegerField()
    new_grade = serializers.IntegerField()
    changed_at = serializers.DateTimeField()


class OwnJudgmentSerializer(StrictSerializer):
    id = serializers.IntegerField()
    campaign = serializers.IntegerField(source="campaign_id")
    qid = serializers.CharField(source="topic.qid")
    docno = serializers.CharField(source="document.docno")
    grade = serializers.IntegerField()
    seconds = serializers.FloatField(allow_null=True)
    created_at = serializers.DateTimeField()
    changes = JudgmentChangeSerializer(many=True, source="changes.all")


class OwnJudgmentsPageSerializer(StrictSerializer):
    count = serializers.IntegerField()
    today = serializers.IntegerField()
    judgments = OwnJudgmentSerializer(many=True)


class RegradeSerializer(StrictSerializer):
    grade = serializers.IntegerField(min_value=0, max_value=32767)


class OwnJudgmentsApi(APIView):
    """Your judgments, newest first (100 per page), optionally of one campaign or matching a text."""

    @extend_schema(
        parameters=[
            OpenApiParameter("campaign", int, description="only this campaign"),
            OpenApiParameter("search", str, description="query id, or text in a topic title, docno or title"),
            OpenApiParameter("page", int, description="1, 2, ..."),
        ],
        responses={200: OwnJudgmentsPageSerializer},
    )
    def get(self, request: Request) -> Response:
        campaign = query_number(request, "campaign")
        page = max(1, query_number(request, "page") or 1)
        judgments = selectors.own_judgments(
            request_user(request), campaign, request.query_params.get("search", "")[:200]
        )
        shown = judgments.prefetch_related("changes")[(page - 1) * PAGE_SIZE : page * PAGE_SIZE]
        body = {
            "count": judgments.count(),
            "today": selectors.own_tally(request_user(request), campaign).today,
            "judgments": shown,
        }
        return Response(OwnJudgmentsPageSerializer(body).data)


class OwnJudgmentGradeApi(APIView):
    """Give one of your judgments a new grade while its campaign runs (the old one is kept)."""

    @extend_schema(request=RegradeSerializer, responses={200: OwnJudgmentSerializer})
    def post(self, request: Request, judgment_id: int) -> Response:
        judgment = Judgment.objects.filter(pk=judgment_id, assessor_id=request.user.pk).first()
        if judgment is None:
            raise NotFound("No such judgment of yours.")
        data = RegradeSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        try:
            judgment = judgment_regrade(
                judgment=judgment, assessor=request_user(request), grade=data.validated_data["grade"]
            )
        except JudgmentFinal as error:
            return conflict(str(error))
        except RegradeRefused as error:
            return bad_request(str(error))
        judgment = (
            selectors.own_judgments(request_user(request)).prefetch_related("changes").get(pk=judgment.pk)
        )
        return Response(OwnJudgmentSerializer(judgment).data)
