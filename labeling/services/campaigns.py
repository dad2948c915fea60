"""Campaigns and users: create, configure, assign, start, pause."""

from __future__ import annotations

import math
import string
from collections.abc import Sequence
from typing import Any

from django.contrib.auth import get_user_model
from django.contrib.auth.models import User
from django.core.exceptions import ValidationError
from django.db import transaction

from estimation.metrics.spec import Metric
from labeling.budgets import budget_problem
from labeling.fields import GRADE_DESCRIPTION_MAX_CHARS, GUIDELINES_MAX_CHARS
from labeling.models import Campaign, CampaignMember, CampaignProgress, System, Task
from labeling.modes import mode_named, mode_of
from labeling.shortcuts import grade_key_normalize

# Keys offered when a grade scale comes as bare names: the grade's own digit.
_DEFAULT_KEYS = string.digits


def grade_scale_normalize(grades: Sequence[Any]) -> list[dict[str, str]]:
    """Turn ["Bad", "Good"] or [{"name", "key", "description"?}] into [{"name", "key"}] (with the
    description when one is given), checking names, keys and description lengths."""
    if not isinstance(grades, list | tuple) or not 2 <= len(grades) <= 10:
        raise ValueError("grades must be a list of 2 to 10 grade names, lowest first")
    scale: list[dict[str, str]] = []
    pressed: list[str] = []
    for value, grade in enumerate(grades):
        if isinstance(grade, str):
            name, key = grade, _DEFAULT_KEYS[value]
        elif isinstance(grade, dict) and isinstance(grade.get("name"), str):
            name, key = grade["name"], str(grade.get("key") or _DEFAULT_KEYS[value])
        else:
            raise ValueError(f"grade {value} must be a name or {{name, key}}, got {grade!r}")
        if not name.strip():
            raise ValueError(f"grade {value} has an empty name")
        try:
            pressed.append(grade_key_normalize(key))
        except ValueError as error:
            raise ValueError(f"grade {value} key {key!r} {_key_reason(error)}") from None
        scale.append({"name": name.strip(), "key": key})
        description = grade.get("description") if isinstance(grade, dict) else None
        if description:
            scale[-1]["description"] = _grade_description(value, description)
    # "G" and "g" are one key press: keys are compared as the judge pages match them.
    for field, values in (("name", [grade["name"] for grade in scale]), ("key", pressed)):
        if len(set(values)) != len(values):
            raise ValueError(f"grade {field}s must be distinct")
    return scale


def _key_reason(error: ValueError) -> str:
    reason = str(error)
    return reason if reason.startswith("must") else f"cannot be a shortcut key: {reason}"


def _grade_description(value: int, description: Any) -> str:
    if not isinstance(description, str):
        raise ValueError(f"grade {value}'s description must be text")
    if len(description) > GRADE_DESCRIPTION_MAX_CHARS:
        raise ValueError(
            f"grade {value}'s description is longer than {GRADE_DESCRIPTION_MAX_CHARS} characters"
        )
    return description.strip()


def grade_descriptions_set(grades: list[dict[str, str]], descriptions: Sequence[Any]) -> list[dict[str, str]]:
    """The scale with one description per grade (empty removes it); names and keys unchanged, so
    this may change while assessors judge."""
    if not isinstance(descriptions, list | tuple) or len(descriptions) != len(grades):
        raise ValueError(f"grade_descriptions must list one text per grade ({len(grades)})")
    scale = []
    for value, (grade, description) in enumerate(zip(grades, descriptions, strict=True)):
        text = _grade_description(value, description or "")
        scale.append({"name": grade["name"], "key": grade["key"], **({"description": text} if text else {})})
    return scale


def custom_dcg_problem(custom: Any, grade_count: int, cutoff: int) -> str | None:
    """Why `custom` cannot serve as the campaign's DCG gains and discounts, or None. Gains must
    be finite, >= 0 and non-decreasing (the estimators scale labels to g(y) / g(y_max)),
    one per grade; discounts finite and > 0, at least one per position up to the cutoff."""
    if custom is None:
        return None
    if not isinstance(custom, dict) or not {"gains", "discounts"} <= set(custom):
        return "needs {gains, discounts}"
    try:
        gains = [float(g) for g in custom["gains"]]
        discounts = [float(c) for c in custom["discounts"]]
    except (TypeError, ValueError):
        return "gains and discounts must be lists of numbers"
    if not all(math.isfinite(v) for v in gains + discounts):
        return "gains and discounts must be finite"
    if len(gains) != grade_count:
        return f"{len(gains)} gains for {grade_count} grades"
    if gains[0] < 0 or any(b < a for a, b in zip(gains, gains[1:], strict=False)) or gains[-1] <= 0:
        return "gains must be >= 0, non-decreasing, and the top grade's > 0"
    if len(discounts) < cutoff:
        return f"{len(discounts)} discounts for a cutoff of {cutoff}"
    if any(c <= 0 for c in discounts):
        return "discounts must be > 0"
    return None


