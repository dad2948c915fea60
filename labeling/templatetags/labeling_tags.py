"""Template filters: role-dependent navigation, and a campaign's one-line summary."""

from __future__ import annotations

from django import template
from django.contrib.auth.models import AnonymousUser, User
from django.utils.safestring import SafeString

from labeling.markdown import render_markdown
from labeling.metric import campaign_metric_label
from labeling.models import Campaign
from labeling.modes import mode_of
from labeling.permissions import is_coordinator as _is_coordinator

register = template.Library()


@register.filter
def is_coordinator(user: User | AnonymousUser) -> bool:
    """True for coordinators and admins (they create and manage campaigns)."""
    return _is_coordinator(user)


@register.filter
def metric_label(campaign: Campaign) -> str:
    """The campaign's metric, with custom DCG gains and discounts when it has them."""
    return campaign_metric_label(campaign)


@register.filter
def markdown(text: str) -> SafeString:
    """Coordinators' Markdown as safe HTML (raw HTML escaped; labeling.markdown)."""
    return render_markdown(text)


@register.filter
def has_guidelines(campaign: Campaign) -> bool:
    """Whether the campaign has guidelines or a grade description to show."""
    return bool(campaign.guidelines) or any(grade.get("description") for grade in campaign.grades)


@register.inclusion_tag("labeling/_guidelines.html")
def campaign_guidelines(campaign: Campaign) -> dict[str, object]:
    """The campaign's guidelines and per-grade descriptions, for every mode's judge page."""
    grades = [grade for grade in campaign.grades if grade.get("description")]
    return {
        "guidelines": render_markdown(campaign.guidelines) if campaign.guidelines else "",
        "grades": grades,
    }


@register.filter
def judging_summary(campaign: Campaign) -> str:
    """What the campaign measures and how it is judged, in one line (its mode says)."""
    mode = mode_of(campaign)
    return f"{mode.label} · {mode.describe(campaign)}"
