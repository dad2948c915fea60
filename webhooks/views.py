"""The webhooks panel of every campaign's page (`webhooks_panel`, registered with the core) and
its two actions: add a webhook, remove one. Coordinators only; a refusal says why."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.urls import reverse
from django.views.decorators.http import require_POST

from labeling.access import campaign_for_page
from labeling.models import Campaign
from labeling.permissions import MANAGE
from webhooks.deliveries import retry_schedule
from webhooks.events import events_for
from webhooks.services import (
    SECRET_MAX_CHARS,
    SECRET_MIN_CHARS,
    webhook_add,
    webhook_remove,
    webhooks_summary,
)


def _refused_key(campaign: Campaign) -> str:
    return f"refused-webhook-{campaign.pk}"


def webhooks_panel(request: HttpRequest, campaign: Campaign) -> dict[str, Any] | None:
    """The campaign page's webhooks panel: its webhooks with their recent deliveries, and the
    form offering the events this campaign can emit (None when it can emit none and has none).
    After a refused add, the form shows the URL and events typed (never the secret)."""
    events, hooks = events_for(campaign), webhooks_summary(campaign, recent=5)
    if not events and not hooks:
        return None
    typed = request.session.pop(_refused_key(campaign), None) or {}
    return {
        "typed_url": typed.get("url", ""),
        "typed_events": typed.get("events", ["arrival.decided"]),
        "template": "webhooks/panel.html",
        "webhooks": hooks,
        "events": events,
        "attempt_seconds": f"{settings.WEBHOOK_ATTEMPT_SECONDS:g}",
        "retry_schedule": retry_schedule(),
        "secret_min": SECRET_MIN_CHARS,
        "secret_max": SECRET_MAX_CHARS,
    }


def _back(campaign: Campaign) -> HttpResponse:
    return redirect(reverse("labeling:campaign_detail", args=[campaign.pk]) + "#webhooks")


@login_required
@require_POST
def webhook_add_page(request: HttpRequest, campaign_id: int) -> HttpResponse:
    """Register a webhook; a refusal (a host the operator does not allow, a short secret) says why."""
    campaign = campaign_for_page(request, campaign_id, MANAGE)
    try:
        webhook_add(
            campaign=campaign,
            url=request.POST.get("url", "").strip(),
            secret=request.POST.get("secret", ""),
            events=request.POST.getlist("events"),
            user=request.user,
        )
    except ValueError as error:
        messages.error(request, f"Webhook not added: {error}")
        typed = {
            "url": request.POST.get("url", "").strip()[:2000],
            "events": request.POST.getlist("events")[:50],
        }
        request.session[_refused_key(campaign)] = typed
    else:
        messages.success(request, "Webhook added: events from now on are sent to it.")
    return _back(campaign)


@login_required
@require_POST
def webhook_remove_page(request: HttpRequest, campaign_id: int, webhook_id: int) -> HttpResponse:
    campaign = campaign_for_page(request, campaign_id, MANAGE)
    if webhook_remove(campaign, webhook_id):
        messages.success(request, "Webhook removed.")
    else:
        messages.error(request, "No such webhook in this campaign: it was removed already.")
    return _back(campaign)
