"""Brute-force protection for the login form, the admin login and `/api/auth/token/`.

django-axes records failed logins; `LoginThrottleHandler` refuses further attempts for a cool-off
time once one of three counts reaches its limit:

- one user name from one address: LOGIN_FAILURE_LIMIT (10). A typo-prone assessor locks only
  themselves, on their own machine, never colleagues behind the same office NAT;
- one address, whatever the user names: LOGIN_ADDRESS_FAILURE_LIMIT (100), against guessing
  many accounts from one machine;
- one user name, whatever the addresses: LOGIN_USER_FAILURE_LIMIT (100), against guessing one
  account from many machines.

It works at the authentication backend, so every login path that calls
`authenticate(request, ...)` is covered by the same counts; the views that take a password over
HTTP (Django's LoginView and admin login, DRF's token view) all pass their request. An
administrator unlocks in the admin (Axes > Access attempts: delete the rows) or with
`manage.py axes_reset_username NAME` / `axes_reset_ip ADDRESS` / `axes_reset`.
"""

from __future__ import annotations

from typing import Any

from axes.backends import AxesStandaloneBackend
from axes.handlers.database import AxesDatabaseHandler
from django.conf import settings
from django.db.models import Sum
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


class LoginThrottleHandler(AxesDatabaseHandler):
    """Axes' database handler with a limit per count (see the module docstring).

    Axes compares one number, its "failures", with AXES_FAILURE_LIMIT; this handler returns the
    (user name, address) failures, or an address's or a user name's failures scaled to that limit
    when one of them has reached its own ceiling first. The lockout parameters (settings) give
    the three counts in that order.
    """

    def get_failures(self, request: HttpRequest, credentials: dict | None = None) -> int:
        pair, address, user = (
            attempts.aggregate(total=Sum("failures_since_start"))["total"] or 0
            for attempts in self.get_user_attempts(request, credentials)
        )
        limit = settings.AXES_FAILURE_LIMIT
        # floor(n * limit / ceiling) >= limit exactly when n >= ceiling.
        return max(
            pair,
            address * limit // settings.LOGIN_ADDRESS_FAILURE_LIMIT,
            user * limit // settings.LOGIN_USER_FAILURE_LIMIT,
        )


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
        f"Too many failed logins: {settings.AXES_FAILURE_LIMIT} for this user name from this address "
        f"(or {settings.LOGIN_ADDRESS_FAILURE_LIMIT} from this address, or "
        f"{settings.LOGIN_USER_FAILURE_LIMIT} for this user name from anywhere). Logins are refused "
        f"for {minutes} minutes; an administrator can unlock it sooner."
    )


def lockout_response(
    request: HttpRequest, original_response: HttpResponse | None = None, credentials: dict | None = None
) -> HttpResponse:
    """429 with a clear message: JSON for the API, the login page's look for people."""
    message = lockout_message()
    if request.path.startswith("/api/"):
        return JsonResponse({"detail": message}, status=429)
    return render(request, "registration/locked_out.html", {"message": message}, status=429)
