"""The API token endpoint: DRF's view with the API's JSON parser and login throttling."""

from __future__ import annotations

from typing import Any

from rest_framework.authtoken.views import ObtainAuthToken
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
