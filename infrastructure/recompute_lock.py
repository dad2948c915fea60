"""At most one recompute of a campaign at a time, across every worker of every node.

The lock lives where every process of an installation already meets: the database.
- PostgreSQL: a session-level advisory lock (`pg_try_advisory_lock`). The server frees it when
  the holder's connection ends, so a worker killed mid-recompute leaves no lock behind and
  another worker takes the campaign over at once; no expiry to tune.
- SQLite (one machine by nature): `flock` on a file per campaign beside the database file. The
  kernel frees it when the holder's process dies.
Neither needs the cache or the broker, so the lock holds whatever they do.
"""

from __future__ import annotations

import fcntl
import logging
import os
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from django.db import connection

logger = logging.getLogger(__name__)

# The first key of the two-key advisory lock: the recompute's own space, so a campaign id never
# collides with another use of advisory locks on the same database.
ADVISORY_SPACE = 0x52435054  # "RCPT"
POLL_SECONDS = 0.05


def _lock_path(campaign_id: int) -> Path:
    name = str(connection.settings_dict["NAME"])
    if name == ":memory:" or name.startswith("file:"):  # an in-memory database lives in one process
        folder = Path(tempfile.gettempdir()) / f"recompute-locks-{os.getpid()}"
    else:
        database = Path(name)
        folder = database.with_name(database.name + ".locks")
    folder.mkdir(parents=True, exist_ok=True)
    return folder / f"recompute-{campaign_id}.lock"


def _try_advisory(campaign_id: int) -> bool:
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_try_advisory_lock(%s, %s)", [ADVISORY_SPACE, campaign_id])
        return bool(cursor.fetchone()[0])


def _release_advisory(campaign_id: int) -> None:
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_advisory_unlock(%s, %s)", [ADVISORY_SPACE, campaign_id])
    except Exception:
        # A broken connection cannot unlock; closing it frees the lock on the server.
        logger.exception(
            "could not release the recompute lock of campaign %s; closing the connection", campaign_id
        )
        connection.close()


@contextmanager
def recompute_lock(campaign_id: int, wait_seconds: float = 0.0) -> Iterator[bool]:
    """Hold the campaign's recompute lock for the block; yields False (and holds nothing) when
    another process held it for all of `wait_seconds`."""
    deadline = time.monotonic() + wait_seconds
    if connection.vendor == "postgresql":
        while not (acquired := _try_advisory(campaign_id)) and time.monotonic() < deadline:
            time.sleep(POLL_SECONDS)
        try:
            yield acquired
        finally:
            if acquired:
                _release_advisory(campaign_id)
        return
    descriptor = os.open(_lock_path(campaign_id), os.O_RDWR | os.O_CREAT, 0o600)
    try:
        while True:
            try:
                fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
                acquired = True
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    acquired = False
                    break
                time.sleep(POLL_SECONDS)
        yield acquired
    finally:
        os.close(descriptor)  # releases the flock


def recompute_locked(campaign_id: int) -> bool:
    """Whether another process is recomputing the campaign right now (a probe: takes the lock
    and gives it back at once)."""
    with recompute_lock(campaign_id) as acquired:
        return not acquired
