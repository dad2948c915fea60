"""Template filters: role-dependent navigation, and a campaign's one-line summary."""

from __future__ import annotations

from django import template
from django.contrib.auth.models import AbstractBaseUser, AnonymousUser

from labeling.models import Campaign
from labeling.modes import mode_of
from labeling.permissions import is_coordinator as _is_coordinator
from labeling.services.pool_arrays import campaign_metric_label

register = template.Library()


@register.filter
def is_coordinator(user: AbstractBaseUser | AnonymousUser) -> bool:
    """True for coordinators and admins (they create and manage campaigns)."""
    return _is_coordinator(user)


@register.filter
def metric_label(campaign: Campaign) -> str:
    """The campaign's metric, with custom DCG gains and discounts when it has them."""
    return campaign_metric_label(campaign)


@register.filter
def judging_summary(campaign: Campaign) -> str:
    """What the campaign measures and how it is judged, in one line (its mode says)."""
    mode = mode_of(campaign)
    return f"{mode.label} · {mode.describe(campaign)}"
