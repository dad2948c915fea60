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

from sampling.judge_kinds.base import JudgeKind
from sampling.judge_kinds.endpoint import EndpointKind
from sampling.judge_kinds.lexical import LexicalKind
from sampling.judge_kinds.upload import UploadKind

_KINDS: dict[str, JudgeKind] = {}


def register_judge_kind(kind: JudgeKind) -> JudgeKind:
    """Make a kind available; a name registers once."""
    existing = _KINDS.get(kind.name)
    if existing is not None and type(existing) is not type(kind):
        raise ValueError(f"two judge kinds are called {kind.name!r}")
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
    """Each kind's own fields (the add-judge form shows a field only for the kinds naming it)."""
    return {kind.name: list(kind.own_fields) for kind in _KINDS.values()}


# The built-in kinds, in the order forms list them.
for _builtin in (UploadKind(), EndpointKind(), LexicalKind()):
    register_judge_kind(_builtin)
