"""Django's SQLite backend, with a writer that waits for the write lock polling it every few
milliseconds instead of on SQLite's own backoff.

Why: SQLite's busy handler sleeps 1, 2, 5, 10, ... then 100 ms between attempts, and a process
holds the write lock without a queue. While an upload writes in short batches (holding the lock
about a third of the time, `infrastructure.db.brief_write`), an assessor's answer that asked at the
wrong moment kept missing the free windows: with 42,706 requests during a 1,000,000-line upload,
three waited more than a second (1.56 s the longest; bench/bench_upload_lock.py). Polling every
`POLL_SECONDS` it gets the lock within milliseconds of its release.

How: SQLite's own handler gives up after `SQLITE_WAIT_SECONDS`; a statement refused with
"database is locked" outside a transaction (a BEGIN IMMEDIATE, or a write in autocommit mode:
nothing of it was applied) is tried again after `POLL_SECONDS`, until the database's timeout
(OPTIONS "timeout", 30 s in the settings) has passed; then the error is raised as before. Inside
a transaction there is nothing to wait for: IMMEDIATE transactions hold the lock from BEGIN.

A new connection's set-up (the settings' init commands: the WAL journal mode) runs before any
cursor of ours exists: it waits on SQLite's own handler for the whole timeout, and only then is
the connection's wait cut to `SQLITE_WAIT_SECONDS`. With the short wait from the start, a
connection opened while another held the database exclusively (a backup writing into it, a
checkpoint) failed at once with "database is locked".
"""

from __future__ import annotations

import sqlite3
import time
from typing import Any

from django.db.backends.sqlite3 import base

POLL_SECONDS = 0.002
SQLITE_WAIT_SECONDS = 0.005


class DatabaseWrapper(base.DatabaseWrapper):
    def get_connection_params(self) -> dict[str, Any]:
        params = super().get_connection_params()
        self.lock_wait_seconds = float(params.get("timeout", 5.0))
        params["timeout"] = SQLITE_WAIT_SECONDS
        return params

    def get_new_connection(self, conn_params: dict[str, Any]) -> Any:
        connection = super().get_new_connection({**conn_params, "timeout": self.lock_wait_seconds})
        connection.execute(f"PRAGMA busy_timeout = {round(SQLITE_WAIT_SECONDS * 1000)}")
        return connection

    def create_cursor(self, name: str | None = None) -> Any:
        cursor = self.connection.cursor(factory=LockPollingCursor)
        cursor.lock_wait_seconds = self.lock_wait_seconds
        return cursor


class LockPollingCursor(base.SQLiteCursorWrapper):
    lock_wait_seconds = 5.0

    def execute(self, query: str, params: Any = None) -> Any:
        deadline = None
        while True:
            try:
                return super().execute(query, params)
            except sqlite3.OperationalError as error:
                if self.connection.in_transaction or "database is locked" not in str(error):
                    raise
                now = time.monotonic()
                deadline = deadline if deadline is not None else now + self.lock_wait_seconds
                if now >= deadline:
                    raise
                time.sleep(POLL_SECONDS)
