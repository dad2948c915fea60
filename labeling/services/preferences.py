"""An assessor's own preferences: keyboard shortcuts on or off, and remapped keys."""

from __future__ import annotations

from collections.abc import Mapping

from django.contrib.auth.models import User
from django.db import transaction

from labeling.models import AssessorPreferences
from labeling.modes import shortcut_action, shortcut_actions
from labeling.shortcuts import ShortcutsInvalid, keys_validate


@transaction.atomic
def shortcuts_update(
    *,
    user: User,
    keys: Mapping[str, object] | None = None,
    enabled: bool | None = None,
    reset: tuple[str, ...] = (),
    replace: bool = False,
) -> AssessorPreferences:
    """Set the user's shortcut keys and the master switch.

    `keys` maps action names to keys; they are merged into what the user chose before (or
    replace it, with `replace`), `reset` names actions to give back their default key, and an
    empty key resets too. Raises ShortcutsInvalid (per action) for an unknown action, a key
    that is not one character or named key, Tab/Enter/Escape/Space, or two actions of one
    page on the same key; nothing is stored then.
    """
    unknown = {name: "no such action" for name in reset if shortcut_action(name) is None}
    if unknown:
        raise ShortcutsInvalid(unknown)
    preferences, _ = AssessorPreferences.objects.select_for_update().get_or_create(user=user)
    merged: dict[str, object] = {} if replace else dict(preferences.shortcut_keys)
    for name, key in (keys or {}).items():
        if key in ("", None):
            merged.pop(name, None)
            if shortcut_action(str(name)) is None:
                raise ShortcutsInvalid({str(name): "no such action"})
        else:
            merged[name] = key
    for name in reset:
        merged.pop(name, None)
    preferences.shortcut_keys = keys_validate(merged, shortcut_actions())
    if enabled is not None:
        preferences.shortcuts_enabled = bool(enabled)
    preferences.save()
    return preferences
