"""Scoped tokens: made by a campaign's manager, shown once and stored hashed, limited to their
scopes' endpoints of their campaign on every route of the URL table, refused with 401 once expired,
revoked or unknown, bounded by the operator's ceilings, and logged."""

from __future__ import annotations

import hashlib
import re
import time
from collections.abc import Callable
from datetime import timedelta

import pytest
from django.contrib.auth.models import AbstractBaseUser, Group
from django.test import Client
from django.utils import timezone
from rest_framework.test import APIClient
from rest_framework.views import APIView

from labeling.models import Campaign, CampaignMember
from labeling.permissions import ROLE_COORDINATOR
from labeling.services.campaigns import campaign_create
from operations.models import AuditEvent, ScopedToken
from operations.scoped_tokens import SCOPES
from tests.url_table import url_table

# Also on PostgreSQL (`make test` runs the marked modules again there): a token is made under the
# campaign row's lock.
pytestmark = pytest.mark.postgresql

Api = Callable[[AbstractBaseUser | None], APIClient]
METHODS = ("get", "post", "put", "patch", "delete")


def make_token(api: Api, user: AbstractBaseUser, campaign: Campaign, **body: object) -> dict:
    answer = api(user).post(
        f"/api/campaigns/{campaign.pk}/tokens/",
        {"name": "release pipeline", "scopes": ["arrivals"], "days": 30, **body},
        format="json",
    )
    assert answer.status_code == 201, answer.content
    assert answer["Cache-Control"] == "no-store"
    return answer.json()


def bearer(secret: str) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {secret}")
    return client


def test_a_manager_makes_a_token_shown_once_and_stored_as_a_hash(
    api: Api, coordinator: AbstractBaseUser, campaign: Campaign
) -> None:
    made = make_token(api, coordinator, campaign, scopes=["estimates", "arrivals"])
    secret = made["secret"]
    assert secret.startswith("rat_") and len(secret) > 40 and made["scopes"] == ["arrivals", "estimates"]
    stored = ScopedToken.objects.get(pk=made["id"])
    assert stored.secret_hash == hashlib.sha256(secret.encode()).hexdigest()
    assert secret not in str(stored.__dict__), "the secret itself is stored nowhere"
    listed = api(coordinator).get(f"/api/campaigns/{campaign.pk}/tokens/").json()
    assert [row["name"] for row in listed] == ["release pipeline"] and "secret" not in listed[0]
    assert listed[0]["state"] == "live" and secret.startswith(listed[0]["prefix"])
    event = AuditEvent.objects.get(kind="token_created")
    assert event.username == "carl" and event.campaign_id == campaign.pk and event.source == "127.0.0.1"


def test_an_assessor_of_the_campaign_may_not_make_one(
    api: Api, assessor: AbstractBaseUser, campaign: Campaign
) -> None:
    answer = api(assessor).post(
        f"/api/campaigns/{campaign.pk}/tokens/",
        {"name": "x", "scopes": ["arrivals"], "days": 1},
        format="json",
    )
    assert answer.status_code == 403 and not ScopedToken.objects.exists()


def _route_paths(campaign_id: int) -> list[tuple[str, str | None, bool]]:
    """(path, URL name, whether a REST endpoint) of every route of the URL conf, converters and
    named groups filled: the campaign's id for `campaign_id`, 1 for other ids, the first choice
    of an alternation."""
    found: list[tuple[str, str | None, bool]] = []

    def fill(route: str) -> str:
        route = route.replace("^", "").replace("$", "").replace("\\Z", "")
        route = re.sub(r"<(?:\w+:)?campaign_id>", str(campaign_id), route)
        route = re.sub(r"<(?:\w+:)?\w+>", "1", route)
        route = re.sub(r"\(\?P<\w+>([^)]*)\)", lambda group: group.group(1).split("|")[0].strip("()"), route)
        return route

    for route, pattern in url_table():
        view_class = getattr(pattern.callback, "cls", None)
        endpoint = isinstance(view_class, type) and issubclass(view_class, APIView)
        found.append(("/" + fill(route), pattern.name, endpoint))
    return sorted(set(found), key=lambda item: (item[0], item[1] or ""))


