"""The REST API: one APIView per operation, each calling one selector or service; split by
concern (campaigns, imports, judging, estimates, downloads)."""

from labeling.api.auth import TokenApi
from labeling.api.campaigns import (
    AssessorsApi,
    CampaignArchiveApi,
    CampaignCloneApi,
    CampaignDetailApi,
    CampaignListCreateApi,
    CampaignPauseApi,
    CampaignPreflightApi,
    CampaignStartApi,
    UserCreateApi,
)
from labeling.api.downloads import ExportApi
from labeling.api.estimates import (
    EstimatesApi,
    EstimatesHistoryApi,
    EvaluateRunApi,
    SamplingApi,
    ThroughputApi,
)
from labeling.api.imports import (
    DocumentsImportApi,
    LabelsImportApi,
    QrelsImportApi,
    RunsImportApi,
    TopicsImportApi,
)
from labeling.api.judging import AnswerApi, LeaseApi, NextTaskApi, ProgressApi, SkipApi, UndoApi
from labeling.api.own import OwnJudgmentGradeApi, OwnJudgmentsApi
from labeling.api.planning import CampaignPlanApi

__all__ = [
    "SkipApi",
    "LeaseApi",
    "OwnJudgmentGradeApi",
    "OwnJudgmentsApi",
    "TokenApi",
    "AnswerApi",
    "AssessorsApi",
    "CampaignArchiveApi",
    "CampaignCloneApi",
    "CampaignDetailApi",
    "CampaignListCreateApi",
    "CampaignPauseApi",
    "CampaignPlanApi",
    "CampaignPreflightApi",
    "CampaignStartApi",
    "DocumentsImportApi",
    "EstimatesApi",
    "EstimatesHistoryApi",
    "EvaluateRunApi",
    "ExportApi",
    "LabelsImportApi",
    "NextTaskApi",
    "ProgressApi",
    "QrelsImportApi",
    "RunsImportApi",
    "SamplingApi",
    "ThroughputApi",
    "TopicsImportApi",
    "UndoApi",
    "UserCreateApi",
]
