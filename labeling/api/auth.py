"""The API token endpoint: DRF's view with the API's JSON parser and login throttling."""

from __future__ import annotations

from typing import Any

from django.contrib.auth import user_logged_in
from rest_framework.authtoken.models import Token
from rest_framework.authtoken.views import ObtainAuthToken
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.settings import api_settings


class TokenApi(ObtainAuthToken):
    """Exchange a user name and password for an API token (`{"token": ...}`); refused with a
    429 after too many failures (operations.login_throttle)."""

    # DRF's token view names its own parsers; take the API's (labeling.parsers), so a hostile
    # body to this anonymous endpoint is a 400 as everywhere else.
    parser_classes = api_settings.DEFAULT_PARSER_CLASSES  # type: ignore[assignment]  # DRF's setting holds the classes

    def get_serializer_context(self) -> dict[str, Any]:
        # authenticate() gets Django's request rather than DRF's wrapper: django-axes marks a
        # locked-out login on the request it is given, and its middleware, which answers 429,
        # only sees Django's.
        return {**super().get_serializer_context(), "request": self.request._request}

    def post(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        serializer = self.get_serializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        user = serializer.validated_data["user"]
        token, _ = Token.objects.get_or_create(user=user)
        # A password exchanged for a token is a sign-in: said as Django says one (the last-login
        # time, the login limits' log, the audit log), as a failed one already is.
        user_logged_in.send(sender=user.__class__, request=self.request._request, user=user)
        return Response({"token": token.key})
