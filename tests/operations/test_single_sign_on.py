"""Sign-in at an OpenID Connect provider, against a real one (tests/identity_provider: django-oauth-
toolkit's, a process of its own): the flow through its login page, roles and campaign memberships
from its groups re-read at each sign-in, and the refusals (a replayed state, a tampered, expired
or foreign ID token, an account with no mapped group, a taken name, a provider that does not
answer). The browser's walk through the same pages is tests/e2e/test_single_sign_on.py."""

from __future__ import annotations

import base64
import hashlib
import json
import os
import re
import secrets
import subprocess
import sys
import threading
import urllib.request
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest
import requests
from django.contrib.auth.models import User
from django.test import Client

from labeling.models import Campaign, CampaignMember
from labeling.permissions import user_role
from labeling.services.campaigns import campaign_create
from operations.accounts import user_create
from operations.models import AuditEvent, ExternalIdentity
from tests.conftest import PASSWORD, REPO_ROOT
from tests.identity_provider import IdentityProvider
from tests.servers import free_port

pytestmark = pytest.mark.postgresql

CALLBACK = "http://testserver/accounts/provider/callback/"


def provider_settings(settings: Any, issuer: str, client_id: str, secret: str) -> None:
    settings.OIDC_ISSUER = issuer
    settings.OIDC_CLIENT_ID = client_id
    settings.OIDC_CLIENT_SECRET = secret
    settings.OIDC_PROVIDER_NAME = "Test Provider"


@pytest.fixture
def provider(
    identity_provider: IdentityProvider, settings: Any, request: pytest.FixtureRequest, db: None
) -> IdentityProvider:
    """The session's provider with a client of this test's own, which this server signs in with."""
    client_id = f"relevance-{request.node.name[:40]}"
    identity_provider.seed(
        clients=[
            {
                "name": client_id,
                "client_id": client_id,
                "secret": "client-secret",
                "redirect_uris": [CALLBACK],
                "post_logout_redirect_uris": ["http://testserver/accounts/login/"],
            }
        ]
    )
    provider_settings(settings, identity_provider.issuer, client_id, "client-secret")
    return identity_provider


def person(name: str, *groups: str) -> dict[str, Any]:
    return {
        "username": name,
        "password": f"{name}-provider-password",
        "email": f"{name}@example.org",
        "given_name": name.title(),
        "groups": list(groups),
    }


def at_provider(authorize_address: str, name: str) -> str:
    """The user's walk at the provider: its login page, then back; returns the callback address."""
    browser = requests.Session()
    browser.trust_env = False  # straight to the provider, past any proxy a test set for the server
    answer = browser.get(authorize_address, allow_redirects=False, timeout=30)
    login_address = requests.compat.urljoin(authorize_address, answer.headers["Location"])
    form = browser.get(login_address, timeout=30)
    assert form.status_code == 200, form.text[:300]
    answer = browser.post(
        login_address,
        data={
            "username": name,
            "password": f"{name}-provider-password",
            "next": parse_qs(urlsplit(login_address).query)["next"][0],
            "csrfmiddlewaretoken": browser.cookies["provider_csrf"],
        },
        allow_redirects=False,
        timeout=30,
    )
    assert answer.status_code == 302, answer.text[:300]
    answer = browser.get(
        requests.compat.urljoin(login_address, answer.headers["Location"]), allow_redirects=False, timeout=30
    )
    assert answer.status_code == 302, answer.text[:300]
    return str(answer.headers["Location"])


def sign_in(client: Client, name: str, next_path: str = "/") -> tuple[Any, str]:
    """Through the whole flow; the callback's answer and the callback address (for replays)."""
    start = client.get("/accounts/provider/sign-in/", {"next": next_path})
    assert start.status_code == 302, start.content[:300]
    callback = at_provider(start["Location"], name)
    assert callback.startswith(CALLBACK), callback
    return client.get(callback.removeprefix("http://testserver")), callback


def refusal_text(client: Client) -> str:
    page = client.get("/accounts/login/")
    return page.content.decode()


