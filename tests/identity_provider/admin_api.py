"""The provider's administration API, as Keycloak's admin REST API lets an administrator set up
users, groups and clients on a running server: `POST /admin/seed/` with the JSON of
`IdentityProvider.seed` and the home's seed token as a bearer token.

Over HTTP to the running provider, not a process of its own per call: each such process set up
Django again (about a second of CPU), twice for most sign-in tests."""

from __future__ import annotations

import hmac
import json
from typing import Any

from django.conf import settings
from django.contrib.auth.models import Group, User
from django.db import transaction
from django.http import HttpRequest, HttpResponse
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_POST
from oauth2_provider.models import Application


@transaction.atomic
def seed(state: dict[str, Any]) -> None:
    """Users (their groups set exactly) and clients, replacing those of the same names."""
    for entry in state.get("users", []):
        user, _ = User.objects.get_or_create(username=entry["username"])
        user.email = entry.get("email", "")
        user.first_name = entry.get("given_name", "")
        user.last_name = entry.get("family_name", "")
        user.set_password(entry["password"])
        user.save()
        user.groups.set([Group.objects.get_or_create(name=name)[0] for name in entry.get("groups", [])])
    for entry in state.get("clients", []):
        Application.objects.filter(client_id=entry["client_id"]).delete()
        Application.objects.create(
            name=entry["name"],
            client_id=entry["client_id"],
            client_secret=entry["secret"],
            client_type=Application.CLIENT_CONFIDENTIAL,
            authorization_grant_type=Application.GRANT_AUTHORIZATION_CODE,
            algorithm=Application.RS256_ALGORITHM,
            redirect_uris=" ".join(entry["redirect_uris"]),
            post_logout_redirect_uris=" ".join(entry.get("post_logout_redirect_uris", [])),
            skip_authorization=True,
        )


@csrf_exempt
@require_POST
def seed_view(request: HttpRequest) -> HttpResponse:
    expected = f"Bearer {settings.SEED_TOKEN}"
    if not settings.SEED_TOKEN or not hmac.compare_digest(request.headers.get("Authorization", ""), expected):
        return HttpResponse(status=401)
    seed(json.loads(request.body))
    return HttpResponse(status=204)
