"""Writes: every state change of pairwise judging goes through one of these functions."""

from labeling.leases import LeaseConflict, UndoNotAllowed
from pairwise.services.judging import (
    MAX_SECONDS,
    OUTCOMES,
    PairNotPending,
    heap_release,
    pair_answer,
    pair_next,
    pair_skip,
    pair_undo,
)
from pairwise.services.setup import SETTING_FIELDS, pairwise_configure, pairwise_prepare

__all__ = [
    "MAX_SECONDS",
    "OUTCOMES",
    "SETTING_FIELDS",
    "LeaseConflict",
    "PairNotPending",
    "UndoNotAllowed",
    "heap_release",
    "pair_answer",
    "pair_next",
    "pair_skip",
    "pair_undo",
    "pairwise_configure",
    "pairwise_prepare",
]