def test_a_group_makes_a_coordinator_and_taking_it_away_takes_the_role_at_the_next_sign_in(
    provider: IdentityProvider, campaign: Campaign
) -> None:
    provider.seed(
        users=[person("nora", "relevance-coordinators", f"relevance-campaign-{campaign.pk}-assessor")]
    )
    client = Client(REMOTE_ADDR="192.0.2.44")
    answer, _ = sign_in(client, "nora", next_path=f"/campaigns/{campaign.pk}/")
    assert answer.status_code == 302 and answer["Location"] == f"/campaigns/{campaign.pk}/"
    nora = User.objects.get(username="nora")
    assert user_role(nora) == "coordinator"
    assert (nora.email, nora.first_name, nora.has_usable_password()) == ("nora@example.org", "Nora", False)
    assert CampaignMember.objects.get(campaign=campaign, user=nora).role == "assessor"
    assert ExternalIdentity.objects.get(user=nora).issuer == provider.issuer
    assert client.get("/campaigns/new/").status_code == 200, "a coordinator's page opens"
    assert AuditEvent.objects.filter(kind="sign_in", user=nora, source="192.0.2.44").count() == 1

    # The provider's administrator takes nora out of both groups; her session ends.
    provider.seed(users=[person("nora")])
    client.post("/accounts/logout/")
    answer, _ = sign_in(client, "nora")
    assert answer.status_code == 302 and answer["Location"] == "/accounts/login/"
    assert "in none of the groups that give access here" in refusal_text(client)
    nora = User.objects.get(username="nora")
    assert user_role(nora) is None
    assert not CampaignMember.objects.filter(campaign=campaign, user=nora).exists()
    assert client.get("/campaigns/new/").status_code == 302, "no session"
    failed = AuditEvent.objects.get(kind="sign_in_failed", username="nora")
    assert "none of the groups" in failed.detail["reason"]
    removed = [
        event.detail for event in AuditEvent.objects.filter(kind="role_changed", user=nora).order_by("pk")
    ]
    assert {"removed": ["coordinator"]} in removed
    assert {"removed": ["campaign assessor"], "by": provider.issuer} in removed


def test_the_provider_decides_the_role_each_time_and_leaves_a_coordinators_own_grants(
    provider: IdentityProvider, campaign: Campaign, coordinator: Any
) -> None:
    other = campaign_create(
        creator=coordinator,
        name="given in the app",
        metric="DCG@5",
        grades=["Bad", "Good"],
        budget=10,
        budget_unit="judgments",
    )
    provider.seed(users=[person("omar", "relevance-admins", "relevance-assessors")])
    client = Client()
    sign_in(client, "omar")
    omar = User.objects.get(username="omar")
    assert user_role(omar) == "admin" and omar.is_staff and omar.is_superuser
    CampaignMember.objects.create(campaign=other, user=omar, role="coordinator")  # given in the app

    provider.seed(
        users=[person("omar", "relevance-assessors", f"relevance-campaign-{campaign.pk}-coordinator")]
    )
    client.post("/accounts/logout/")
    sign_in(client, "omar")
    omar = User.objects.get(username="omar")
    assert user_role(omar) == "assessor" and not omar.is_staff and not omar.is_superuser
    assert CampaignMember.objects.get(campaign=campaign, user=omar).role == "coordinator"
    assert CampaignMember.objects.get(campaign=other, user=omar).role == "coordinator", (
        "not the provider's to take"
    )
    assert User.objects.filter(username="omar").count() == 1, "the same account, found by its subject"


def test_a_replayed_callback_is_refused_in_the_same_browser_and_in_another(
    provider: IdentityProvider,
) -> None:
    provider.seed(users=[person("pia", "relevance-assessors")])
    client = Client()
    answer, callback = sign_in(client, "pia")
    assert answer.status_code == 302 and answer["Location"] == "/"
    for replaying in (client, Client()):
        again = replaying.get(callback.removeprefix("http://testserver"))
        assert again["Location"] == "/accounts/login/"
        assert "was not started in this browser or was completed already" in refusal_text(replaying)
    assert AuditEvent.objects.filter(kind="sign_in", username="pia").count() == 1


