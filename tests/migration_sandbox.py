"""An empty database of its own for a test of old migrations, in place of the test database.

Migrating the test database back from today's schema to an old state makes Django render every
project state of the whole plan again and again (20-45 s per test on two cores, and as much again
to migrate forward afterwards). A test that needs an old state builds it forward from nothing
instead, on an empty database of the same vendor, and throws it away: the backward migrations it
asserts are only the ones between the states it checks.

While the fixture is active the default connection is the sandbox's (so `connection`, the
migration executor and the models of a migration state use it unchanged); the test database is
left as it was and the default connection comes back after the test.
"""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import Iterator
from pathlib import Path

from django.db import DEFAULT_DB_ALIAS, connections
from django.db.backends.base.base import BaseDatabaseWrapper


def _sandbox_settings(original: BaseDatabaseWrapper, tmp_path: Path) -> tuple[dict, str | None]:
    """The sandbox's settings and, on PostgreSQL, the name of the database to make and drop."""
    settings = {**original.settings_dict}
    if original.vendor == "sqlite":
        settings["NAME"] = str(tmp_path / "migration-sandbox.sqlite3")
        return settings, None
    name = f"migration_sandbox_{uuid.uuid4().hex[:12]}"
    settings["NAME"] = name
    return settings, name


@contextlib.contextmanager
def migration_sandbox(tmp_path: Path) -> Iterator[BaseDatabaseWrapper]:
    """The sandbox connection, the default one while the context lasts."""
    original = connections[DEFAULT_DB_ALIAS]
    settings, database = _sandbox_settings(original, tmp_path)
    if database is not None:
        with original.cursor() as cursor:
            cursor.execute(f'CREATE DATABASE "{database}"')
    sandbox = original.__class__(settings, alias=DEFAULT_DB_ALIAS)
    connections[DEFAULT_DB_ALIAS] = sandbox
    try:
        yield sandbox
    finally:
        sandbox.close()
        connections[DEFAULT_DB_ALIAS] = original
        if database is not None:
            with original.cursor() as cursor:
                cursor.execute(f'DROP DATABASE IF EXISTS "{database}"')
