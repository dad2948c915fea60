"""The scoped-tokens panel of every campaign's page (`scoped_tokens_panel`, registered with the
core) and its actions: make a token, show its secret once, revoke one. Users who may manage the
campaign only.

The secret goes from the POST to the page that shows it through the session, popped by that
page: a reload shows it no more and makes no second token."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_POST

from labeling.access import campaign_for_page, request_user
from labeling.models import Campaign
from labeling.permissions import MANAGE
from operations.audit import source_address
from operations.models import ScopedToken
from operations.scoped_tokens import (
    NAME_MAX_LENGTH,
    SCOPE_HELP,
    scoped_token_create,
    scoped_token_revoke,
    scoped_token_row,
    scoped_tokens_of,
)

DEFAULT_DAYS = 90


def _typed_key(campaign: Campaign) -> str:
    return f"refused-token-{campaign.pk}"


def _made_key(campaign: Campaign) -> str:
    return f"made-token-{campaign.pk}"


def scoped_tokens_panel(request: HttpRequest, campaign: Campaign) -> dict[str, Any] | None:
    """The campaign page's panel for those who may manage the campaign: its tokens, and the form
    (after a refusal, with what was typed)."""
    if not request.user.has_perm(MANAGE, campaign):
        return None
    typed = request.session.pop(_typed_key(campaign), None) or {}
    return {
        "typed_name": typed.get("name", ""),
        "typed_scopes": typed.get("scopes", ["arrivals"]),
        "template": "operations/tokens_panel.html",
        "tokens": [_shown(scoped_token_row(token)) for token in scoped_tokens_of(campaign)],
        "scopes": list(SCOPE_HELP.items()),
        "max_days": settings.SCOPED_TOKEN_MAX_DAYS,
        "days": typed.get("days") or min(DEFAULT_DAYS, settings.SCOPED_TOKEN_MAX_DAYS),
        "per_campaign": settings.SCOPED_TOKENS_PER_CAMPAIGN,
        "name_max": NAME_MAX_LENGTH,
    }


def _shown(row: dict[str, Any]) -> dict[str, Any]:
    """A token's row with its times as the page shows them (minutes, UTC)."""
    for name in ("created_at", "expires_at", "last_used_at", "revoked_at"):
        if row[name]:
            row[f"{name}_text"] = row[name][:16].replace("T", " ")
    return row


def _back(campaign: Campaign) -> HttpResponse:
    return redirect(reverse("labeling:campaign_detail", args=[campaign.pk]) + "#tokens")


@login_required
@require_POST
def scoped_token_create_page(request: HttpRequest, campaign_id: int) -> HttpResponse:
    campaign = campaign_for_page(request, campaign_id, MANAGE)
    days_text = request.POST.get("days", "").strip()
    try:
        if not days_text.isdigit():
            raise ValueError(f"a token's life is a whole number of days, not {days_text[:20]!r}")
        made = scoped_token_create(
            campaign=campaign,
            creator=request_user(request),
            name=request.POST.get("name", ""),
            scopes=request.POST.getlist("scopes"),
            days=int(days_text),
            source=source_address(request),
        )
    except ValueError as error:
        messages.error(request, f"Token not made: {error}", extra_tags="tokens")
        request.session[_typed_key(campaign)] = {
            "name": request.POST.get("name", "")[:NAME_MAX_LENGTH],
            "scopes": request.POST.getlist("scopes")[:10],
            "days": days_text[:10],
        }
        return _back(campaign)
    request.session[_made_key(campaign)] = {"token": made.token.pk, "secret": made.secret}
    return redirect("operations:token-made", campaign.pk)


@login_required
def scoped_token_made_page(request: HttpRequest, campaign_id: int) -> HttpResponse:
    """The secret of the token just made, once: the session gives it up as the page is shown."""
    campaign = campaign_for_page(request, campaign_id, MANAGE)
    made = request.session.pop(_made_key(campaign), None)
    token = ScopedToken.objects.filter(campaign=campaign, pk=made["token"]).first() if made else None
    context = {"campaign": campaign, "token": scoped_token_row(token) if token else None}
    response = render(request, "operations/token_made.html", {**context, "secret": made and made["secret"]})
    response["Cache-Control"] = "no-store"  # the secret must not stay in a cache
    return response


@login_required
@require_POST
def scoped_token_revoke_page(request: HttpRequest, campaign_id: int, token_id: int) -> HttpResponse:
    campaign = campaign_for_page(request, campaign_id, MANAGE)
    token = ScopedToken.objects.filter(campaign=campaign, pk=token_id).first()
    if token is None:
        messages.error(request, "No such token in this campaign.", extra_tags="tokens")
    else:
        scoped_token_revoke(token=token, actor=request_user(request), source=source_address(request))
        messages.success(
            request, f"Token “{token.name}” revoked: the next request with it gets 401.", extra_tags="tokens"
        )
    return _back(campaign)