def test_an_expired_id_token_is_refused(identity_provider: IdentityProvider, settings: Any, db: None) -> None:
    # The provider's application of that name issues ID tokens that expired ten minutes ago.
    identity_provider.seed(
        clients=[
            {
                "name": "expired-id-tokens",
                "client_id": "expired-id-tokens",
                "secret": "s",
                "redirect_uris": [CALLBACK],
            }
        ],
        users=[person("quinn", "relevance-assessors")],
    )
    provider_settings(settings, identity_provider.issuer, "expired-id-tokens", "s")
    client = Client()
    answer, _ = sign_in(client, "quinn")
    assert answer["Location"] == "/accounts/login/"
    assert "the ID token has expired" in refusal_text(client)
    assert not User.objects.filter(username="quinn").exists()


class TokenTamperer:
    """A hostile network between this server and the provider: an HTTP proxy (this server's
    outbound calls take HTTP_PROXY) that passes everything on but changes the ID token of each
    token answer with `change`, set by the test."""

    def __init__(self) -> None:
        self.change: Any = None
        self.discovery_change: Any = None
        self.port = free_port()
        tamperer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def _forward(self, body: bytes | None) -> None:
                upstream = urllib.request.Request(
                    self.path,  # a proxy's request line carries the whole address
                    data=body,
                    method=self.command,
                    headers={
                        key: value
                        for key, value in self.headers.items()
                        if key.lower() not in ("host", "content-length", "proxy-connection")
                    },
                )
                direct = urllib.request.build_opener(urllib.request.ProxyHandler({}))
                try:
                    with direct.open(upstream, timeout=30) as answer:
                        status, payload, kind = (
                            answer.status,
                            answer.read(),
                            answer.headers.get("Content-Type", ""),
                        )
                except urllib.error.HTTPError as error:
                    status, payload, kind = error.code, error.read(), error.headers.get("Content-Type", "")
                if self.path.endswith("/openid-configuration") and tamperer.discovery_change is not None:
                    payload = json.dumps(tamperer.discovery_change(json.loads(payload))).encode()
                if urlsplit(self.path).path == "/o/token/" and status == 200:
                    token = json.loads(payload)
                    token["id_token"] = tamperer.change(token["id_token"])
                    payload = json.dumps(token).encode()
                self.send_response(status)
                self.send_header("Content-Type", kind)
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            def do_GET(self) -> None:
                self._forward(None)

            def do_POST(self) -> None:
                self._forward(self.rfile.read(int(self.headers.get("Content-Length", 0))))

        self.server = ThreadingHTTPServer(("127.0.0.1", self.port), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()


@pytest.fixture
def tamperer(provider: IdentityProvider, monkeypatch: pytest.MonkeyPatch) -> Iterator[TokenTamperer]:
    between = TokenTamperer()
    for name in ("HTTP_PROXY", "http_proxy"):
        monkeypatch.setenv(name, f"http://127.0.0.1:{between.port}")
    for name in ("NO_PROXY", "no_proxy"):
        monkeypatch.delenv(name, raising=False)
    yield between
    between.server.shutdown()
    between.server.server_close()


def _payload(id_token: str) -> dict[str, Any]:
    body = id_token.split(".")[1]
    return dict(json.loads(base64.urlsafe_b64decode(body + "=" * (-len(body) % 4))))


def _encoded(payload: dict[str, Any]) -> str:
    return base64.urlsafe_b64encode(json.dumps(payload).encode()).rstrip(b"=").decode()


def test_a_tampered_id_token_is_refused(provider: IdentityProvider, tamperer: TokenTamperer) -> None:
    provider.seed(users=[person("rosa", "relevance-assessors")])

    def promoted(id_token: str) -> str:
        header, _, signature = id_token.split(".")
        payload = _payload(id_token)
        payload["groups"] = ["relevance-admins"]
        return f"{header}.{_encoded(payload)}.{signature}"

    tamperer.change = promoted
    client = Client()
    answer, _ = sign_in(client, "rosa")
    assert answer["Location"] == "/accounts/login/"
    assert "signature does not verify" in refusal_text(client)
    assert not User.objects.filter(username="rosa").exists()
    # The same path with the token passed on untouched signs in: the refusal was the tampering's.
    tamperer.change = lambda id_token: id_token
    assert sign_in(Client(), "rosa")[0]["Location"] == "/"


def test_an_id_token_of_an_earlier_sign_in_is_refused(
    provider: IdentityProvider, tamperer: TokenTamperer
) -> None:
    """A genuine ID token for this client and user, recorded on the wire at one sign-in and
    replayed into the next: its nonce answers the earlier one."""
    provider.seed(users=[person("rhea", "relevance-assessors")])
    recorded: list[str] = []
    tamperer.change = lambda id_token: recorded.append(id_token) or id_token
    assert sign_in(Client(), "rhea")[0]["Location"] == "/"
    tamperer.change = lambda id_token: recorded[0]
    client = Client()
    answer, _ = sign_in(client, "rhea")
    assert answer["Location"] == "/accounts/login/"
    assert "the ID token answers another sign-in" in refusal_text(client)
    assert "nonce" in AuditEvent.objects.get(kind="sign_in_failed").detail["reason"]
    assert AuditEvent.objects.filter(kind="sign_in", username="rhea").count() == 1


def test_a_discovery_document_naming_another_issuer_is_refused(
    provider: IdentityProvider, tamperer: TokenTamperer
) -> None:
    provider.seed(users=[person("ravi", "relevance-assessors")])
    tamperer.change = lambda id_token: id_token
    tamperer.discovery_change = lambda document: {**document, "issuer": "https://elsewhere.example/o"}
    client = Client()
    answer, _ = sign_in(client, "ravi")
    assert answer["Location"] == "/accounts/login/"
    assert "discovery document names the issuer" in refusal_text(client)
    assert not User.objects.filter(username="ravi").exists()


def test_an_id_token_issued_to_another_application_is_refused(
    provider: IdentityProvider, tamperer: TokenTamperer, settings: Any
) -> None:
    """The provider's genuine, signed token for another client, for the same user and even the
    same nonce, put in place of ours: refused for its audience."""
    provider.seed(
        users=[person("sam", "relevance-assessors")],
        clients=[
            {
                "name": "another",
                "client_id": "another-application",
                "secret": "other",
                "redirect_uris": ["http://127.0.0.1/elsewhere/"],
            }
        ],
    )
    client = Client()
    start = client.get("/accounts/provider/sign-in/")
    ours = parse_qs(urlsplit(start["Location"]).query)
    foreign = _id_token_for_another_client(provider, "sam", nonce=ours["nonce"][0])
    assert _payload(foreign)["aud"] == "another-application"
    tamperer.change = lambda id_token: foreign
    callback = at_provider(start["Location"], "sam")
    answer = client.get(callback.removeprefix("http://testserver"))
    assert answer["Location"] == "/accounts/login/"
    assert "issued to another application" in refusal_text(client)
    assert not User.objects.filter(username="sam").exists()


def _id_token_for_another_client(provider: IdentityProvider, name: str, *, nonce: str) -> str:
    verifier = secrets.token_urlsafe(48)
    challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).rstrip(b"=").decode()
    query = requests.compat.urlencode(
        {
            "response_type": "code",
            "client_id": "another-application",
            "redirect_uri": "http://127.0.0.1/elsewhere/",
            "scope": "openid",
            "state": "theirs",
            "nonce": nonce,
            "code_challenge": challenge,
            "code_challenge_method": "S256",
        }
    )
    back = at_provider(f"{provider.issuer}/authorize/?{query}", name)
    code = parse_qs(urlsplit(back).query)["code"][0]
    direct = requests.Session()
    direct.trust_env = False
    token = direct.post(
        f"{provider.issuer}/token/",
        data={
            "grant_type": "authorization_code",
            "code": code,
            "redirect_uri": "http://127.0.0.1/elsewhere/",
            "code_verifier": verifier,
        },
        auth=("another-application", "other"),
        timeout=30,
    )
    assert token.status_code == 200, token.text
    return str(token.json()["id_token"])