def test_a_token_reaches_its_scopes_endpoints_of_its_campaign_and_nothing_else_on_the_url_table(
    api: Api, coordinator: AbstractBaseUser, campaign: Campaign, settings: object
) -> None:
    settings.SCOPED_TOKEN_REQUESTS_PER_MINUTE = 100_000  # type: ignore[attr-defined]  # the table, not the rate
    other = campaign_create(creator=coordinator, name="other", metric="DCG@5", grades=["0", "1"], budget=5)
    secret = make_token(api, coordinator, campaign, scopes=["arrivals", "estimates"])["secret"]
    allowed = {
        (name, method.lower())
        for scope in SCOPES.values()
        for name, methods in scope.items()
        for method in methods
    }
    routes = _route_paths(campaign.pk)
    assert len(routes) > 100 and any(name == "api-arrivals" for _, name, _ in routes)
    token_client, anonymous_client = bearer(secret), APIClient()
    checked_api, reached = 0, set()
    for path, name, endpoint in routes:
        # A page answers every method alike (the login redirect comes first): GET and POST do.
        for method in METHODS if endpoint else ("get", "post"):
            with_token = getattr(token_client, method)(path, {}, format="json")
            if endpoint and (name, method) not in allowed and with_token.status_code == 403:
                checked_api += 1  # refused, as every endpoint outside the scopes must be
                continue
            anonymous = getattr(anonymous_client, method)(path, {}, format="json")
            if not endpoint or anonymous.status_code == 302:
                # A page, or a DRF view behind the login page (/api/docs/): the token counts for
                # nothing there, the answer is an anonymous visitor's.
                assert with_token.status_code == anonymous.status_code, (method, path)
                continue
            assert (name, method) in allowed, (method, path, with_token.status_code)
            checked_api += 1
            assert with_token.status_code not in (401, 403), (method, path, with_token.content)
            reached.add((name, method))
            elsewhere = path.replace(f"/{campaign.pk}/", f"/{other.pk}/")
            assert getattr(token_client, method)(elsewhere, {}, format="json").status_code == 403, elsewhere
    assert reached == allowed, "every scope's endpoint was tried"
    assert checked_api > 200
    probes = AuditEvent.objects.filter(kind="token_refused", detail__why="outside its scopes")
    assert probes.count() >= checked_api - 2 * len(allowed), "each refusal of a known token is logged"


def test_a_refusal_names_the_scope_the_request_needs(
    api: Api, coordinator: AbstractBaseUser, campaign: Campaign
) -> None:
    secret = make_token(api, coordinator, campaign, scopes=["arrivals"])["secret"]
    needs = bearer(secret).get(f"/api/campaigns/{campaign.pk}/estimates/")
    assert needs.status_code == 403
    assert needs.json()["detail"] == "This needs the estimates scope; this token has arrivals."
    nowhere = bearer(secret).get(f"/api/campaigns/{campaign.pk}/")
    assert nowhere.status_code == 403 and "No scoped token reaches this endpoint" in nowhere.json()["detail"]


def test_an_expired_a_revoked_and_an_unknown_token_get_401_and_are_logged(
    api: Api, coordinator: AbstractBaseUser, campaign: Campaign
) -> None:
    arrivals = f"/api/campaigns/{campaign.pk}/arrivals/"
    expiring, revoked = (make_token(api, coordinator, campaign) for _ in range(2))
    assert bearer(expiring["secret"]).get(arrivals).status_code == 200
    ScopedToken.objects.filter(pk=expiring["id"]).update(expires_at=timezone.now() - timedelta(seconds=1))
    gone = api(coordinator).delete(f"/api/campaigns/{campaign.pk}/tokens/{revoked['id']}/")
    assert gone.status_code == 200 and gone.json()["state"] == "revoked"
    for secret, why in (
        (expiring["secret"], "expired"),
        (revoked["secret"], "revoked"),
        ("rat_" + "x" * 43, "unknown"),
    ):
        answer = bearer(secret).get(arrivals)
        assert answer.status_code == 401 and answer["WWW-Authenticate"].startswith("Token"), (
            why,
            answer.status_code,
        )
        assert why in answer.json()["detail"].lower()
    refused = AuditEvent.objects.filter(kind="token_refused").order_by("pk")
    assert [event.detail["why"] for event in refused] == ["expired", "revoked", "unknown"]
    assert AuditEvent.objects.filter(kind="token_revoked", username="carl").count() == 1
    states = {
        row["id"]: row["state"]
        for row in api(coordinator).get(f"/api/campaigns/{campaign.pk}/tokens/").json()
    }
    assert states == {expiring["id"]: "expired", revoked["id"]: "revoked"}


def test_a_maker_who_loses_the_role_takes_the_tokens_reach_with_them(
    api: Api, coordinator: AbstractBaseUser, campaign: Campaign
) -> None:
    secret = make_token(api, coordinator, campaign)["secret"]
    arrivals = f"/api/campaigns/{campaign.pk}/arrivals/"
    assert bearer(secret).get(arrivals).status_code == 200
    CampaignMember.objects.filter(campaign=campaign, user=coordinator).delete()
    coordinator.groups.remove(Group.objects.get(name=ROLE_COORDINATOR))
    assert bearer(secret).get(arrivals).status_code == 404, "the campaign is no longer theirs to see"
    coordinator.is_active = False
    coordinator.save()
    assert bearer(secret).get(arrivals).status_code == 401


