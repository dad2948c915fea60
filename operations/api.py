"""The operations API: users (create, deactivate) and the health check for monitors."""

from __future__ import annotations

from typing import Any

from django.contrib.auth.models import User
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import status
from rest_framework.exceptions import NotFound, PermissionDenied
from rest_framework.permissions import AllowAny
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from labeling.access import request_user
from labeling.api.common import bad_request
from labeling.permissions import is_admin, is_coordinator, user_role
from operations.accounts import user_create, user_set_active
from operations.freshness import installation_health
from operations.serializers import UserActiveSerializer, UserInputSerializer, UserOutputSerializer


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
