"""The budget planner for graded campaigns: expected error and interval width per strategy."""

from __future__ import annotations

from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from graded.api_estimates import sampling_campaign_for
from labeling.api.common import bad_request
from labeling.permissions import MANAGE
from labeling.strict_json import StrictSerializer
from sampling import campaign_plan


class PlanInputSerializer(StrictSerializer):
    budgets = serializers.ListField(
        child=serializers.FloatField(min_value=1.0),
        required=False,
        min_length=1,
        max_length=8,
        help_text="budgets in judgments; default a quarter, half, once and twice the campaign's budget",
    )
    repetitions = serializers.IntegerField(min_value=20, max_value=2000, required=False)


class PlanRowSerializer(StrictSerializer):
    strategy = serializers.CharField()
    budget = serializers.FloatField()
    rmse = serializers.FloatField(allow_null=True)
    coverage = serializers.FloatField(allow_null=True)
    mean_width = serializers.FloatField(allow_null=True)
    topics_judged = serializers.FloatField(allow_null=True)
    rmse_se = serializers.FloatField(
        allow_null=True, help_text="Monte-Carlo standard error of rmse: how far other replays could move it"
    )
    width_se = serializers.FloatField(allow_null=True, help_text="Monte-Carlo standard error of mean_width")


class PlanSerializer(StrictSerializer):
    metric = serializers.CharField()
    goal = serializers.CharField()
    systems = serializers.ListField(child=serializers.CharField())
    planned_for = serializers.CharField(
        help_text="what the figures are for, in words (one system, a difference)"
    )
    unit = serializers.CharField()
    repetitions = serializers.IntegerField()
    budget = serializers.FloatField(help_text="the budget the recommendation and savings refer to")
    assumption = serializers.CharField()
    rows = PlanRowSerializer(many=True)
    budget_for_width = serializers.JSONField(
        help_text="{width, at, budgets: {strategy: judgments or null}, fewer_than_smallest: [strategy], "
        "smallest}"
    )
    savings = serializers.JSONField(help_text="{strategy: share of the budget saved against passive}")
    unplanned = serializers.ListField(
        child=serializers.CharField(),
        help_text="what the replay could not tell (the figures left null), in words",
    )
    campaign_budget = serializers.FloatField(
        allow_null=True,
        help_text="the campaign's budget in judgments (larger than `budget` when the pool caps the plan)",
    )
    recommendation = serializers.JSONField(
        help_text="{strategy, tied: [strategies within the replays' noise of the lowest error], text, paper}"
    )
    strategies = serializers.JSONField(help_text="{strategy: {label, help, paper}}")


class CampaignPlanApi(APIView):
    """Replay campaigns on this campaign's runs (the truth drawn from its label model, judged
    documents at their grades) and report, per strategy and budget, the expected error, the
    coverage and width of the 95 % interval, the budget each strategy needs for passive's width,
    and the strategy to use, in plain words."""

    @extend_schema(request=PlanInputSerializer, responses={200: PlanSerializer, 400: OpenApiResponse()})
    def post(self, request: Request, campaign_id: int) -> Response:
        campaign = sampling_campaign_for(request, campaign_id, MANAGE)
        data = PlanInputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        try:
            plan = campaign_plan(campaign, **data.validated_data)
        except ValueError as error:
            return bad_request(str(error))
        return Response(PlanSerializer(plan).data)