def test_a_local_account_of_the_same_name_is_not_taken_over(provider: IdentityProvider) -> None:
    user_create(creator=None, username="tara", password=PASSWORD, role="assessor")
    provider.seed(users=[person("Tara", "relevance-admins")])  # the same name in other letter case
    client = Client()
    answer, _ = sign_in(client, "Tara")
    assert answer["Location"] == "/accounts/login/"
    assert "already exists on this server and belongs to someone else" in refusal_text(client)
    assert user_role(User.objects.get(username="tara")) == "assessor"


def test_after_a_refusal_the_next_sign_in_asks_the_provider_for_another_account(
    provider: IdentityProvider,
) -> None:
    """The provider's session still belongs to the refused account; without prompt=login the next
    sign-in would come straight back refused. Once one has started, the button is the plain one."""
    user_create(creator=None, username="tess", password=PASSWORD, role="assessor")
    provider.seed(users=[person("tess", "relevance-admins")])
    client = Client()
    assert "as another user" not in refusal_text(client)
    sign_in(client, "tess")  # refused: a local account of that name
    assert "Sign in with Test Provider as another user" in refusal_text(client)
    again = client.get("/accounts/provider/sign-in/")
    assert parse_qs(urlsplit(again["Location"]).query)["prompt"] == ["login"]
    assert "as another user" not in refusal_text(client)
    plain = client.get("/accounts/provider/sign-in/")
    assert "prompt" not in parse_qs(urlsplit(plain["Location"]).query)


