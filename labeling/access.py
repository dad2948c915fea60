"""Who may open one campaign's page or API: the checks every judging mode shares.

Both answer 404 to users who may not see the campaign (outsiders never learn it exists) and 403
to members whose role lacks `permission`. They live here, not in the API or view modules, so a
mode package imports them without importing another package's views.
"""

from __future__ import annotations

from django.contrib.auth.models import User
from django.core.exceptions import PermissionDenied as PagePermissionDenied
from django.http import Http404, HttpRequest
from rest_framework.exceptions import NotFound, PermissionDenied
from rest_framework.request import Request

from labeling.models import Campaign
from labeling.selectors import campaign_get_for_user


def request_user(request: HttpRequest | Request) -> User:
    """The signed-in user of a request to a page or endpoint that requires a login (the login
    middleware, DRF's IsAuthenticated): a refusal, not a crash, should one arrive without."""
    user = request.user
    if not isinstance(user, User):
        raise PagePermissionDenied("Log in first.")
    return user


def campaign_for(request: Request, campaign_id: int, permission: str | None) -> Campaign:
    """API: the campaign if the user may see it (else 404) and holds `permission` (else 403)."""
    campaign = campaign_get_for_user(request.user, campaign_id)
    if campaign is None:
        raise NotFound("No such campaign.")
    if permission is not None and not request.user.has_perm(permission, campaign):
        raise PermissionDenied("Your role in this campaign does not allow this.")
    return campaign


def campaign_for_page(request: HttpRequest, campaign_id: int, permission: str) -> Campaign:
    """HTML pages: the campaign if the user may see it (else 404) and holds `permission` (else 403)."""
    campaign = campaign_get_for_user(request.user, campaign_id)
    if campaign is None:
        raise Http404("No such campaign.")
    if not request.user.has_perm(permission, campaign):
        raise PagePermissionDenied("Your role in this campaign does not allow this page.")
    return campaign
