"""Scoped tokens: a credential for one campaign that reaches only the endpoints of its scopes, and
expires. A release pipeline submits runs and reads verdicts with one; it cannot read exports, edit
the campaign or judge.

- Made by a user who may manage the campaign (`MANAGE`), shown once, stored as a SHA-256 hash.
- Checked in one place for every API view, `ScopedTokenAuthentication` (first among DRF's token
  authentications in the settings): an unknown, expired or revoked token gets 401; a known one on
  an endpoint, method or campaign outside its scopes 403; one past its rate 429. The views then
  check the token's maker as they would the maker's own session (a maker who lost the role
  takes the token's reach with them).
- Every quantity has an operator ceiling: tokens per campaign, days to expiry, requests a minute.
"""

from __future__ import annotations

import hashlib
import secrets
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.contrib.auth.models import User
from django.db import transaction
from django.db.models import Case, F, IntegerField, Value, When
from django.http import HttpRequest
from django.utils import timezone
from drf_spectacular.extensions import OpenApiAuthenticationExtension
from rest_framework import exceptions
from rest_framework.authentication import BaseAuthentication, get_authorization_header
from rest_framework.request import Request

from labeling.models import Campaign
from operations.audit import Kind, audit_record, source_address
from operations.models import ScopedToken

# Every scoped token starts so, which tells it from a personal API token in the same header.
SECRET_PREFIX = "rat_"
# What each scope reaches: URL names and the methods allowed on them, always for the token's
# own campaign (the URL's `campaign_id`).
SCOPES: dict[str, dict[str, frozenset[str]]] = {
    "arrivals": {
        "api-arrivals": frozenset({"GET", "POST"}),  # submit a run, list the arrivals
        "api-arrival": frozenset({"GET"}),  # one arrival's report and verdict
    },
    "estimates": {
        "api-estimates": frozenset({"GET"}),
        "api-estimates-history": frozenset({"GET"}),
    },
}
SCOPE_HELP = {
    "arrivals": "submit runs as arrivals and read their reports and verdicts (the release gate)",
    "estimates": "read the campaign's estimates and their history",
}
NAME_MAX_LENGTH = 100
# Reads and HEAD/OPTIONS ride on GET.
_READ_ALIASES = {"HEAD": "GET", "OPTIONS": "GET"}


class TokenRefused(exceptions.APIException):
    """401 for a token that is unknown, expired or revoked (DRF would turn its own
    AuthenticationFailed into a 403 under session authentication)."""

    status_code = 401
    default_code = "token_refused"

    def __init__(self, detail: str) -> None:
        super().__init__(detail)
        self.auth_header = 'Token realm="api"'


@dataclass(frozen=True)
class NewToken:
    """A token just made: its row and the secret, which is never shown again."""

    token: ScopedToken
    secret: str


