"""The operations API: users (create, deactivate), the health check for monitors, a campaign's
scoped tokens and the audit log."""

from __future__ import annotations

from typing import Any

from django.contrib.auth.models import User
from django.http import StreamingHttpResponse
from django.utils.dateparse import parse_datetime
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import status
from rest_framework.exceptions import NotFound, PermissionDenied
from rest_framework.permissions import AllowAny
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from labeling.access import campaign_for, request_user
from labeling.api.common import bad_request
from labeling.permissions import MANAGE, is_admin, is_coordinator, user_role
from operations.accounts import user_create, user_set_active
from operations.audit import AUDIT_PAGE_LIMIT, audit_csv, audit_events, audit_row, source_address
from operations.freshness import installation_health
from operations.models import AuditEvent, ScopedToken
from operations.scoped_tokens import (
    scoped_token_create,
    scoped_token_revoke,
    scoped_token_row,
    scoped_tokens_of,
)
from operations.serializers import (
    AuditEventSerializer,
    NewScopedTokenSerializer,
    ScopedTokenInputSerializer,
    ScopedTokenOutputSerializer,
    UserActiveSerializer,
    UserInputSerializer,
    UserOutputSerializer,
)


def _user_output(user: User) -> dict[str, Any]:
    """What both user endpoints answer about the user."""
    output = {
        "id": user.pk,
        "username": user.get_username(),
        "role": user_role(user),
        "active": user.is_active,
    }
    return dict(UserOutputSerializer(output).data)


class UserCreateApi(APIView):
    """Create a user with a global role (coordinators and admins; only admins create admins)."""

    @extend_schema(request=UserInputSerializer, responses={201: UserOutputSerializer})
    def post(self, request: Request) -> Response:
        if not is_coordinator(request.user):
            raise PermissionDenied("Only coordinators and admins create users.")
        data = UserInputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        try:
            user = user_create(creator=request_user(request), **data.validated_data)
        except PermissionError as error:
            raise PermissionDenied(str(error)) from None
        except ValueError as error:
            return bad_request(str(error))
        return Response(_user_output(user), status=status.HTTP_201_CREATED)


class HealthApi(APIView):
    """For monitoring: 200 with status "ok", 503 with "stale" (a campaign's recomputed state is
    behind its answers for longer than HEALTH_STALE_SECONDS) or "down" (no database). Anyone
    gets the summary; an admin also gets each running or paused campaign's freshness."""

    permission_classes = [AllowAny]

    @extend_schema(responses={200: OpenApiResponse(description="status, figures"), 503: OpenApiResponse()})
    def get(self, request: Request) -> Response:
        health = installation_health()
        if not is_admin(request.user):
            health.pop("campaigns", None)
        return Response(health, status=200 if health["status"] == "ok" else 503)


class UserApi(APIView):
    """Deactivate a user, or bring one back: `{"active": false}` (coordinators: assessors;
    admins: anyone but themselves). A deactivated user cannot sign in or use a token; nothing
    they made is deleted."""

    @extend_schema(request=UserActiveSerializer, responses={200: UserOutputSerializer})
    def patch(self, request: Request, username: str) -> Response:
        data = UserActiveSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        try:
            user = user_set_active(
                actor=request_user(request), username=username, active=data.validated_data["active"]
            )
        except PermissionError as error:
            raise PermissionDenied(str(error)) from None
        except ValueError as error:
            raise NotFound(str(error)) from None
        return Response(_user_output(user))


