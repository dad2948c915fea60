"""A real OpenID Connect provider for the sign-in tests: django-oauth-toolkit's, in a Django project
of its own (settings, urls, validator here), run as a separate process on a free loopback port
with its own database and RSA signing key. The tests seed its users, groups and clients as an
administrator would configure Keycloak, then sign in through its login page; nothing of the
protocol is mocked.

`identity_provider` is the session's provider (a pytest fixture, registered in tests/conftest.py);
each test seeds the clients and users it needs under names of its own."""

from __future__ import annotations

import json
import os
import secrets
import shutil
import sys
import tempfile
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.servers import answering_process, free_port

REPO_ROOT = Path(__file__).resolve().parents[2]
SEED_TOKEN_FILE = "seed-token"  # read by settings.py too


@dataclass(frozen=True)
class IdentityProvider:
    home: Path
    port: int

    @property
    def issuer(self) -> str:
        return f"http://127.0.0.1:{self.port}/o"

    def seed(self, *, users: list[dict[str, Any]] = (), clients: list[dict[str, Any]] = ()) -> None:  # type: ignore[assignment]
        """Users (username, password, email, groups: set exactly) and clients (name, client_id,
        secret, redirect_uris, post_logout_redirect_uris), as an administrator of the provider
        (its administration API, tests/identity_provider/admin_api.py)."""
        request = urllib.request.Request(
            f"http://127.0.0.1:{self.port}/admin/seed/",
            data=json.dumps({"users": list(users), "clients": list(clients)}).encode(),
            headers={
                "Authorization": f"Bearer {(self.home / SEED_TOKEN_FILE).read_text()}",
                "Content-Type": "application/json",
            },
            method="POST",
        )
        with urllib.request.urlopen(request, timeout=60) as answer:
            assert answer.status == 204, answer.status


def _environment(home: Path) -> dict[str, str]:
    environment = {key: value for key, value in os.environ.items() if key != "DJANGO_SETTINGS_MODULE"}
    environment["IDENTITY_PROVIDER_HOME"] = str(home)
    return environment


def _signing_key() -> str:
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import rsa

    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    return key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    ).decode()


@contextmanager
def identity_provider_server() -> Iterator[IdentityProvider]:
    home = Path(tempfile.mkdtemp(prefix="test-identity-provider-"))
    (home / "signing-key.pem").write_text(_signing_key())
    (home / SEED_TOKEN_FILE).write_text(secrets.token_urlsafe(24))
    provider = IdentityProvider(home=home, port=free_port())

    def answering() -> bool:
        try:
            with urllib.request.urlopen(
                f"{provider.issuer}/.well-known/openid-configuration", timeout=2
            ) as answer:
                return answer.status == 200
        except OSError:
            return False

    try:
        with answering_process(
            [sys.executable, "-m", "tests.identity_provider", "serve", str(provider.port)],
            what="the test identity provider",
            log=home / "provider.log",
            answering=answering,
            env=_environment(home),
            cwd=REPO_ROOT,
        ):
            yield provider
    finally:
        shutil.rmtree(home, ignore_errors=True)


@pytest.fixture(scope="session")
def identity_provider() -> Iterator[IdentityProvider]:
    """The session's OpenID Connect provider (one process for all the sign-in tests)."""
    with identity_provider_server() as provider:
        yield provider