# The same bounds on every database (SQLite would store any integer, PostgreSQL refuses what
# overflows the column). None (goal_k, pool_depth) means "not set".
CAMPAIGN_RANGES = {
    "overlap": (1, 20),
    "goal_k": (1, 10_000),
    "pool_depth": (1, 100_000),
    "lease_seconds": (10, 86_400),
}


def _validate(campaign: Campaign) -> None:
    metric = Metric.parse(campaign.metric, y_max=max(1, campaign.grade_count - 1))
    problem = budget_problem(campaign.budget)
    if problem is not None:
        raise ValueError(problem)
    for name, (low, high) in CAMPAIGN_RANGES.items():
        value = getattr(campaign, name)
        if value is not None and not low <= value <= high:
            raise ValueError(f"{name} must be from {low} to {high}, got {value}")
    if campaign.goal == Campaign.Goal.LEADERBOARD and not campaign.goal_k:
        raise ValueError("a leaderboard goal needs k (goal_k)")
    mode_of(campaign).validate(campaign, metric)
    problem = custom_dcg_problem(campaign.custom_dcg, campaign.grade_count, metric.cutoff)
    if problem is not None:
        raise ValueError(f"custom_dcg: {problem}")
    if not 0.0 <= float(campaign.mix) <= 1.0:
        raise ValueError("mix must lie in [0, 1]")
    if float(campaign.prior_strength) < 0:
        raise ValueError("prior_strength must be >= 0")
    focus = campaign.focus_systems or []
    if not isinstance(focus, list) or not all(isinstance(name, str) for name in focus):
        raise ValueError("focus_systems must be a list of system names")
    if focus and campaign.pk:
        known = set(
            System.objects.filter(campaign=campaign, evaluation_only=False).values_list("name", flat=True)
        )
        unknown = [name for name in focus if name not in known]
        if unknown:
            raise ValueError(f"focus_systems names unknown pooled systems: {', '.join(unknown)}")
    try:
        campaign.full_clean(exclude=["created_by", "grades"])
    except ValidationError as error:
        raise ValueError("; ".join(f"{k}: {' '.join(v)}" for k, v in error.message_dict.items())) from None


@transaction.atomic
def campaign_create(
    *,
    creator: User,
    name: str,
    grades: Sequence[Any] | None = None,
    mode_settings: dict[str, Any] | None = None,
    **fields: Any,
) -> Campaign:
    """Create a draft campaign; its creator becomes its coordinator. `mode_settings` go to the
    judging mode (e.g. {"k": 10} for top-k), which stores them itself."""
    campaign = Campaign(name=name, created_by=creator, **fields)
    if grades is not None:
        campaign.grades = grade_scale_normalize(grades)
    mode = mode_named(campaign.judging_mode)
    _validate(campaign)
    campaign.save()
    CampaignMember.objects.create(campaign=campaign, user=creator, role=CampaignMember.Role.COORDINATOR)
    CampaignProgress.objects.create(campaign=campaign)
    mode.configure(campaign, mode_settings or {})
    return campaign


@transaction.atomic
def campaign_mode_set(
    *, campaign: Campaign, mode_name: str, settings: dict[str, Any] | None = None
) -> Campaign:
    """Switch a draft campaign to another judging mode (with that mode's settings); ValueError
    once it started: the old mode's draws, heaps or answers would not fit the new one."""
    mode = mode_named(mode_name)
    if campaign.judging_mode != mode_name:
        if campaign.status != Campaign.Status.DRAFT:
            raise ValueError("the judging mode can only change before the campaign starts")
        Campaign.objects.filter(pk=campaign.pk).update(judging_mode=mode_name)
        campaign.judging_mode = mode_name
    mode.configure(campaign, settings or {})
    return campaign


