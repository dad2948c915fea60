"""Request checks that hold for every page and endpoint."""

from __future__ import annotations

import ipaddress
from collections.abc import Callable
from functools import lru_cache

from django.conf import settings
from django.http import HttpRequest, HttpResponse, HttpResponseBadRequest, JsonResponse

FORWARDED_HEADERS = ("HTTP_X_FORWARDED_FOR", "HTTP_X_FORWARDED_PROTO", "HTTP_X_FORWARDED_HOST")

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


@lru_cache(maxsize=8)
def _networks(entries: tuple[str, ...]) -> tuple[ipaddress.IPv4Network | ipaddress.IPv6Network, ...]:
    return tuple(ipaddress.ip_network(entry, strict=False) for entry in entries)


def peer_is_trusted_proxy(address: str | None) -> bool:
    """Whether the request's peer is one of settings.TRUSTED_PROXIES."""
    try:
        peer = ipaddress.ip_address(address or "")
    except ValueError:
        return False
    return any(peer in network for network in _networks(tuple(settings.TRUSTED_PROXIES)))


def forwarded_headers_from_trusted_proxies(
    get_response: Callable[[HttpRequest], HttpResponse],
) -> Callable[[HttpRequest], HttpResponse]:
    """Drop X-Forwarded-For, -Proto and -Host unless the peer is a trusted proxy
    (settings.TRUSTED_PROXIES): a client that reaches gunicorn directly could otherwise give a new
    address with each wrong password (the per-address login limit never counting up) or claim
    HTTPS."""

    def middleware(request: HttpRequest) -> HttpResponse:
        if not peer_is_trusted_proxy(request.META.get("REMOTE_ADDR")):
            for header in FORWARDED_HEADERS:
                request.META.pop(header, None)
        return get_response(request)

    return middleware