def test_an_account_deactivated_here_stays_out_whatever_the_provider_says(provider: IdentityProvider) -> None:
    provider.seed(users=[person("wes", "relevance-coordinators")])
    sign_in(Client(), "wes")
    User.objects.filter(username="wes").update(is_active=False)
    client = Client()
    answer, _ = sign_in(client, "wes")
    assert answer["Location"] == "/accounts/login/"
    assert "deactivated on this server" in refusal_text(client)
    assert AuditEvent.objects.get(kind="sign_in_failed").username == "wes"


def test_sign_out_goes_on_to_the_providers_end_session_page(provider: IdentityProvider) -> None:
    provider.seed(users=[person("uma", "relevance-assessors")])
    client = Client()
    sign_in(client, "uma")
    out = client.post("/accounts/logout/")
    assert out.status_code == 302
    end_session = urlsplit(out["Location"])
    assert out["Location"].startswith(f"{provider.issuer}/logout/")
    query = parse_qs(end_session.query)
    assert query["post_logout_redirect_uri"] == ["http://testserver/accounts/login/"]
    assert _payload(query["id_token_hint"][0])["preferred_username"] == "uma"
    assert client.get("/").status_code == 302, "signed out here"
    at_provider_answer = requests.get(
        out["Location"], allow_redirects=False, timeout=30, proxies={"http": ""}
    )
    assert at_provider_answer.status_code == 302
    assert at_provider_answer.headers["Location"] == "http://testserver/accounts/login/"


def test_password_sign_in_can_be_turned_off(provider: IdentityProvider, settings: Any, assessor: Any) -> None:
    page = Client().get("/accounts/login/").content.decode()
    assert "Sign in with Test Provider" in page and 'name="password"' in page
    earlier = Client()
    assert earlier.post("/accounts/login/", {"username": "alice", "password": PASSWORD}).status_code == 302
    assert earlier.get("/").status_code == 200
    assert Client().post("/api/auth/token/", {"username": "alice", "password": PASSWORD}).status_code == 200
    settings.PASSWORD_SIGN_IN = False
    page = Client().get("/accounts/login/").content.decode()
    assert "Sign in with Test Provider" in page and 'name="password"' not in page
    client = Client()
    assert client.post("/accounts/login/", {"username": "alice", "password": PASSWORD}).status_code == 200
    assert client.get("/").status_code == 302, "no session from a password"
    assert client.post("/api/auth/token/", {"username": "alice", "password": PASSWORD}).status_code == 400
    assert earlier.get("/").status_code == 302, "the session a password made ends too"


