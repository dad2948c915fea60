"""The graded mode's pages, one module per page: the judge page (`judging`), the live dashboard
and its model summary (`dashboard`), the campaign page's graded section with its compared
systems, arrivals and release verdicts (`campaign`), its gold panel (`gold`) and its model-judges
panel (`judges`), each with its forms' actions. The caller (the core's page views, through the
mode seam) has checked who may see what."""

from graded.views.campaign import (
    campaign_arrival,
    campaign_compared,
    campaign_section,
    campaign_verdict_panel,
    campaign_verdict_rule,
)
from graded.views.dashboard import dashboard_model, dashboard_page
from graded.views.gold import campaign_gold, gold_panel
from graded.views.judges import (
    judge_add,
    judge_calibration,
    judge_cancel,
    judge_labels,
    judge_run,
    judge_sample,
    judge_version,
    judges_panel,
)
from graded.views.judging import GRADED_PAGE, grade_scale, judge_page

__all__ = [
    "GRADED_PAGE",
    "campaign_arrival",
    "campaign_compared",
    "campaign_gold",
    "campaign_section",
    "campaign_verdict_panel",
    "campaign_verdict_rule",
    "dashboard_model",
    "dashboard_page",
    "gold_panel",
    "grade_scale",
    "judge_add",
    "judge_calibration",
    "judge_cancel",
    "judge_labels",
    "judge_page",
    "judge_run",
    "judge_sample",
    "judge_version",
    "judges_panel",
]