def _hash(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


def _clean_scopes(scopes: list[str]) -> list[str]:
    unknown = sorted(set(scopes) - set(SCOPES))
    if unknown:
        raise ValueError(f"unknown scope(s) {', '.join(unknown)}; the scopes are {', '.join(SCOPES)}")
    if not scopes:
        raise ValueError(f"a token needs at least one scope ({', '.join(SCOPES)})")
    return sorted(set(scopes))


def scoped_token_create(
    *,
    campaign: Campaign,
    creator: User,
    name: str,
    scopes: list[str],
    days: int,
    source: str | None = None,
) -> NewToken:
    """Make a token; ValueError names what is wrong (scopes, name, days, the campaign's count).
    The caller has checked that `creator` may manage the campaign."""
    name = name.strip()
    if not name or len(name) > NAME_MAX_LENGTH:
        raise ValueError(f"a token's name has 1 to {NAME_MAX_LENGTH} characters")
    clean = _clean_scopes(scopes)
    ceiling = settings.SCOPED_TOKEN_MAX_DAYS
    if not 1 <= days <= ceiling:
        raise ValueError(f"a token expires after 1 to {ceiling} days (SCOPED_TOKEN_MAX_DAYS), not {days}")
    now = timezone.now()
    with transaction.atomic():
        # The campaign row's lock orders concurrent makers, so the count below holds.
        Campaign.objects.select_for_update(no_key=True).get(pk=campaign.pk)
        live = ScopedToken.objects.filter(campaign=campaign, revoked_at=None, expires_at__gt=now).count()
        limit = settings.SCOPED_TOKENS_PER_CAMPAIGN
        if live >= limit:
            raise ValueError(
                f"this campaign has {live} live tokens, the most allowed (SCOPED_TOKENS_PER_CAMPAIGN); "
                "revoke one first"
            )
        secret = SECRET_PREFIX + secrets.token_urlsafe(32)
        token = ScopedToken.objects.create(
            campaign=campaign,
            name=name,
            scopes=clean,
            created_by=creator,
            created_at=now,
            expires_at=now + timedelta(days=days),
            secret_hash=_hash(secret),
            prefix=secret[: len(SECRET_PREFIX) + 6],
        )
        audit_record(
            Kind.TOKEN_CREATED,
            user=creator,
            source=source,
            campaign_id=campaign.pk,
            detail={
                "token": token.pk,
                "name": name,
                "scopes": clean,
                "expires_at": token.expires_at.isoformat(),
            },
        )
    return NewToken(token, secret)


def scoped_token_revoke(*, token: ScopedToken, actor: User, source: str | None = None) -> ScopedToken:
    """Revoke at once (the next request with it gets 401); revoking twice changes nothing."""
    with transaction.atomic():
        revoked = ScopedToken.objects.filter(pk=token.pk, revoked_at=None).update(
            revoked_at=timezone.now(), revoked_by=actor
        )
        if revoked:
            audit_record(
                Kind.TOKEN_REVOKED,
                user=actor,
                source=source,
                campaign_id=token.campaign_id,
                detail={"token": token.pk, "name": token.name},
            )
    token.refresh_from_db()
    return token


def scoped_tokens_of(campaign: Campaign) -> list[ScopedToken]:
    return list(ScopedToken.objects.filter(campaign=campaign).select_related("created_by", "revoked_by"))


def scoped_token_state(token: ScopedToken, now: datetime | None = None) -> str:
    """ "live", "expired" or "revoked"."""
    if token.revoked_at is not None:
        return "revoked"
    return "expired" if token.expires_at <= (now or timezone.now()) else "live"


def scoped_token_row(token: ScopedToken) -> dict[str, Any]:
    """What a list shows of a token (never its secret or hash)."""
    return {
        "id": token.pk,
        "name": token.name,
        "prefix": token.prefix,
        "scopes": token.scopes,
        "state": scoped_token_state(token),
        "created_by": token.created_by.get_username(),
        "created_at": token.created_at.isoformat(),
        "expires_at": token.expires_at.isoformat(),
        "revoked_at": token.revoked_at.isoformat() if token.revoked_at else None,
        "last_used_at": token.last_used_at.isoformat() if token.last_used_at else None,
        "last_used_from": token.last_used_from,
    }


def scope_allows(scopes: list[str], url_name: str | None, method: str) -> bool:
    method = _READ_ALIASES.get(method, method)
    return any(method in SCOPES.get(scope, {}).get(url_name or "", ()) for scope in scopes)


def _outside_scopes(token: ScopedToken, url_name: str | None, method: str, campaign_id: Any) -> str | None:
    """None when the token's scopes reach this endpoint of its campaign, else why not."""
    if campaign_id != token.campaign_id:
        return f"This token reaches campaign {token.campaign_id} only."
    if scope_allows(token.scopes, url_name, method):
        return None
    needed = [name for name in SCOPES if scope_allows([name], url_name, method)]
    has = ", ".join(token.scopes)
    if needed:
        return f"This needs the {' or '.join(needed)} scope; this token has {has}."
    return f"No scoped token reaches this endpoint (this token has {has}: docs/api.md, Scoped tokens)."


def _count_request(token: ScopedToken, request: HttpRequest, now: datetime) -> int:
    """Count the request in the token's current minute and note its last use, in one update;
    returns the requests of this minute so far, this one included."""
    minute = int(now.timestamp() // 60)
    ScopedToken.objects.filter(pk=token.pk).update(
        window_requests=Case(
            When(window_minute=minute, then=F("window_requests") + 1),
            default=Value(1),
            output_field=IntegerField(),
        ),
        window_minute=minute,
        last_used_at=now,
        last_used_from=source_address(request),
    )
    return ScopedToken.objects.values_list("window_requests", flat=True).get(pk=token.pk)


class ScopedTokenAuthentication(BaseAuthentication):
    """`Authorization: Token rat_...` (or `Bearer`): the token's maker, limited to its scopes."""

    keywords = (b"token", b"bearer")

    def authenticate(self, request: Request) -> tuple[User, ScopedToken] | None:
        header = get_authorization_header(request).split()
        if len(header) != 2 or header[0].lower() not in self.keywords:
            return None
        if not header[1].startswith(SECRET_PREFIX.encode()):
            return None  # a personal token: DRF's TokenAuthentication takes it
        secret = header[1].decode("ascii", errors="replace")
        source = source_address(request._request)
        token = ScopedToken.objects.select_related("created_by").filter(secret_hash=_hash(secret)).first()
        now = timezone.now()
        state = "unknown" if token is None else scoped_token_state(token, now)
        if token is not None and state == "live" and not token.created_by.is_active:
            state = "its maker is deactivated"
        if state != "live":
            audit_record(
                Kind.TOKEN_REFUSED,
                user=token.created_by if token is not None else None,
                source=source,
                campaign_id=token.campaign_id if token is not None else None,
                detail={"token": token.pk if token is not None else None, "why": state},
            )
            raise TokenRefused(f"This token is {state}." if token is not None else "Unknown token.")
        assert token is not None
        # Counted before the scope check, so a token probing other endpoints meets the rate too
        # and its refusals (each logged) stay bounded.
        counted = _count_request(token, request._request, now)
        if counted > settings.SCOPED_TOKEN_REQUESTS_PER_MINUTE:
            raise exceptions.Throttled(
                wait=60 - now.timestamp() % 60,
                detail=f"more than {settings.SCOPED_TOKEN_REQUESTS_PER_MINUTE} requests a minute with "
                "this token (SCOPED_TOKEN_REQUESTS_PER_MINUTE)",
            )
        match = request._request.resolver_match
        url_name = match.url_name if match is not None else None
        campaign_id = match.kwargs.get("campaign_id") if match is not None else None
        method = request.method or ""
        outside = _outside_scopes(token, url_name, method, campaign_id)
        if outside is not None:
            audit_record(
                Kind.TOKEN_REFUSED,
                user=token.created_by,
                source=source,
                campaign_id=token.campaign_id,
                detail={
                    "token": token.pk,
                    "why": "outside its scopes",
                    "request": f"{method} {request.path}"[:300],
                },
            )
            raise exceptions.PermissionDenied(outside)
        if counted == 1:  # the first request of a minute: one audit line a minute at most
            audit_record(
                Kind.TOKEN_USED,
                user=token.created_by,
                source=source,
                campaign_id=token.campaign_id,
                detail={"token": token.pk, "name": token.name},
            )
        return token.created_by, token

    def authenticate_header(self, request: Request) -> str:
        return 'Token realm="api"'


class ScopedTokenScheme(OpenApiAuthenticationExtension):
    """How the API schema (/api/docs/) describes the scoped token."""

    target_class = ScopedTokenAuthentication
    name = "scopedToken"

    def get_security_definition(self, auto_schema: Any) -> dict[str, str]:
        return {
            "type": "apiKey",
            "in": "header",
            "name": "Authorization",
            "description": "`Token rat_...`: a scoped token of one campaign (docs/api.md, Scoped tokens)",
        }