class ScopedTokensApi(APIView):
    """A campaign's scoped tokens (users who may manage it): list them, or make one for a release
    pipeline (`{"name", "scopes", "days"}`); the answer holds the secret, shown this once."""

    @extend_schema(responses={200: ScopedTokenOutputSerializer(many=True)})
    def get(self, request: Request, campaign_id: int) -> Response:
        campaign = campaign_for(request, campaign_id, MANAGE)
        rows = [scoped_token_row(token) for token in scoped_tokens_of(campaign)]
        return Response(ScopedTokenOutputSerializer(rows, many=True).data)

    @extend_schema(request=ScopedTokenInputSerializer, responses={201: NewScopedTokenSerializer})
    def post(self, request: Request, campaign_id: int) -> Response:
        campaign = campaign_for(request, campaign_id, MANAGE)
        data = ScopedTokenInputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        try:
            made = scoped_token_create(
                campaign=campaign,
                creator=request_user(request),
                source=source_address(request._request),
                **data.validated_data,
            )
        except ValueError as error:
            return bad_request(str(error))
        answer = {**scoped_token_row(made.token), "secret": made.secret}
        response = Response(NewScopedTokenSerializer(answer).data, status=status.HTTP_201_CREATED)
        response["Cache-Control"] = "no-store"  # the secret must not stay in a cache
        return response


class ScopedTokenApi(APIView):
    """Revoke a scoped token: the next request with it gets 401. Revoking a revoked one is a no-op."""

    @extend_schema(responses={200: ScopedTokenOutputSerializer})
    def delete(self, request: Request, campaign_id: int, token_id: int) -> Response:
        campaign = campaign_for(request, campaign_id, MANAGE)
        token = (
            ScopedToken.objects.filter(campaign=campaign, pk=token_id).select_related("created_by").first()
        )
        if token is None:
            raise NotFound("No such token in this campaign.")
        token = scoped_token_revoke(
            token=token, actor=request_user(request), source=source_address(request._request)
        )
        return Response(ScopedTokenOutputSerializer(scoped_token_row(token)).data)


_AUDIT_FILTERS = [
    OpenApiParameter("kind", str, enum=[kind.value for kind in AuditEvent.Kind]),
    OpenApiParameter("since", str, description="ISO 8601 time: events at or after it"),
    OpenApiParameter("until", str, description="ISO 8601 time: events before it"),
]


def _audit_query(request: Request) -> dict[str, Any]:
    """The list's filters from the query, or ValueError naming the bad one."""
    if not is_admin(request.user):
        raise PermissionDenied("Only admins read the audit log.")
    kind = request.query_params.get("kind") or None
    if kind is not None and kind not in AuditEvent.Kind.values:
        raise ValueError(f"kind must be one of {', '.join(AuditEvent.Kind.values)}")
    bounds: dict[str, Any] = {}
    for name in ("since", "until"):
        text = request.query_params.get(name)
        if text:
            try:
                moment = parse_datetime(text)
            except ValueError:
                moment = None
            if moment is None or moment.tzinfo is None:
                raise ValueError(f"{name} must be an ISO 8601 time with its zone, e.g. 2026-12-01T00:00:00Z")
            bounds[name] = moment
    return {"kind": kind, **bounds}


class AuditApi(APIView):
    """The audit log, newest first (admins): sign-ins, failed sign-ins, sign-outs, scoped tokens
    made, used (at most once a minute per token), refused and revoked, and role changes. At most
    1,000 events per answer; `until` pages back."""

    @extend_schema(parameters=_AUDIT_FILTERS, responses={200: AuditEventSerializer(many=True)})
    def get(self, request: Request) -> Response:
        try:
            query = _audit_query(request)
        except ValueError as error:
            return bad_request(str(error))
        rows = [audit_row(event) for event in audit_events(**query)[:AUDIT_PAGE_LIMIT]]
        return Response(AuditEventSerializer(rows, many=True).data)


class AuditExportApi(APIView):
    """The whole audit log (or the filtered part) as CSV, streamed (admins)."""

    @extend_schema(parameters=_AUDIT_FILTERS, responses={200: OpenApiResponse(description="text/csv")})
    def get(self, request: Request) -> StreamingHttpResponse | Response:
        try:
            query = _audit_query(request)
        except ValueError as error:
            return bad_request(str(error))
        response = StreamingHttpResponse(
            audit_csv(audit_events(**query).iterator(chunk_size=2000)), content_type="text/csv"
        )
        response["Content-Disposition"] = 'attachment; filename="audit.csv"'
        return response
