"""The keys of a judge page for one assessor: their preferences (`selectors.shortcut_preferences`)
resolved against every registered mode's actions (`modes.shortcut_actions`) by the key rules of
`labeling.shortcuts`. Apart from the selectors so that the mode registry, which the selectors'
types serve, is not imported back by them."""

from __future__ import annotations

from collections.abc import Iterable

from django.contrib.auth.models import AnonymousUser, User

from labeling.modes import shortcut_actions
from labeling.selectors import shortcut_preferences
from labeling.shortcuts import PageShortcuts, judge_shortcuts


def judge_page_shortcuts(
    user: User | AnonymousUser, pages: Iterable[str], grade_keys: Iterable[str] = ()
) -> PageShortcuts:
    """The keys of a judge page showing `pages` (labeling.shortcuts) for this user, with the
    campaign's own grade keys as the grades' defaults."""
    preferences = shortcut_preferences(user)
    return judge_shortcuts(
        pages, preferences.keys, preferences.enabled, tuple(grade_keys), every_action=shortcut_actions()
    )
