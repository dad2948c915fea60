"""The side-by-side judge pages' keyboard actions; the core's `labeling.shortcuts` resolves keys,
overrides and clashes for every mode's actions."""

from __future__ import annotations

from labeling.shortcuts import EVERY, GRADES, NOTE, Action

SXS, SXS_GRADE = "sxs", "sxs-grade"  # two result lists; the single document graded first
PAGES = {SXS: (EVERY, NOTE), SXS_GRADE: (EVERY, NOTE, GRADES)}


def _sxs(name: str, label: str, default: str, pages: frozenset[str] = frozenset({SXS})) -> Action:
    return Action(name, label, default, pages, "Side by side")


ACTIONS: tuple[Action, ...] = (
    _sxs("sxs_left_much", "The left list is much better", "1"),
    _sxs("sxs_left", "The left list is better", "2"),
    _sxs("sxs_same", "Both lists are about the same", "3"),
    _sxs("sxs_right", "The right list is better", "4"),
    _sxs("sxs_right_much", "The right list is much better", "5"),
    _sxs("sxs_left_arrow", "The left list is better (second key)", "ArrowLeft"),
    _sxs("sxs_same_arrow", "Both lists are about the same (second key)", "ArrowDown"),
    _sxs("sxs_right_arrow", "The right list is better (second key)", "ArrowRight"),
    _sxs("comment", "Write a comment on a comparison", "c", frozenset({SXS, SXS_GRADE})),
)
