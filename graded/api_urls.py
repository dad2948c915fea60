"""The graded mode's REST routes, mounted under /api/: its estimates, their history, the sampling
distribution, throughput, a new run's evaluation and the budget planner (404 for other modes)."""

from django.contrib.auth.decorators import login_not_required
from django.urls import path

from graded.api_arrivals import ArrivalApi, ArrivalsApi
from graded.api_estimates import EstimatesApi, EstimatesHistoryApi, EvaluateRunApi, SamplingApi, ThroughputApi
from graded.api_judges import (
    JudgeApi,
    JudgeCalibrationApi,
    JudgeCancelApi,
    JudgeLabelsApi,
    JudgeRunApi,
    JudgesApi,
)
from graded.api_planning import CampaignPlanApi

PREFIX = "campaigns/<id:campaign_id>/"

# DRF authenticates (session or token) and answers 401/403 itself (as labeling.api_urls).
urlpatterns = [
    path(PREFIX + "estimates/", login_not_required(EstimatesApi.as_view()), name="api-estimates"),
    path(
        PREFIX + "estimates/history/",
        login_not_required(EstimatesHistoryApi.as_view()),
        name="api-estimates-history",
    ),
    path(PREFIX + "sampling/", login_not_required(SamplingApi.as_view()), name="api-sampling"),
    path(PREFIX + "throughput/", login_not_required(ThroughputApi.as_view()), name="api-throughput"),
    path(PREFIX + "evaluate/", login_not_required(EvaluateRunApi.as_view()), name="api-evaluate"),
    path(PREFIX + "plan/", login_not_required(CampaignPlanApi.as_view()), name="api-plan"),
    path(PREFIX + "arrivals/", login_not_required(ArrivalsApi.as_view()), name="api-arrivals"),
    path(PREFIX + "arrivals/<id:arrival_id>/", login_not_required(ArrivalApi.as_view()), name="api-arrival"),
    path(PREFIX + "judges/", login_not_required(JudgesApi.as_view()), name="api-judges"),
    path(PREFIX + "judges/<id:judge_id>/", login_not_required(JudgeApi.as_view()), name="api-judge"),
    path(
        PREFIX + "judges/<id:judge_id>/labels/",
        login_not_required(JudgeLabelsApi.as_view()),
        name="api-judge-labels",
    ),
    path(
        PREFIX + "judges/<id:judge_id>/calibration/",
        login_not_required(JudgeCalibrationApi.as_view()),
        name="api-judge-calibration",
    ),
    path(
        PREFIX + "judges/<id:judge_id>/run/", login_not_required(JudgeRunApi.as_view()), name="api-judge-run"
    ),
    path(
        PREFIX + "judges/<id:judge_id>/cancel/",
        login_not_required(JudgeCancelApi.as_view()),
        name="api-judge-cancel",
    ),
]
