"""Brute-force protection (django-axes through operations.login_throttle): the login form and
the token endpoint refuse logins after the configured failures of one user name from one
address, with higher ceilings per address and per user name, and a clear message; an
administrator unlocks."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from django.contrib.auth.models import AbstractBaseUser
from django.core.management import call_command
from django.http import HttpRequest, HttpResponse
from django.test import Client
from rest_framework.test import APIClient

from operations.proxies import forwarded_headers_from_trusted_proxies
from tests.conftest import PASSWORD


@pytest.fixture(autouse=True)
def small_limit(settings: object) -> None:
    settings.AXES_FAILURE_LIMIT = 3  # type: ignore[attr-defined]
    settings.LOGIN_ADDRESS_FAILURE_LIMIT = 6  # type: ignore[attr-defined]
    settings.LOGIN_USER_FAILURE_LIMIT = 6  # type: ignore[attr-defined]


def _form_login(username: str, password: str, address: str = "10.0.0.1") -> int:
    response = Client(REMOTE_ADDR=address).post(
        "/accounts/login/", {"username": username, "password": password}
    )
    return response.status_code


def _token(username: str, password: str, address: str = "10.0.0.1") -> object:
    return APIClient(REMOTE_ADDR=address).post(
        "/api/auth/token/", {"username": username, "password": password}, format="json"
    )


def test_a_typo_prone_user_locks_only_themselves_on_their_own_address(
    assessor: AbstractBaseUser, second_assessor: AbstractBaseUser
) -> None:
    assert _form_login("alice", PASSWORD) == 302  # a correct login works
    # The failure that reaches the limit is already refused.
    assert [_form_login("alice", "wrong") for _ in range(3)] == [200, 200, 429]
    locked = Client(REMOTE_ADDR="10.0.0.1").post(
        "/accounts/login/", {"username": "alice", "password": PASSWORD}
    )
    assert locked.status_code == 429
    assert b"Too many failed logins" in locked.content and b"15 minutes" in locked.content
    # A colleague behind the same office address, and alice from elsewhere, log in.
    assert _form_login("bob", PASSWORD) == 302
    assert _form_login("alice", PASSWORD, "10.0.0.2") == 302


def test_it_locks_an_address_out_at_its_higher_ceiling_whatever_the_user_names(
    assessor: AbstractBaseUser, second_assessor: AbstractBaseUser
) -> None:
    names = ["u1", "u2", "u3", "u4", "u5", "u6"]
    assert [_form_login(name, "wrong", "10.0.0.5") for name in names] == [200] * 5 + [429]
    assert _form_login("bob", PASSWORD, "10.0.0.5") == 429
    assert _form_login("bob", PASSWORD, "10.0.0.6") == 302  # another address is not affected


def test_it_locks_a_user_name_out_at_its_higher_ceiling_whatever_the_addresses(
    assessor: AbstractBaseUser,
) -> None:
    assert [_form_login("alice", "wrong", f"10.0.1.{n}") for n in range(6)] == [200] * 5 + [429]
    assert _form_login("alice", PASSWORD, "10.0.2.1") == 429


def test_it_locks_the_token_endpoint_with_a_json_message(assessor: AbstractBaseUser) -> None:
    assert _token("alice", PASSWORD).status_code == 200  # type: ignore[attr-defined]
    assert [_token("alice", "wrong").status_code for _ in range(3)] == [400, 400, 429]  # type: ignore[attr-defined]
    locked = _token("alice", PASSWORD)
    assert locked.status_code == 429  # type: ignore[attr-defined]
    assert "Too many failed logins" in locked.json()["detail"]  # type: ignore[attr-defined]
    # The form and the token endpoint share one count.
    assert _form_login("alice", PASSWORD) == 429


def test_an_administrator_unlocks_with_axes_reset(assessor: AbstractBaseUser) -> None:
    for _ in range(3):
        _form_login("alice", "wrong")
    assert _form_login("alice", PASSWORD) == 429
    call_command("axes_reset_username", "alice")
    assert _form_login("alice", PASSWORD) == 302


def test_the_admin_lists_access_attempts_to_unlock(
    admin: AbstractBaseUser, api: Callable[..., APIClient]
) -> None:
    from django.contrib.auth import get_user_model

    _form_login("nobody", "wrong")
    superuser = get_user_model().objects.create_superuser("root", password=PASSWORD)
    client = Client()
    client.force_login(superuser)
    page = client.get("/admin/axes/accessattempt/")
    assert page.status_code == 200 and b"nobody" in page.content


def test_the_test_client_and_force_login_still_log_in(assessor: AbstractBaseUser) -> None:
    client = Client()
    assert client.login(username="alice", password=PASSWORD)
    assert client.get("/").status_code == 200


def test_it_counts_the_address_the_trusted_proxy_saw_not_a_forged_one(
    assessor: AbstractBaseUser, settings: object
) -> None:
    settings.LOGIN_TRUSTED_PROXY_COUNT = 1  # type: ignore[attr-defined]
    settings.TRUSTED_PROXIES = ("10.0.0.254/32",)  # type: ignore[attr-defined]  # the proxy

    def attempt(forged: str, password: str = "wrong") -> int:
        client = Client(REMOTE_ADDR="10.0.0.254", HTTP_X_FORWARDED_FOR=f"{forged}, 192.0.2.7")
        return client.post("/accounts/login/", {"username": f"u{forged}", "password": password}).status_code

    # A new forged first entry each time does not make a new address: the proxy's entry counts.
    assert [attempt(f"198.51.100.{n}") for n in range(6)] == [200] * 5 + [429]
    other = Client(REMOTE_ADDR="10.0.0.254", HTTP_X_FORWARDED_FOR="192.0.2.8")
    assert other.post("/accounts/login/", {"username": "alice", "password": PASSWORD}).status_code == 302


def test_a_client_that_reaches_the_server_directly_cannot_forge_its_address_or_scheme(
    assessor: AbstractBaseUser, settings: object
) -> None:
    """A peer outside TRUSTED_PROXIES forging a new X-Forwarded-For per wrong password is counted
    at its own address and throttled; its X-Forwarded-Proto is not believed either."""
    settings.LOGIN_TRUSTED_PROXY_COUNT = 1  # type: ignore[attr-defined]
    settings.TRUSTED_PROXIES = ("10.0.0.254/32",)  # type: ignore[attr-defined]
    settings.SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")  # type: ignore[attr-defined]

    def attempt(forged: str) -> int:
        client = Client(REMOTE_ADDR="203.0.113.9", HTTP_X_FORWARDED_FOR=forged)
        return client.post("/accounts/login/", {"username": f"u{forged}", "password": "wrong"}).status_code

    assert [attempt(f"198.51.100.{n}") for n in range(6)] == [200] * 5 + [429]
    # The same forgery through the trusted proxy is the proxy's word: a new address.
    proxied = Client(REMOTE_ADDR="10.0.0.254", HTTP_X_FORWARDED_FOR="198.51.100.77")
    assert proxied.post("/accounts/login/", {"username": "alice", "password": PASSWORD}).status_code == 302

    seen: dict[str, bool] = {}

    def view(request: HttpRequest) -> HttpResponse:
        seen["secure"] = request.is_secure()
        return HttpResponse()

    for peer, secure in (("203.0.113.9", False), ("10.0.0.254", True)):
        request = HttpRequest()
        request.META = {
            "REMOTE_ADDR": peer,
            "HTTP_X_FORWARDED_PROTO": "https",
            "SERVER_NAME": "x",
            "SERVER_PORT": "80",
        }
        forwarded_headers_from_trusted_proxies(view)(request)
        assert seen["secure"] is secure, peer


def test_it_warns_at_start_when_every_address_is_a_trusted_proxy(settings: object) -> None:
    from operations.checks import trusted_proxies_check

    assert trusted_proxies_check() == []
    settings.TRUSTED_PROXIES = ("127.0.0.0/8", "0.0.0.0/0")  # type: ignore[attr-defined]
    [warning] = trusted_proxies_check()
    assert warning.id == "labeling.W001" and "any client" in warning.msg and "0.0.0.0/0" in warning.msg