def test_the_operators_ceilings_bound_count_expiry_and_rate(
    api: Api, coordinator: AbstractBaseUser, campaign: Campaign, settings: object
) -> None:
    settings.SCOPED_TOKENS_PER_CAMPAIGN = 2  # type: ignore[attr-defined]
    settings.SCOPED_TOKEN_MAX_DAYS = 90  # type: ignore[attr-defined]
    settings.SCOPED_TOKEN_REQUESTS_PER_MINUTE = 3  # type: ignore[attr-defined]
    client = api(coordinator)
    url = f"/api/campaigns/{campaign.pk}/tokens/"
    too_long = client.post(url, {"name": "n", "scopes": ["arrivals"], "days": 91}, format="json")
    assert too_long.status_code == 400 and "SCOPED_TOKEN_MAX_DAYS" in too_long.content.decode()
    bad_scope = client.post(url, {"name": "n", "scopes": ["exports"], "days": 1}, format="json")
    assert bad_scope.status_code == 400 and "exports" in bad_scope.content.decode()
    first = make_token(api, coordinator, campaign)
    second = make_token(api, coordinator, campaign)
    third = client.post(url, {"name": "n", "scopes": ["arrivals"], "days": 1}, format="json")
    assert third.status_code == 400 and "SCOPED_TOKENS_PER_CAMPAIGN" in third.content.decode()
    client.delete(f"{url}{first['id']}/")
    make_token(api, coordinator, campaign)  # a revoked token frees its place

    arrivals = f"/api/campaigns/{campaign.pk}/arrivals/"
    for _ in range(2):  # once more if the clock's minute turned in the middle
        minute = int(time.time() // 60)
        ScopedToken.objects.filter(pk=second["id"]).update(window_minute=0, window_requests=0)
        answers = [bearer(second["secret"]).get(arrivals) for _ in range(4)]
        if int(time.time() // 60) == minute:
            break
    assert [answer.status_code for answer in answers] == [200, 200, 200, 429]
    assert "SCOPED_TOKEN_REQUESTS_PER_MINUTE" in answers[3].json()["detail"]
    assert int(answers[3]["Retry-After"]) <= 60
    used = AuditEvent.objects.filter(kind="token_used", detail__token=second["id"])
    assert used.count() == 1, "one line a minute, not one per request"


def test_the_campaign_page_makes_shows_once_and_revokes_a_token(
    coordinator: AbstractBaseUser, assessor: AbstractBaseUser, campaign: Campaign
) -> None:
    page = Client()
    page.force_login(coordinator)
    detail = f"/campaigns/{campaign.pk}/"
    assert "Scoped tokens" in page.get(detail).content.decode()
    form = {"name": "nightly", "scopes": ["arrivals"], "days": "30"}
    made = page.post(f"/campaigns/{campaign.pk}/tokens/", form, follow=True)
    assert made.redirect_chain[-1][0] == f"/campaigns/{campaign.pk}/tokens/made/"
    assert made["Cache-Control"] == "no-store"
    secret = re.search(r'value="(rat_[^"]+)"', made.content.decode()).group(1)  # type: ignore[union-attr]
    token = ScopedToken.objects.get()
    assert token.secret_hash == hashlib.sha256(secret.encode()).hexdigest() and token.name == "nightly"
    again = page.get(f"/campaigns/{campaign.pk}/tokens/made/").content.decode()
    assert secret not in again and "shown already" in again, "a reload shows it no more"
    assert ScopedToken.objects.count() == 1, "and makes no second token"
    listing = page.get(detail).content.decode()
    assert "nightly" in listing and secret not in listing and token.prefix in listing

    for days, why in (("0", "SCOPED_TOKEN_MAX_DAYS"), ("1.5", "whole number of days")):
        refused = page.post(f"/campaigns/{campaign.pk}/tokens/", {**form, "name": "kept", "days": days})
        assert refused.status_code == 302 and ScopedToken.objects.count() == 1
        panel = page.get(detail).content.decode()
        tokens_panel = panel[panel.index('id="tokens"') :]
        assert why in tokens_panel, "the refusal says why, in the panel"
        assert 'value="kept"' in tokens_panel, "and keeps what was typed"

    assert page.post(f"/campaigns/{campaign.pk}/tokens/{token.pk}/revoke/").status_code == 302
    token.refresh_from_db()
    assert token.revoked_at is not None
    assert bearer(secret).get(f"/api/campaigns/{campaign.pk}/arrivals/").status_code == 401

    judge = Client()
    judge.force_login(assessor)
    assert "Scoped tokens" not in judge.get(detail).content.decode()
    denied = judge.post(f"/campaigns/{campaign.pk}/tokens/", form)
    assert denied.status_code == 403 and ScopedToken.objects.count() == 1
