"""Template filters: role-dependent navigation, a campaign's one-line summary, durations, and the
judge pages' shortcut keys."""

from __future__ import annotations

from django import template
from django.contrib.auth.models import AnonymousUser, User
from django.utils.html import format_html
from django.utils.safestring import SafeString

from labeling.markdown import render_markdown
from labeling.metric import campaign_metric_label
from labeling.models import Campaign
from labeling.modes import campaign_state_shown, mode_of
from labeling.permissions import is_coordinator as _is_coordinator
from labeling.selectors import STATE_LABELS
from labeling.shortcuts import PageShortcuts

register = template.Library()


@register.filter
def judging_time(seconds: float | None) -> str:
    """Measured judging time in one unit per size, the same rule wherever it is shown: seconds
    under two minutes, minutes under two hours, then hours and minutes."""
    total = max(0, round(float(seconds or 0)))
    if total < 120:
        return f"{total} s"
    minutes = round(total / 60)
    if minutes < 120:
        return f"{minutes} min"
    return f"{minutes // 60} h {minutes % 60} min"


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


@register.filter
def shown_state(campaign: Campaign) -> str:
    """The state a list shows for the campaign (`campaign_state_shown`): "budget_spent" rather
    than "running" once the budget stopped it."""
    return campaign_state_shown(campaign)


@register.filter
def state_label(state: str) -> str:
    """A state in the words every page and the progress API use."""
    return STATE_LABELS.get(state, state)


@register.filter
def state_badge(state: str) -> SafeString:
    """The badge of a state."""
    return format_html('<span class="badge {}">{}</span>', state, state_label(state))


@register.filter
def kbd(shortcuts: PageShortcuts | None, action: str | int) -> SafeString:
    """`<kbd>P</kbd>`: the key of an action (a name, or a grade's value) on this judge page for
    this assessor; empty when single keys are off or the action has none."""
    name = f"grade_{action}" if isinstance(action, int) else action
    shown = shortcuts.shown.get(name, "") if shortcuts is not None else ""
    return format_html("<kbd>{}</kbd>", shown) if shown else SafeString("")


@register.filter
def key_hint(shortcuts: PageShortcuts | None, action: str) -> str:
    """ " (P)" after a button's words, or nothing when single keys are off or it has no key."""
    shown = shortcuts.shown.get(action, "") if shortcuts is not None else ""
    return f" ({shown})" if shown else ""