def test_without_a_provider_the_login_page_has_no_button_and_its_pages_are_gone(
    settings: Any, db: None
) -> None:
    settings.OIDC_ISSUER = ""
    assert "Sign in with" not in Client().get("/accounts/login/").content.decode()
    assert Client().get("/accounts/provider/sign-in/").status_code == 404
    assert Client().get("/accounts/provider/callback/?code=x&state=y").status_code == 404


def test_after_a_wrong_password_the_focus_is_on_the_password_and_the_name_is_kept(
    settings: Any, assessor: Any
) -> None:
    settings.OIDC_ISSUER = ""
    fresh = Client().get("/accounts/login/").content.decode()
    assert re.search(r'id="id_username"[^>]*autofocus', fresh) and not re.search(
        r'id="id_password"[^>]*autofocus', fresh
    )
    answer = Client().post("/accounts/login/", {"username": assessor.get_username(), "password": "wrong"})
    page = answer.content.decode()
    assert answer.status_code == 200 and f'value="{assessor.get_username()}"' in page
    assert re.search(r'id="id_password"[^>]*autofocus', page), "type the password again"
    assert not re.search(r'id="id_username"[^>]*autofocus', page)


def test_a_provider_that_does_not_answer_is_a_clear_refusal(settings: Any, db: None) -> None:
    provider_settings(settings, f"http://127.0.0.1:{free_port()}/o", "app", "secret")
    client = Client()
    answer = client.get("/accounts/provider/sign-in/")
    assert answer["Location"] == "/accounts/login/"
    assert "Test Provider did not answer (ConnectionError)" in refusal_text(client)
    assert AuditEvent.objects.filter(kind="sign_in_failed").count() == 1


@pytest.mark.parametrize(
    ("environment", "refusal"),
    [
        (
            {"OIDC_ISSUER": "https://sso.example.org/realms/x"},
            "set OIDC_CLIENT_ID and OIDC_CLIENT_SECRET too",
        ),
        ({"PASSWORD_SIGN_IN": "off"}, "nobody could sign in"),
        ({"OIDC_CAMPAIGN_GROUP_PATTERN": "^campaign-([0-9]+)$"}, "needs the named groups"),
        ({"OIDC_CAMPAIGN_GROUP_PATTERN": "^(unclosed"}, "is no regular expression"),
        ({"PUBLIC_URL": "labels.example.org"}, "is not an http(s) address"),
        (
            {
                "PRODUCTION": "1",
                "SECRET_KEY": "k" * 20 + "x7Q!pL2#vR9@mZ4$wT8&nB1*cY6^hJ3(",
                "ALLOWED_HOSTS": "labels.example.org",
                "OIDC_ISSUER": "http://sso.example.org/realms/x",
                "OIDC_CLIENT_ID": "relevance",
                "OIDC_CLIENT_SECRET": "s",
            },
            "must be an https:// address in production",
        ),
        (
            {
                "OIDC_ISSUER": "https://sso.example.org/realms/x",
                "OIDC_CLIENT_ID": "relevance",
                "OIDC_CLIENT_SECRET": "s",
                "OIDC_TIMEOUT_SECONDS": "600",
            },
            "OIDC_TIMEOUT_SECONDS must be above 0 and at most 60",
        ),
    ],
)
def test_a_sign_in_setting_that_cannot_work_stops_the_start(
    environment: dict[str, str], refusal: str
) -> None:
    started = _settings_in_a_process(environment)
    assert started.returncode != 0 and refusal in started.stderr, started.stderr[-500:]


def test_a_configured_provider_may_be_where_sign_outs_form_leads() -> None:
    started = _settings_in_a_process(
        {
            "OIDC_ISSUER": "https://sso.example.org/realms/x",
            "OIDC_CLIENT_ID": "relevance",
            "OIDC_CLIENT_SECRET": "s",
        }
    )
    assert started.returncode == 0, started.stderr[-500:]
    assert json.loads(started.stdout) == ["'self'", "https://sso.example.org"]


