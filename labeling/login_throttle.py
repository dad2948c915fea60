"""Brute-force protection for the login form, the admin login and `/api/auth/token/`.

django-axes counts failed logins per user name and per client address (AXES_LOCKOUT_PARAMETERS)
and refuses further attempts for a cool-off time once either reaches the limit. It works at
the authentication backend, so every login path that calls `authenticate(request, ...)` is
covered by the same counter; the views that take a password over HTTP (Django's LoginView and
admin login, DRF's token view) all pass their request. An administrator unlocks in the admin
(Axes > Access attempts: delete the rows) or with `manage.py axes_reset_username NAME` /
`axes_reset_ip ADDRESS` / `axes_reset`.
"""

from __future__ import annotations

from typing import Any

from axes.backends import AxesStandaloneBackend
from django.conf import settings
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import render


class LoginThrottleBackend(AxesStandaloneBackend):
    """Axes' backend, except that `authenticate()` without a request passes through."""

    def authenticate(
        self,
        request: HttpRequest | None,
        username: str | None = None,
        password: str | None = None,
        **kwargs: Any,
    ) -> None:
        if request is None:
            # Not an HTTP login (the test client's login(), a shell): there is no address to
            # count and no attacker on the other end. Axes would raise instead.
            return None
        return super().authenticate(request, username, password, **kwargs)


def client_address(request: HttpRequest) -> str | None:
    """The client's address: REMOTE_ADDR, or behind LOGIN_TRUSTED_PROXY_COUNT proxies the
    address the outermost of them put into X-Forwarded-For (earlier entries are the client's
    own word and could be forged to dodge the per-address limit)."""
    request = getattr(request, "_request", request)  # DRF's Request wraps Django's
    proxies = settings.LOGIN_TRUSTED_PROXY_COUNT
    if proxies:
        forwarded = [part.strip() for part in request.META.get("HTTP_X_FORWARDED_FOR", "").split(",")]
        forwarded = [part for part in forwarded if part]
        if len(forwarded) >= proxies:
            return forwarded[-proxies]
    return request.META.get("REMOTE_ADDR")


def lockout_message() -> str:
    minutes = int(settings.AXES_COOLOFF_TIME.total_seconds() // 60)
    return (
        f"Too many failed logins for this user name or from this address ({settings.AXES_FAILURE_LIMIT} "
        f"in a row): logins are refused for {minutes} minutes. An administrator can unlock it sooner."
    )


def lockout_response(
    request: HttpRequest, original_response: HttpResponse | None = None, credentials: dict | None = None
) -> HttpResponse:
    """429 with a clear message: JSON for the API, the login page's look for people."""
    message = lockout_message()
    if request.path.startswith("/api/"):
        return JsonResponse({"detail": message}, status=429)
    return render(request, "registration/locked_out.html", {"message": message}, status=429)
