"""The trusted-proxy pattern: forwarded headers are believed only from the reverse proxies the
operator lists (settings.TRUSTED_PROXIES)."""

from __future__ import annotations

import ipaddress
from collections.abc import Callable
from functools import lru_cache

from django.conf import settings
from django.http import HttpRequest, HttpResponse

FORWARDED_HEADERS = ("HTTP_X_FORWARDED_FOR", "HTTP_X_FORWARDED_PROTO", "HTTP_X_FORWARDED_HOST")


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
