"""The pair judge page's keyboard actions (pairwise and top-k share the page); the core's
`labeling.shortcuts` resolves keys, overrides and clashes for every mode's actions."""

from __future__ import annotations

from labeling.shortcuts import EVERY, Action

PAIR = "pair"  # the page: two documents side by side
PAGES = {PAIR: (EVERY,)}  # no note box, no grades


def _pair(name: str, label: str, default: str) -> Action:
    return Action(name, label, default, frozenset({PAIR}), "Pairs and top-k")


ACTIONS: tuple[Action, ...] = (
    _pair("pair_left", "The left document is more relevant", "ArrowLeft"),
    _pair("pair_right", "The right document is more relevant", "ArrowRight"),
    _pair("pair_tie", "Both are equally relevant", "ArrowDown"),
    _pair("pair_tie_letter", "Both are equally relevant (second key)", "t"),
    _pair("pair_left_bad", "The left document is clearly irrelevant", "q"),
    _pair("pair_right_bad", "The right document is clearly irrelevant", "w"),
)
