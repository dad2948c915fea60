"""The sign-in pages: the login page (with the organization's button when a provider is set, and
without the password form when PASSWORD_SIGN_IN is off), the start of a provider's sign-in, its
callback, and sign-out, which goes on to the provider's end-session page (operations.single_sign_on
does the work)."""

from __future__ import annotations

import logging
from typing import Any

from django.conf import settings
from django.contrib import messages
from django.contrib.auth import login
from django.contrib.auth.decorators import login_not_required
from django.contrib.auth.views import LoginView, LogoutView
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import redirect
from django.urls import reverse
from django.utils.decorators import method_decorator
from django.utils.http import url_has_allowed_host_and_scheme
from django.views.decorators.cache import never_cache

from operations.single_sign_on import (
    IDENTITY_PROVIDER_BACKEND,
    SESSION_ID_TOKEN,
    SignInRefused,
    end_session_address,
    provider_enabled,
    sign_in_complete,
    sign_in_refused,
    sign_in_start,
)

logger = logging.getLogger(__name__)

# Set when the provider's sign-in was refused, cleared by the next start of one.
SESSION_PROVIDER_REFUSED = "provider_sign_in_refused"


class SignInPage(LoginView):
    """Django's login page, which also offers the provider's sign-in."""

    def get_context_data(self, **kwargs: Any) -> dict[str, Any]:
        context = super().get_context_data(**kwargs)
        context["provider_name"] = settings.OIDC_PROVIDER_NAME if provider_enabled() else None
        context["password_sign_in"] = settings.PASSWORD_SIGN_IN
        # After a refusal the provider's own session is still the refused account's: signing in
        # again would come straight back refused, so the button asks the provider for another.
        context["provider_refused"] = bool(self.request.session.get(SESSION_PROVIDER_REFUSED))
        return context


def _safe_next(request: HttpRequest, candidate: str) -> str:
    allowed = url_has_allowed_host_and_scheme(
        candidate, allowed_hosts={request.get_host()}, require_https=request.is_secure()
    )
    return candidate if candidate and allowed else settings.LOGIN_REDIRECT_URL


def _refused(request: HttpRequest, refusal: SignInRefused) -> HttpResponse:
    if refusal.audited:
        sign_in_refused(request, refusal)
    request.session[SESSION_PROVIDER_REFUSED] = True
    messages.error(request, f"Signing in with {settings.OIDC_PROVIDER_NAME} did not work: {refusal}.")
    return redirect("login")


def _failed(request: HttpRequest) -> HttpResponse:
    """Anything else that went wrong (a provider's answer this code did not foresee): logged with
    its traceback, refused like the rest, never a 500 page."""
    logger.exception("a sign-in at the identity provider failed")
    return _refused(request, SignInRefused("the server could not complete it; its log has the details"))


@login_not_required
@never_cache
def provider_sign_in_page(request: HttpRequest) -> HttpResponse:
    """GET: on to the provider's sign-in page (a link, so the login page's form-action policy
    stays 'self')."""
    if not provider_enabled():
        raise Http404("no identity provider is configured")
    next_url = _safe_next(request, request.GET.get("next", ""))
    another_user = bool(request.session.pop(SESSION_PROVIDER_REFUSED, False))
    try:
        address = sign_in_start(
            request, callback_path=reverse("provider-callback"), next_url=next_url, another_user=another_user
        )
    except SignInRefused as refusal:
        return _refused(request, refusal)
    except Exception:  # noqa: BLE001 - every failure is refused, logged with its traceback
        return _failed(request)
    return HttpResponseRedirect(address)


@login_not_required
@never_cache
def provider_callback_page(request: HttpRequest) -> HttpResponse:
    """The provider sends the browser back here with a code (or an error)."""
    if not provider_enabled():
        raise Http404("no identity provider is configured")
    try:
        signed_in = sign_in_complete(request)
    except SignInRefused as refusal:
        return _refused(request, refusal)
    except Exception:  # noqa: BLE001 - every failure is refused, logged with its traceback
        return _failed(request)
    login(request, signed_in.user, backend=IDENTITY_PROVIDER_BACKEND)
    request.session[SESSION_ID_TOKEN] = signed_in.id_token
    return HttpResponseRedirect(_safe_next(request, signed_in.next_url))


@method_decorator(never_cache, name="dispatch")
class SignOutPage(LogoutView):
    """Django's sign-out, then the provider's end-session page for a provider's sign-in."""

    def post(self, request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        id_token = request.session.get(SESSION_ID_TOKEN)
        response = super().post(request, *args, **kwargs)
        if id_token and provider_enabled():
            address = end_session_address(request, str(id_token), after_path=reverse("login"))
            if address:
                return HttpResponseRedirect(address)
        return response
