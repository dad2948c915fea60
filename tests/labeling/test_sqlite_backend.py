"""The embedded default's SQLite backend (infrastructure/sqlite_backend): a write that finds the write
lock taken polls for it until the database's timeout, instead of SQLite's backoff of up to
100 ms; the latency it buys is measured by bench/bench_upload_lock.py, not here."""

from __future__ import annotations

import sqlite3
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from django.db import OperationalError, connection

from infrastructure.sqlite_backend.base import SQLITE_WAIT_SECONDS


@pytest.fixture
def holder(transactional_db: None) -> Iterator[sqlite3.Connection]:
    """A second connection to the test database (another process's, as far as SQLite can tell)
    and a scratch table; the Django connection in autocommit mode, as requests use it."""
    connection.ensure_connection()
    other = sqlite3.connect(connection.settings_dict["NAME"], isolation_level=None, check_same_thread=False)
    other.execute("CREATE TABLE IF NOT EXISTS lock_probe (x INTEGER)")
    wait = connection.lock_wait_seconds
    yield other
    connection.lock_wait_seconds = wait
    if other.in_transaction:
        other.execute("ROLLBACK")
    other.execute("DROP TABLE lock_probe")
    other.close()


def test_sqlite_gives_up_at_once_and_the_backend_waits_for_the_lock(
    holder: sqlite3.Connection,
) -> None:
    holder.execute("BEGIN IMMEDIATE")
    threading.Timer(0.4, lambda: holder.execute("COMMIT")).start()
    started = time.monotonic()
    with connection.cursor() as cursor:
        cursor.execute("INSERT INTO lock_probe (x) VALUES (1)")
    waited = time.monotonic() - started
    # SQLite's own handler gave up after SQLITE_WAIT_SECONDS; the backend kept asking until the
    # holder committed, and the row is in.
    assert waited >= 0.3 > 10 * SQLITE_WAIT_SECONDS
    assert holder.execute("SELECT count(*) FROM lock_probe").fetchone() == (1,)


def test_a_lock_never_freed_still_fails_after_the_database_timeout(holder: sqlite3.Connection) -> None:
    connection.lock_wait_seconds = 0.3  # read by each new cursor
    holder.execute("BEGIN IMMEDIATE")
    started = time.monotonic()
    with pytest.raises(OperationalError, match="database is locked"), connection.cursor() as cursor:
        cursor.execute("INSERT INTO lock_probe (x) VALUES (1)")
    assert time.monotonic() - started >= 0.3
    holder.execute("ROLLBACK")
    with connection.cursor() as cursor:
        cursor.execute("INSERT INTO lock_probe (x) VALUES (2)")
    assert holder.execute("SELECT x FROM lock_probe").fetchall() == [(2,)]


def test_a_connection_opened_while_another_holds_the_database_waits_instead_of_failing(
    db: None, tmp_path: Path
) -> None:
    # An exclusive holder (as a backup writing into the database is) blocks even the journal-mode
    # set-up of a new connection: it waits for the holder, and its writes then poll for the lock.
    # A database file of its own: in WAL mode an exclusive holder must be the file's only
    # connection, and a live server thread of an earlier test in this process may hold one to the
    # test database.
    parameters = {**connection.get_connection_params(), "database": str(tmp_path / "held.sqlite3")}
    exclusive = sqlite3.connect(parameters["database"], isolation_level=None, check_same_thread=False)
    exclusive.execute("PRAGMA journal_mode=WAL")
    exclusive.execute("PRAGMA locking_mode=EXCLUSIVE")
    exclusive.execute("CREATE TABLE exclusive_probe (x INTEGER)")  # the write that takes the lock
    threading.Timer(0.4, exclusive.close).start()
    started = time.monotonic()
    fresh = connection.get_new_connection(parameters)
    try:
        assert time.monotonic() - started >= 0.3
        assert fresh.execute("PRAGMA busy_timeout").fetchone() == (round(SQLITE_WAIT_SECONDS * 1000),)
        fresh.execute("DROP TABLE exclusive_probe")
    finally:
        fresh.close()
