"""Judges as the coordinator makes and edits them: creation with the kind's defaults, every
setting checked (the kind's own rules, then the operator's ceilings), and versions: every edit
of what a judge is asked makes a new version, recorded with what it was asked.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction

from labeling.models import Campaign
from sampling.judge_kinds import (
    COMMON_UNVERSIONED,
    COMMON_VERSIONED,
    judge_kind,
    judge_setting_kinds,
    judge_settings_all,
)
from sampling.models import Judge, JudgeRun, JudgeVersion

MAX_REQUESTS_PER_MINUTE = 1_000_000.0


def judge_settings_problems(kind: str, fields: Mapping[str, Any]) -> list[str]:
    """What is wrong with a judge's settings, in words (empty: fine): another kind's settings
    given a value, its kind's own checks, then the operator's ceilings. A setting only some kinds
    take is refused on the others (a key variable on a judge that sends nothing would only name
    an environment variable for no use)."""
    own = judge_kind(kind)
    foreign = [
        f"a judge of kind {kind!r} takes no {name} (only {' and '.join(judge_setting_kinds(name))} judges do)"
        for name, setting in judge_settings_all().items()
        if own.setting(name) is None and setting.is_set(fields.get(name))
    ]
    return foreign + own.settings_problems(fields) + limit_problems(kind, fields)


def judge_setting_values(judge: Judge) -> dict[str, Any]:
    """The judge's values of its kind's settings (`JudgeKind.settings`)."""
    return {setting.name: setting.value(judge) for setting in judge_kind(judge.kind).settings}


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
    """Record the judge's current version: what it is asked (its model, prompt and its kind's
    versioned settings) and the lexical judge's thresholds once fitted."""
    kind = judge_kind(judge.kind)
    return JudgeVersion.objects.create(
        judge=judge,
        number=judge.version,
        model=judge.model,
        prompt=judge.prompt,
        asked_with={
            **{setting.name: setting.json_value(judge) for setting in kind.settings if setting.versioned},
            "thresholds": judge.thresholds,
        },
        created_by=user if user is not None and user.is_authenticated else None,  # type: ignore[misc]
    )


@transaction.atomic
def judge_update(judge: Judge, *, user: AbstractBaseUser | None = None, **changes: Any) -> Judge:
    """Edit a judge; a change of what it is asked (`JudgeKind.versioned`, or refitting a lexical
    judge's thresholds with ``refit=True``) makes a new version, whose labels replace the old
    ones as its run reaches them. ValueError with the problems, or while a run is active."""
    judge = Judge.objects.select_for_update().get(pk=judge.pk)
    kind = judge_kind(judge.kind)
    refit = bool(changes.pop("refit", False))
    if isinstance(changes.get("prompt"), str):
        changes["prompt"] = normalised_prompt(changes["prompt"])
    unknown = set(changes) - set(kind.editable())
    if unknown:
        raise ValueError(f"a judge of kind {judge.kind!r} cannot change {', '.join(sorted(unknown))}")
    current = {name: getattr(judge, name) for name in (*COMMON_VERSIONED, *COMMON_UNVERSIONED)}
    current |= judge_setting_values(judge)
    problems = judge_settings_problems(judge.kind, current | changes)
    if problems:
        raise ValueError("; ".join(problems))
    asked = kind.versioned()
    new_version = refit or any(name in changes and changes[name] != current[name] for name in asked)
    if new_version and JudgeRun.objects.filter(judge=judge, status__in=JudgeRun.ACTIVE).exists():
        raise ValueError("cancel the judge's run before changing what it is asked")
    for name, value in changes.items():
        setting = kind.setting(name)
        if setting is not None:
            setting.assign(judge, value)
        else:
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
    notes: str = "",
    shares_model_with: str = "",
    simulated: bool = False,
    user: AbstractBaseUser | None = None,
    **kind_values: Any,
) -> Judge:
    """A new judge of the campaign: uploaded labels, an endpoint, the lexical judge or a kind
    registered later, with the values of its kind's settings (`JudgeKind.settings`: an
    endpoint's base_url, api_key_variable, prices ...; the default prompt when none is given).
    ValueError naming every problem."""
    name = name.strip()
    if not name:
        raise ValueError("a judge needs a name")
    own = judge_kind(kind)
    if Judge.objects.filter(campaign=campaign, name=name).exists():
        raise ValueError(f"the campaign already has a judge named {name!r}")
    unknown = set(kind_values) - set(judge_settings_all())
    if unknown:
        raise ValueError(f"no judge kind takes {', '.join(sorted(unknown))}")
    model, prompt = own.creation_defaults(campaign, model=model, prompt=normalised_prompt(prompt))
    problems = judge_settings_problems(kind, {"model": model, "prompt": prompt, **kind_values})
    if problems:
        raise ValueError("; ".join(problems))
    judge = Judge(
        campaign=campaign,
        name=name,
        kind=kind,
        model=model.strip(),
        prompt=prompt,
        notes=notes,
        shares_model_with=shares_model_with.strip(),
        simulated=simulated,
        created_by=user if user is not None and user.is_authenticated else None,  # type: ignore[misc]  # the project's user model
    )
    for setting in own.settings:
        value = kind_values.get(setting.name)
        if value is not None or (setting.blank_is_none and setting.name in kind_values):
            setting.assign(judge, value)
        elif not setting.column:
            setting.assign(judge, setting.default)
    judge.save()
    version_record(judge, user)
    return judge
