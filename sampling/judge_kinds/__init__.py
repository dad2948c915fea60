"""Model-judge kinds: where a judge's labels come from, as the judging modes are a seam.

A judge stores only its kind's name (`Judge.kind`); everything that differs between kinds
asks `judge_kind(judge.kind)` and never compares the name: the settings check and defaults at
creation (`sampling.judge_editing`), the worker's step of a run (`sampling.judge_runs`), the
judge's warnings (`sampling.judge_reports`), the add-judge form and API (the choices, which
fields show), and the judges panel (its templates, what Edit does). The built-in kinds are
files uploaded (`upload`), an OpenAI-compatible endpoint the worker asks (`endpoint`) and the
built-in BM25 judge (`lexical`). How to add one: docs/architecture.md.
"""

from __future__ import annotations

from sampling.judge_kinds.base import COMMON_UNVERSIONED, COMMON_VERSIONED, JudgeKind, JudgeSetting
from sampling.judge_kinds.endpoint import EndpointKind
from sampling.judge_kinds.lexical import LexicalKind
from sampling.judge_kinds.upload import UploadKind

_KINDS: dict[str, JudgeKind] = {}


def register_judge_kind(kind: JudgeKind) -> JudgeKind:
    """Make a kind available; a name registers once, and a setting name means one setting: a
    kind may share another's setting (the same declaration), not redeclare it."""
    existing = _KINDS.get(kind.name)
    if existing is not None and type(existing) is not type(kind):
        raise ValueError(f"two judge kinds are called {kind.name!r}")
    known = judge_settings_all()
    for setting in kind.settings:
        if setting.name in (*COMMON_VERSIONED, *COMMON_UNVERSIONED, "name", "kind"):
            raise ValueError(f"judge kind {kind.name!r}: every judge has {setting.name}, no kind declares it")
        if setting.name in known and known[setting.name] != setting:
            raise ValueError(f"judge kind {kind.name!r} declares {setting.name!r} unlike another kind does")
    _KINDS[kind.name] = kind
    return kind


def judge_kind(name: str) -> JudgeKind:
    """The kind called `name`; ValueError naming the known ones otherwise."""
    try:
        return _KINDS[name]
    except KeyError:
        raise ValueError(f"unknown judge kind {name!r}; choose one of {', '.join(_KINDS)}") from None


def judge_kind_choices() -> list[tuple[str, str]]:
    """(name, label) of every kind, for forms and serializers."""
    return [(kind.name, kind.label) for kind in _KINDS.values()]


def judge_kinds_help() -> str:
    """Every kind in a line, for the API's and the form's help."""
    return "; ".join(f"{kind.name}: {kind.api_help}" for kind in _KINDS.values())


def judge_kind_own_fields() -> dict[str, list[str]]:
    """Each kind's own settings by name (the add-judge form shows a field only for the kinds
    naming it)."""
    return {kind.name: [setting.name for setting in kind.settings] for kind in _KINDS.values()}


def judge_settings_all() -> dict[str, JudgeSetting]:
    """Every registered kind's settings, once each, in the kinds' order: the fields of the API's
    judge and of the add-judge form beyond those every judge has."""
    found: dict[str, JudgeSetting] = {}
    for kind in _KINDS.values():
        for setting in kind.settings:
            found.setdefault(setting.name, setting)
    return found


def judge_setting_kinds(name: str) -> list[str]:
    """The kinds that take the setting called `name`."""
    return [kind.name for kind in _KINDS.values() if kind.setting(name) is not None]


# The built-in kinds, in the order forms list them.
for _builtin in (UploadKind(), EndpointKind(), LexicalKind()):
    register_judge_kind(_builtin)