def _settings_in_a_process(
    environment: dict[str, str], expression: str = "s.CONTENT_SECURITY_POLICY['DIRECTIVES']['form-action']"
) -> subprocess.CompletedProcess[str]:
    code = f"import json, config.settings as s; print(json.dumps({expression}))"
    clean = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith(("OIDC_", "PUBLIC_URL", "PASSWORD_SIGN_IN", "PRODUCTION"))
    }
    return subprocess.run(
        [sys.executable, "-c", code],
        env={**clean, **environment},
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_an_empty_role_group_setting_maps_no_group_to_that_role() -> None:
    expression = "[s.OIDC_ADMIN_GROUPS, s.OIDC_COORDINATOR_GROUPS]"
    started = _settings_in_a_process({"OIDC_ADMIN_GROUPS": ""}, expression)
    assert started.returncode == 0, started.stderr[-500:]
    assert json.loads(started.stdout) == [[], ["relevance-coordinators"]]


def test_group_names_that_name_no_possible_campaign_are_left_out(settings: Any) -> None:
    from operations.single_sign_on import memberships_from_groups

    settings.OIDC_CAMPAIGN_GROUP_PATTERN = r"^c-(?P<campaign>[^-]+)-(?P<role>\w+)$"
    groups = [
        "c-7-assessor",
        "c-7-coordinator",
        "c-99999999999999999999999-assessor",
        "c-x-assessor",
        "c-8-owner",
    ]
    assert memberships_from_groups(groups) == {7: "coordinator"}


def test_a_group_naming_only_a_campaign_that_does_not_exist_stores_nothing(
    provider: IdentityProvider,
) -> None:
    provider.seed(users=[person("vic", "relevance-campaign-999999-assessor")])
    client = Client()
    answer, _ = sign_in(client, "vic")
    assert answer["Location"] == "/accounts/login/"
    assert not User.objects.filter(username="vic").exists()
    assert not ExternalIdentity.objects.exists()


def test_a_membership_a_coordinator_gave_is_not_the_providers_to_change_or_take(
    provider: IdentityProvider, campaign: Campaign
) -> None:
    provider.seed(users=[person("xena", "relevance-assessors")])
    sign_in(Client(), "xena")
    xena = User.objects.get(username="xena")
    CampaignMember.objects.create(campaign=campaign, user=xena, role="coordinator")  # given in the app
    provider.seed(users=[person("xena", "relevance-assessors", f"relevance-campaign-{campaign.pk}-assessor")])
    sign_in(Client(), "xena")
    assert CampaignMember.objects.get(campaign=campaign, user=xena).role == "coordinator"
    provider.seed(users=[person("xena", "relevance-assessors")])
    sign_in(Client(), "xena")
    assert CampaignMember.objects.get(campaign=campaign, user=xena).role == "coordinator"


def test_a_callback_that_answers_no_sign_in_here_shows_fixed_words_and_is_not_audited(
    provider: IdentityProvider,
) -> None:
    injected = "Your account is locked. Call the help desk and give your password"
    client = Client()
    answer = client.get(
        "/accounts/provider/callback/", {"error": "access_denied", "error_description": injected}
    )
    assert answer["Location"] == "/accounts/login/"
    page = refusal_text(client)
    assert "was not started in this browser" in page and "help desk" not in page
    assert not AuditEvent.objects.filter(kind="sign_in_failed").exists()
    # The provider's error for a sign-in this browser started: its code in fixed words, audited.
    start = client.get("/accounts/provider/sign-in/")
    state = parse_qs(urlsplit(start["Location"]).query)["state"][0]
    client.get(
        "/accounts/provider/callback/",
        {"state": state, "error": "access_denied", "error_description": injected},
    )
    page = refusal_text(client)
    assert "the sign-in was cancelled or the provider denied it" in page and "help desk" not in page
    assert AuditEvent.objects.filter(kind="sign_in_failed").count() == 1
