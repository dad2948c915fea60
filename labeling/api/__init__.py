"""The REST API: one APIView per operation, each calling one selector or service; split by
concern (campaigns, imports, judging, downloads). The graded mode's estimates and planner are
in `graded.api_estimates` and `graded.api_planning`."""

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
from labeling.api.imports import (
    DocumentsImportApi,
    LabelsImportApi,
    QrelsImportApi,
    RunsImportApi,
    TopicsImportApi,
)
from labeling.api.judging import AnswerApi, LeaseApi, NextTaskApi, ProgressApi, SkipApi, UndoApi
from labeling.api.own import OwnJudgmentGradeApi, OwnJudgmentsApi
from labeling.api.preferences import ShortcutsApi

__all__ = [
    "ShortcutsApi",
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
    "CampaignPreflightApi",
    "CampaignStartApi",
    "DocumentsImportApi",
    "ExportApi",
    "LabelsImportApi",
    "NextTaskApi",
    "ProgressApi",
    "QrelsImportApi",
    "RunsImportApi",
    "TopicsImportApi",
    "UndoApi",
    "UserCreateApi",
]
