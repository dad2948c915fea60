"""Settings helpers and the database the suite runs on."""

from __future__ import annotations

import os

import pytest
from django.core.exceptions import ImproperlyConfigured
from django.db import connection

from config.settings import env_bool, env_int, env_list, env_str


def test_it_reads_typed_environment_variables(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("X_BOOL", "yes")
    monkeypatch.setenv("X_INT", "42")
    monkeypatch.setenv("X_LIST", "a, b,,c")
    assert env_bool("X_BOOL", False) is True
    assert env_int("X_INT", 0) == 42
    assert env_list("X_LIST", []) == ["a", "b", "c"]
    assert env_str("X_MISSING", "fallback") == "fallback"
    monkeypatch.setenv("X_BOOL", "perhaps")
    monkeypatch.setenv("X_INT", "many")
    for read in (
        lambda: env_bool("X_BOOL", False),
        lambda: env_int("X_INT", 0),
        lambda: env_str("X_MISSING"),
    ):
        with pytest.raises(ImproperlyConfigured):
            read()


@pytest.mark.django_db
def test_it_runs_on_the_database_named_by_database_url() -> None:
    url = os.environ.get("DATABASE_URL", "sqlite://")
    expected = "postgresql" if url.startswith(("postgres://", "postgresql://")) else "sqlite"
    assert connection.vendor == expected