@transaction.atomic
def campaign_update(*, campaign: Campaign, **fields: Any) -> Campaign:
    """Change a campaign's settings (budget, overlap, ...); a budget cut drops idle queued tasks."""
    campaign = Campaign.objects.select_for_update(no_key=True).get(pk=campaign.pk)
    mode_name, mode_settings = fields.pop("judging_mode", None), fields.pop("mode_settings", None)
    if mode_name is not None or mode_settings is not None:
        campaign_mode_set(
            campaign=campaign, mode_name=mode_name or campaign.judging_mode, settings=mode_settings
        )
    if "grade_descriptions" in fields:
        campaign.grades = grade_descriptions_set(campaign.grades, fields.pop("grade_descriptions"))
    if "guidelines" in fields and len(fields["guidelines"] or "") > GUIDELINES_MAX_CHARS:
        raise ValueError(f"guidelines are longer than {GUIDELINES_MAX_CHARS} characters")
    if "grades" in fields:
        if Task.objects.filter(campaign=campaign).exists():
            raise ValueError("the grade scale cannot change once items were drawn")
        fields["grades"] = grade_scale_normalize(fields["grades"])
    if "budget" in fields:
        _check_not_below_spent(campaign, fields["budget"])
    for name, value in fields.items():
        setattr(campaign, name, value)
    _validate(campaign)
    if "budget" in fields:
        campaign.blocked = ""
    campaign.save()
    mode_of(campaign).updated(campaign, set(fields))
    return campaign


def _check_not_below_spent(campaign: Campaign, budget: Any) -> None:
    """ValueError when a new budget is below what the campaign's judgments already spent: the
    gauge would stop at 100 % while the spending went on, and a run's top-up in the budget would
    be gone without a word. Cutting it to what is spent stops the draws; pausing stops judging."""
    if budget_problem(budget) is not None:
        return  # _validate words it
    spent = mode_of(campaign).progress(campaign).spent
    if budget < spent - 1e-9:
        unit = campaign.get_budget_unit_display().lower()
        raise ValueError(
            f"the budget cannot go below what is already spent ({spent:g} {unit}), got {budget:g}: "
            f"give at least {spent:g} (that stops the draws; pause the campaign to stop judging at once)"
        )


@transaction.atomic
def campaign_start(*, campaign: Campaign) -> Campaign:
    """Start (or resume) judging: needs a pool; fills the first queue of draws."""
    campaign = Campaign.objects.select_for_update(no_key=True).get(pk=campaign.pk)
    if campaign.status == Campaign.Status.DONE:
        raise ValueError("the campaign is done")
    mode = mode_of(campaign)
    problem = mode.start_problem(campaign)
    if problem is not None:
        raise ValueError(problem)
    campaign.status = Campaign.Status.RUNNING
    campaign.blocked = ""
    campaign.save(update_fields=["status", "blocked", "updated_at"])
    mode.started(campaign)
    return campaign


@transaction.atomic
def campaign_pause(*, campaign: Campaign) -> Campaign:
    """Pause judging: no new leases (current leases may still be answered)."""
    campaign = Campaign.objects.select_for_update(no_key=True).get(pk=campaign.pk)
    if campaign.status != Campaign.Status.RUNNING:
        raise ValueError(f"only a running campaign can be paused (it is {campaign.status})")
    campaign.status = Campaign.Status.PAUSED
    campaign.save(update_fields=["status", "updated_at"])
    return campaign


@transaction.atomic
def campaign_assessors_assign(*, campaign: Campaign, usernames: Sequence[str]) -> list[User]:
    """Make these existing users assessors of the campaign (members keep a higher role)."""
    user_model = get_user_model()
    users = list(user_model.objects.filter(username__in=list(usernames)))
    unknown = sorted(set(usernames) - {user.get_username() for user in users})
    if unknown:
        raise ValueError(f"unknown users: {', '.join(unknown)}")
    for user in users:
        CampaignMember.objects.get_or_create(
            campaign=campaign, user=user, defaults={"role": CampaignMember.Role.ASSESSOR}
        )
    return users


@transaction.atomic
def campaign_member_add(*, campaign: Campaign, user: User, role: str) -> CampaignMember:
    """Make the user a member of the campaign with `role` (assessor or coordinator); a member
    already there keeps the higher of the two roles."""
    if role not in CampaignMember.Role.values:
        raise ValueError(f"a campaign role is one of {', '.join(CampaignMember.Role.values)}")
    member, created = CampaignMember.objects.get_or_create(
        campaign=campaign, user=user, defaults={"role": role}
    )
    if not created and role == CampaignMember.Role.COORDINATOR and member.role != role:
        member.role = role
        member.save(update_fields=["role"])
    return member
