"""Writes: every state change of side-by-side judging goes through one of these functions."""

from labeling.leases import LeaseConflict, UndoNotAllowed
from sxs.services.judging import (
    MAX_SECONDS,
    PREFERENCES,
    Item,
    sxs_answer,
    sxs_lease_hold,
    sxs_next,
    sxs_skip,
    sxs_undo,
)
from sxs.services.learning import learned_dcg_apply, sxs_refit
from sxs.services.setup import FIT_FIELDS, SETTING_FIELDS, TASK_FIELDS, sxs_configure, sxs_prepare

__all__ = [
    "MAX_SECONDS",
    "PREFERENCES",
    "FIT_FIELDS",
    "SETTING_FIELDS",
    "TASK_FIELDS",
    "Item",
    "LeaseConflict",
    "UndoNotAllowed",
    "learned_dcg_apply",
    "sxs_answer",
    "sxs_configure",
    "sxs_next",
    "sxs_prepare",
    "sxs_refit",
    "sxs_lease_hold",
    "sxs_skip",
    "sxs_undo",
]
