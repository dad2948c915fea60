"""Reads for the coordinator's campaign page and dashboard that the API does not need."""

from __future__ import annotations

from typing import Any

from django.contrib.auth.models import AbstractBaseUser, AnonymousUser
from django.db.models import Q, QuerySet

from labeling.models import Campaign, CampaignMember, SamplingState
from labeling.permissions import is_admin
from labeling.selectors import campaign_list_for_user
from labeling.services.strategies import strategy_for


def campaigns_to_judge(user: AbstractBaseUser | AnonymousUser) -> QuerySet[Campaign]:
    """Campaigns the user is an assessor of (their judging work list)."""
    if not user.is_authenticated:
        return Campaign.objects.none()
    return Campaign.objects.filter(
        members__user_id=user.pk, members__role=CampaignMember.Role.ASSESSOR, archived_at__isnull=True
    ).order_by("-created_at")


def campaigns_to_manage(user: AbstractBaseUser | AnonymousUser) -> QuerySet[Campaign]:
    """Campaigns the user coordinates (all of them for admins)."""
    if is_admin(user):
        return campaign_list_for_user(user).order_by("-created_at")
    if not user.is_authenticated:
        return Campaign.objects.none()
    return Campaign.objects.filter(
        members__user_id=user.pk, members__role=CampaignMember.Role.COORDINATOR
    ).order_by("-created_at")


# The campaign list's status filter: the statuses, and "archived" for campaigns put away
# (which every other choice leaves out).
ARCHIVED = "archived"
LIST_FILTERS = (*Campaign.Status.values, ARCHIVED)


def campaigns_listed(
    user: AbstractBaseUser | AnonymousUser, search: str = "", status: str = ""
) -> QuerySet[Campaign]:
    """The coordinator's campaign list: name or metric containing `search`, one status (or the
    archived ones; archived campaigns show only there), newest first, with their progress."""
    campaigns = campaigns_to_manage(user).select_related("progress")
    if status == ARCHIVED:
        campaigns = campaigns.filter(archived_at__isnull=False)
    else:
        campaigns = campaigns.filter(archived_at__isnull=True)
        if status:
            campaigns = campaigns.filter(status=status)
    if search.strip():
        campaigns = campaigns.filter(Q(name__icontains=search.strip()) | Q(metric__icontains=search.strip()))
    return campaigns


def campaign_model_summary(campaign: Campaign) -> dict[str, Any]:
    """What the dashboard shows about the sampler: strategy, level, and the label and cost
    models of the last refit (None before the first one)."""
    record = SamplingState.objects.filter(campaign=campaign).first()
    summary: dict[str, Any] = {
        "strategy": campaign.strategy,
        "strategy_label": campaign.get_strategy_display(),
        "level": strategy_for(campaign).level.name,
        "goal": campaign.goal,
        "goal_label": campaign.get_goal_display(),
        "focus_systems": list(campaign.focus_systems or []),
        "metric": campaign.metric,
        "status": campaign.status,
        "mix": campaign.mix,
        "label_model": None,
        "cost_model": None,
        "refit_at": None,
        "version": None,
    }
    if record is None:
        return summary
    label = dict(record.label_model or {})
    cost = dict(record.cost_model or {})
    summary.update(
        refit_at=record.updated_at.isoformat(),
        version=record.version,
        focus_systems=label.get("focus_systems") or summary["focus_systems"],
        label_model={
            key: label.get(key)
            for key in ("kind", "n_labels", "prior_strength", "prior_weight", "default_prior")
        },
        cost_model={
            **{key: cost.get(key) for key in ("kind", "n_points", "r_squared", "rmse", "fit_refused")},
            "weak_fit": cost_fit_is_weak(cost),
        },
    )
    return summary


# Below this R² the dashboard says that document length barely predicts judging time.
WEAK_COST_FIT_R2 = 0.1


def cost_fit_is_weak(cost_model: dict[str, Any]) -> bool:
    """True when a fitted cost model explains little of the judging time: not an error (items
    are then priced about the same, as the data says), but worth saying on the dashboard."""
    r_squared = cost_model.get("r_squared")
    return cost_model.get("kind") == "fitted" and r_squared is not None and r_squared < WEAK_COST_FIT_R2
