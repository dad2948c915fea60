"""Database helpers: hand-written SQL on the judging hot path, short write transactions of uploads."""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from django.db import connection, transaction
from django.db.backends.base.base import BaseDatabaseWrapper
from django.db.backends.signals import connection_created
from django.db.backends.utils import CursorDebugWrapper, CursorWrapper
from django.dispatch import receiver


def prepared_cursor() -> CursorWrapper:
    """A cursor on the default connection whose statements PostgreSQL plans once per connection.

    Django's PostgreSQL cursors bind parameters on the client, which rules out prepared
    statements, so every request pays for parsing and planning its statements again. The few
    statements run for every item served use a server-side binding cursor instead, prepared on
    first use and planned once per connection (`_prepare_once`). Only these statements: a global
    ``server_side_binding`` would also cap every ORM statement at 65,535 parameters, which large
    imports exceed. Parameters need explicit casts where PostgreSQL cannot infer their type
    (a NULL in a SELECT list). Elsewhere this is the ordinary cursor. Queries still show in
    Django's query log (CaptureQueriesContext, debug logging).
    """
    if connection.vendor != "postgresql":
        return connection.cursor()
    from django.db.backends.postgresql.base import ServerBindingCursor

    # What connection.cursor() does first: a health check when due, then connect if needed.
    connection.close_if_health_check_failed()
    connection.ensure_connection()
    with connection.wrap_database_errors:
        # django-stubs types the class without psycopg's constructor (a connection argument).
        raw = ServerBindingCursor(connection.connection)  # type: ignore[call-arg]
    if connection.queries_logged:
        return _PreparedDebugCursor(raw, connection)
    return connection.make_cursor(raw)  # type: ignore[arg-type]  # a psycopg cursor, as Django's own


class _PreparedDebugCursor(CursorDebugWrapper):
    def execute(self, sql: Any, params: Any = None) -> Any:
        # psycopg keeps no text of a prepared statement to log: log the statement as written.
        with self.debug_sql(sql, params):
            return CursorWrapper.execute(self, sql, params)


@receiver(connection_created)
def _prepare_once(sender: Any, connection: BaseDatabaseWrapper, **kwargs: Any) -> None:
    """PostgreSQL: prepare server-side bound statements at once and plan them once.

    Django turns psycopg's automatic preparation off; only `prepared_cursor` binds on the server,
    so turning it back on here affects only its statements. And PostgreSQL would still plan a
    prepared statement afresh on every execution while its generic plan's estimate looks dearer
    than a tailored one: for the small judging statements planning took longer than running them
    (pg_stat_statements: 0.3-0.5 ms planning against 0.04-0.3 ms executing). The ORM's statements
    arrive with their values inlined, so the plan cache mode does not touch them.
    """
    if connection.vendor == "postgresql":
        connection.connection.prepare_threshold = 0
        with connection.cursor() as cursor:
            cursor.execute("SET plan_cache_mode = force_generic_plan")


@contextmanager
def brief_write() -> Iterator[None]:
    """One short transaction of a long upload, then, on SQLite, the write lock left free twice
    as long as it was held (at most 0.2 s): writers waiting for the lock poll for it every few
    milliseconds (`infrastructure.sqlite_backend`), so an assessor's answer gets in within the pause
    rather than after many batches."""
    started = time.monotonic()
    with transaction.atomic():
        yield
    if connection.vendor == "sqlite":
        time.sleep(min(2 * (time.monotonic() - started), 0.2))
