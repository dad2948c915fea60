"""The token lane: the judging API's hot requests, from a client with an API token and no cookie,
run through the middleware that shapes every response and skip the middleware that only serves
browser sessions.

Every assessor's script or tool asks for its next item and answers it through two endpoints, and
measured in process the session middleware (sessions, CSRF, Django's user, the login
requirement, messages, the static files, the login lock-out page) took about a fifth of the CPU of
each such request while doing nothing for it: the client sends no cookie, so there is no session,
no CSRF check applies (DRF checks CSRF only for session logins), and DRF authenticates the token
itself. What the lane keeps makes its responses those of the full chain: the forwarded headers
of trusted proxies, the security headers (HTTPS redirect, HSTS, nosniff, referrer and opener
policies), the Content-Security-Policy, Content-Length, the NUL refusal and the frame options.
The one header it leaves out is `Vary: Cookie`, which tells caches that a response depends on the
request's cookies: a lane request has none, and a shared cache never reuses a response to a
request that carries an `Authorization` header.

A view opts in with `@token_lane`; only DRF views that need no login from Django's middleware
may (the tests hold the marked views to that). Everything else, and any request with a cookie
or without a token, takes the full chain as before.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.core.handlers.base import BaseHandler
from django.core.handlers.wsgi import WSGIHandler
from django.http import HttpRequest
from django.urls import Resolver404, ResolverMatch, get_resolver

# The view class attribute `@token_lane` sets.
_LANE_ATTRIBUTE = "serves_the_token_lane"


def token_lane(view_class: type) -> type:
    """Mark a DRF view whose token requests may take the shorter middleware chain."""
    setattr(view_class, _LANE_ATTRIBUTE, True)
    return view_class


def session_free_middleware() -> list[str]:
    """The lane's middleware: the settings' chain without its session-only members."""
    return [path for path in settings.MIDDLEWARE if path not in settings.SESSION_ONLY_MIDDLEWARE]


class _ResolvedOnce:
    """Handlers that reuse the route `lane_request` resolved to pick the chain."""

    def resolve_request(self, request: HttpRequest) -> ResolverMatch:
        match: ResolverMatch | None = getattr(request, "_resolved_route", None)
        if match is None:
            return super().resolve_request(request)  # type: ignore[misc]  # a handler's, next in the MRO
        request.resolver_match = match
        return match


class _SessionFreeChain(_ResolvedOnce, BaseHandler):
    """The lane's middleware chain, built like Django's own from a shorter list."""

    def __init__(self) -> None:
        # Django builds a chain from settings.MIDDLEWARE only; the list is swapped while this one
        # is built, at start-up, before any request thread runs.
        everything = settings.MIDDLEWARE
        settings.MIDDLEWARE = session_free_middleware()
        try:
            self.load_middleware()
        finally:
            settings.MIDDLEWARE = everything


class TokenLaneWSGIHandler(_ResolvedOnce, WSGIHandler):
    """Django's WSGI handler with the token lane beside its full middleware chain."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._lane = _SessionFreeChain()

    def get_response(self, request: HttpRequest) -> Any:
        if lane_request(request):
            return self._lane.get_response(request)
        return super().get_response(request)


def lane_request(request: HttpRequest) -> bool:
    """True for a request with an API token, no cookie, to a view marked `@token_lane`. A token
    request's route is kept on the request, so that whichever chain serves it resolves none."""
    meta = request.META
    # The header's form as DRF's TokenAuthentication reads it (personal and scoped tokens alike).
    if "HTTP_COOKIE" in meta or not meta.get("HTTP_AUTHORIZATION", "").lower().startswith("token "):
        return False
    try:
        match = get_resolver().resolve(request.path_info)
    except Resolver404:
        return False
    request._resolved_route = match  # type: ignore[attr-defined]
    return bool(getattr(getattr(match.func, "view_class", None), _LANE_ATTRIBUTE, False))
