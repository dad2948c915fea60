"""The REST API: one APIView per operation, each calling one selector or service; split by
concern (campaigns, judging, downloads; `common.ImportApi` is the base of every upload, whose
views live with their imports in `uploads.api`). The graded mode's estimates and planner are in
`graded.api_estimates` and `graded.api_planning`."""

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
)
from labeling.api.downloads import ExportApi
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
    "ExportApi",
    "NextTaskApi",
    "ProgressApi",
    "UndoApi",
]
