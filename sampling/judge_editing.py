"""Judges as the coordinator makes and edits them: creation with the kind's defaults, every
setting checked (the kind's own rules, then the operator's ceilings), and versions: every edit
of what a judge is asked makes a new version, recorded with what it was asked.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from datetime import date
from typing import Any

from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction

from labeling.models import Campaign
from sampling.judge_kinds import judge_kind
from sampling.models import Judge, JudgeRun, JudgeVersion

VERSIONED = ("model", "prompt", "base_url", "with_probabilities", "max_tokens")
"""Fields that change what the judge answers: editing one makes a new version."""
UNVERSIONED = (
    "notes",
    "shares_model_with",
    "concurrency",
    "requests_per_minute",
    "price_in_per_1k",
    "price_out_per_1k",
    "cost_cap",
    "api_key_variable",
)
LIMITED = (
    "concurrency",
    "max_tokens",
    "requests_per_minute",
    "price_in_per_1k",
    "price_out_per_1k",
    "cost_cap",
)
"""Settings bounded by the operator's ceilings (`judge_settings_problems`)."""
MAX_REQUESTS_PER_MINUTE = 1_000_000.0


def judge_settings_problems(kind: str, fields: Mapping[str, Any]) -> list[str]:
    """What is wrong with a judge's settings, in words (empty: fine): its kind's own checks, then
    the operator's ceilings. A setting that only some kinds have is refused on the others (a key
    variable on a judge that sends nothing would only name an environment variable for no use)."""
    own = judge_kind(kind)
    foreign = [
        f"a judge of kind {kind!r} takes no {name} (it sends nothing)"
        for name in ("api_key_variable", "base_url")
        if str(fields.get(name) or "").strip() and name not in own.own_fields
    ]
    return foreign + own.settings_problems(fields) + limit_problems(kind, fields)


def limit_problems(kind: str, fields: Mapping[str, Any]) -> list[str]:
    """The operator's ceilings (settings JUDGE_*, docs/operations.md): what a judge may spend of
    the worker's time and memory and of the money behind its key."""
    problems = []
    ceilings = {
        "concurrency": ("JUDGE_MAX_CONCURRENCY", settings.JUDGE_MAX_CONCURRENCY),
        "max_tokens": ("JUDGE_MAX_TOKENS_CEILING", settings.JUDGE_MAX_TOKENS_CEILING),
    }
    for name, (setting, high) in ceilings.items():
        value = fields.get(name)
        if value is not None and not 1 <= int(value) <= high:
            problems.append(f"{name} must be between 1 and {high} (the settings' {setting})")
    bounded = {
        "price_in_per_1k": ("JUDGE_MAX_PRICE_PER_1K", settings.JUDGE_MAX_PRICE_PER_1K),
        "price_out_per_1k": ("JUDGE_MAX_PRICE_PER_1K", settings.JUDGE_MAX_PRICE_PER_1K),
        "cost_cap": ("JUDGE_MAX_COST_CAP", settings.JUDGE_MAX_COST_CAP),
    }
    for name, (setting, most) in bounded.items():
        value = fields.get(name)
        if value is not None and not (math.isfinite(float(value)) and 0 <= float(value) <= most):
            problems.append(f"{name} must be between 0 and {most:g} (the settings' {setting})")
    rate = fields.get("requests_per_minute")
    floor = settings.JUDGE_MIN_REQUESTS_PER_MINUTE
    if rate is not None and float(rate) != 0 and not (floor <= float(rate) <= MAX_REQUESTS_PER_MINUTE):
        problems.append(
            f"requests_per_minute must be 0 (no limit) or between {floor:g} and {MAX_REQUESTS_PER_MINUTE:g} "
            "(the settings' JUDGE_MIN_REQUESTS_PER_MINUTE: one request's wait must fit in a step)"
        )
    return problems + judge_kind(kind).limit_problems(fields)


