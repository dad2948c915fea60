"""Request checks that hold for every page and endpoint."""

from __future__ import annotations

import http
from collections.abc import Callable
from typing import Any

from csp.constants import HEADER, HEADER_REPORT_ONLY
from csp.middleware import CheckableLazyObject, CSPMiddleware
from csp.utils import build_policy
from django.conf import settings
from django.core.signals import setting_changed
from django.dispatch import receiver
from django.http import HttpRequest, HttpResponse, HttpResponseBadRequest, JsonResponse
from django.http.response import HttpResponseBase

FORM_CONTENT_TYPES = ("application/x-www-form-urlencoded", "multipart/form-data")


def _holds_nul(request: HttpRequest) -> bool:
    params = [request.GET]
    if request.method == "POST" and request.content_type in FORM_CONTENT_TYPES:
        # The form's text fields; a multipart body is parsed here rather than in the view (the
        # CSRF check of a page would read it here too), its files are the readers' to check.
        params.append(request.POST)
    return any(
        "\x00" in key or any("\x00" in value for value in values) for p in params for key, values in p.lists()
    )


def refuse_nul_characters(
    get_response: Callable[[HttpRequest], HttpResponse],
) -> Callable[[HttpRequest], HttpResponse]:
    """A 400 for a NUL character in a URL's query or a form field, before any view reads it.

    No text column stores NUL (PostgreSQL refuses it in a query parameter too, as a 500), and no
    honest client sends one. JSON bodies are checked by `labeling.parsers`, uploaded files by the
    file readers.
    """

    def middleware(request: HttpRequest) -> HttpResponse:
        if _holds_nul(request):
            reason = "a query parameter or form field contains a NUL character"
            if request.path.startswith("/api/"):
                return JsonResponse({"detail": reason}, status=400)
            return HttpResponseBadRequest(f"Bad request: {reason}.", content_type="text/plain")
        return get_response(request)

    return middleware


# What makes one response's policy differ from the settings' one: django-csp's view decorators.
_POLICY_OF_ITS_OWN = (
    "_csp_exempt",
    "_csp_exempt_ro",
    "_csp_config",
    "_csp_update",
    "_csp_replace",
    "_csp_config_ro",
    "_csp_update_ro",
    "_csp_replace_ro",
)
# Responses django-csp leaves without a header under DEBUG (its debug pages).
_DEBUG_PAGES = (http.HTTPStatus.INTERNAL_SERVER_ERROR, http.HTTPStatus.NOT_FOUND)

# Bumped when a policy setting changes while the process runs (override_settings): every settled
# policy built before is stale then.
_policy_generation = [0]


@receiver(setting_changed, dispatch_uid="settled-csp-policy")
def _policy_settings_changed(setting: str, **kwargs: Any) -> None:
    if setting.startswith("CONTENT_SECURITY_POLICY"):
        _policy_generation[0] += 1


class SettledContentSecurityPolicy(CSPMiddleware):
    """django-csp's middleware with the settings' policy built once per process.

    django-csp builds the header text from the settings again for every response: two dataclass
    copies and two policy builds, about 50 us a response (`bench/bench_csp_header.py`), twice per
    judgment. The text can only differ between responses through a view
    decorator of django-csp, a nonce, an excluded URL prefix or a debug page; those responses
    take django-csp's own path, every other one gets the text built on the first response."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponseBase]) -> None:
        super().__init__(get_response)
        self._settled: tuple[str, str] | None = None
        self._settled_generation = _policy_generation[0]

    def _settled_policies(self) -> tuple[str, str] | None:
        """(policy, report-only policy) from the settings; None when a URL prefix is excluded
        (then the path decides, per request)."""
        if self._settled is None or self._settled_generation != _policy_generation[0]:
            self._settled_generation = _policy_generation[0]
            configured = [
                getattr(settings, name, None) or {}
                for name in ("CONTENT_SECURITY_POLICY", "CONTENT_SECURITY_POLICY_REPORT_ONLY")
            ]
            if any(policy.get("EXCLUDE_URL_PREFIXES") for policy in configured):
                return None
            self._settled = (build_policy(), build_policy(report_only=True))
        return self._settled

    def process_response(self, request: HttpRequest, response: HttpResponseBase) -> HttpResponseBase:
        settled = self._settled_policies()
        if (
            settled is None
            or getattr(request, "_csp_nonce", None) is not None
            or any(hasattr(response, name) for name in _POLICY_OF_ITS_OWN)
            or (settings.DEBUG and response.status_code in _DEBUG_PAGES)
        ):
            return super().process_response(request, response)
        for header, policy in zip((HEADER, HEADER_REPORT_ONLY), settled, strict=True):
            if policy and header not in response:
                response[header] = policy
        # As django-csp does: a nonce asked for after the header is written is an error.
        request_attributes: Any = request
        request_attributes.csp_nonce = CheckableLazyObject(self._csp_nonce_post_response)
        return response
