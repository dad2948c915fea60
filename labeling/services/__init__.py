"""Writes: every state change of the app goes through one of these functions.

Names follow `<entity>_<action>`; each write runs in a transaction.
"""

from labeling.leases import LeaseConflict, UndoNotAllowed
from labeling.services.campaign_copies import campaign_archive, campaign_clone, campaign_delete
from labeling.services.campaigns import (
    campaign_assessor_remove,
    campaign_assessors_assign,
    campaign_create,
    campaign_mode_set,
    campaign_pause,
    campaign_refresh,
    campaign_start,
    campaign_update,
    grade_scale_normalize,
    user_create,
)
from labeling.services.corrections import judgment_discard
from labeling.services.estimates import estimates_compute, estimates_current, snapshot_record
from labeling.services.evaluation import evaluation_runs_import, run_evaluate
from labeling.services.imports import (
    ImportFailed,
    ImportReport,
    documents_import,
    labels_import,
    pool_rebuild,
    qrels_import,
    topics_import,
)
from labeling.services.judging import (
    campaign_refresh_enqueue,
    judgment_undo,
    task_answer,
    task_next,
)
from labeling.services.own_judgments import JudgmentFinal, RegradeRefused, judgment_regrade
from labeling.services.run_imports import runs_import
from labeling.services.sampling import draws_top_up
from labeling.services.sampling_state import sampling_state_current, sampling_state_refresh
from labeling.services.skips import task_skip
from labeling.services.strategies import STRATEGIES, PassiveStrategy, SamplingStrategy

__all__ = [
    "task_skip",
    "JudgmentFinal",
    "RegradeRefused",
    "judgment_regrade",
    "campaign_archive",
    "campaign_clone",
    "campaign_delete",
    "STRATEGIES",
    "ImportFailed",
    "ImportReport",
    "LeaseConflict",
    "PassiveStrategy",
    "SamplingStrategy",
    "UndoNotAllowed",
    "campaign_assessor_remove",
    "campaign_assessors_assign",
    "campaign_create",
    "campaign_mode_set",
    "campaign_pause",
    "campaign_refresh",
    "campaign_refresh_enqueue",
    "campaign_start",
    "campaign_update",
    "documents_import",
    "draws_top_up",
    "estimates_compute",
    "estimates_current",
    "evaluation_runs_import",
    "labels_import",
    "run_evaluate",
    "sampling_state_current",
    "sampling_state_refresh",
    "snapshot_record",
    "grade_scale_normalize",
    "judgment_discard",
    "judgment_undo",
    "pool_rebuild",
    "qrels_import",
    "runs_import",
    "task_answer",
    "task_next",
    "topics_import",
    "user_create",
]