def normalised_prompt(prompt: str) -> str:
    """A template as the model should read it: line ends of a browser's text box (CRLF) as LF."""
    return prompt.replace("\r\n", "\n").replace("\r", "\n")


def version_record(judge: Judge, user: AbstractBaseUser | None = None) -> JudgeVersion:
    """Record the judge's current version (what it is asked)."""
    return JudgeVersion.objects.create(
        judge=judge,
        number=judge.version,
        model=judge.model,
        prompt=judge.prompt,
        asked_with={
            "base_url": judge.base_url,
            "with_probabilities": judge.with_probabilities,
            "max_tokens": judge.max_tokens,
            "thresholds": judge.thresholds,
        },
        created_by=user if user is not None and user.is_authenticated else None,  # type: ignore[misc]
    )


@transaction.atomic
def judge_update(judge: Judge, *, user: AbstractBaseUser | None = None, **changes: Any) -> Judge:
    """Edit a judge; a change of what it is asked (`VERSIONED`, or refitting a lexical judge's
    thresholds with ``refit=True``) makes a new version, whose labels replace the old ones as
    its run reaches them. ValueError with the problems, or while a run is active."""
    judge = Judge.objects.select_for_update().get(pk=judge.pk)
    refit = bool(changes.pop("refit", False))
    if isinstance(changes.get("prompt"), str):
        changes["prompt"] = normalised_prompt(changes["prompt"])
    unknown = set(changes) - {*VERSIONED, *UNVERSIONED}
    if unknown:
        raise ValueError(f"cannot change {', '.join(sorted(unknown))}")
    merged = {name: getattr(judge, name) for name in (*VERSIONED, *LIMITED, "api_key_variable")} | changes
    problems = judge_settings_problems(judge.kind, merged)
    if problems:
        raise ValueError("; ".join(problems))
    new_version = refit or any(
        name in changes and changes[name] != getattr(judge, name) for name in VERSIONED
    )
    if new_version and JudgeRun.objects.filter(judge=judge, status__in=JudgeRun.ACTIVE).exists():
        raise ValueError("cancel the judge's run before changing what it is asked")
    for name, value in changes.items():
        setattr(judge, name, value.strip() if isinstance(value, str) and name != "prompt" else value)
    if new_version:
        judge.version += 1
        judge.thresholds = None
    judge.save()
    if new_version:
        version_record(judge, user)
    return judge


@transaction.atomic
def judge_create(
    *,
    campaign: Campaign,
    name: str,
    kind: str = "upload",
    model: str = "",
    prompt: str = "",
    version_date: date | None = None,
    notes: str = "",
    shares_model_with: str = "",
    simulated: bool = False,
    user: AbstractBaseUser | None = None,
    **endpoint: Any,
) -> Judge:
    """A new judge of the campaign: uploaded labels, an endpoint (base_url, api_key_variable,
    with_probabilities, max_tokens, concurrency, requests_per_minute, prices, cost_cap; the
    default prompt when none is given) or the lexical judge. ValueError naming every problem."""
    name = name.strip()
    if not name:
        raise ValueError("a judge needs a name")
    own = judge_kind(kind)
    if Judge.objects.filter(campaign=campaign, name=name).exists():
        raise ValueError(f"the campaign already has a judge named {name!r}")
    model, prompt = own.creation_defaults(campaign, model=model, prompt=normalised_prompt(prompt))
    problems = judge_settings_problems(kind, {"model": model, "prompt": prompt, **endpoint})
    if problems:
        raise ValueError("; ".join(problems))
    judge = Judge.objects.create(
        campaign=campaign,
        name=name,
        kind=kind,
        model=model.strip(),
        prompt=prompt,
        version_date=version_date,
        notes=notes,
        shares_model_with=shares_model_with.strip(),
        simulated=simulated,
        created_by=user if user is not None and user.is_authenticated else None,  # type: ignore[misc]  # the project's user model
        **{key: value for key, value in endpoint.items() if value is not None or key == "cost_cap"},
    )
    version_record(judge, user)
    return judge
