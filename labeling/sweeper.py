"""Periodic checks that run in every live worker: whatever a dead worker left undone is picked up
by another within seconds, without waiting for a restart or a broker's visibility timeout.

Each check is a callable registered with `register_sweep` (the recompute pipeline registers its
`RecomputeSweep`; the graded mode resumes judge runs whose lease expired). A daemon thread of the
worker process runs them all every LABELING_SWEEP_SECONDS; a failing check is logged and tried
again at the next round. Checks only queue tasks (they never run a recompute themselves), so a
sweep costs a few queries and the tasks go to whichever worker is free.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

from django.conf import settings
from django.db import connection

from infrastructure.unavailable import UNAVAILABLE

logger = logging.getLogger(__name__)

_sweeps: list[Callable[[], object]] = []
_thread: threading.Thread | None = None


def register_sweep(sweep: Callable[[], object]) -> None:
    """Run `sweep` in every worker's sweep thread, every LABELING_SWEEP_SECONDS."""
    _sweeps.append(sweep)


def sweep_once() -> None:
    """Run every registered check once (what the thread does each round)."""
    for sweep in list(_sweeps):
        try:
            sweep()
        except UNAVAILABLE as error:
            logger.warning("sweep %r: cache or broker unavailable (%r); next round retries", sweep, error)
        except Exception:
            logger.exception("sweep %r failed; trying again next round", sweep)
    # The thread's own connection: closed between rounds, so an idle worker holds none open.
    connection.close()


def _run() -> None:
    while True:
        time.sleep(settings.LABELING_SWEEP_SECONDS)
        sweep_once()


def sweeper_start() -> None:
    """Start this process's sweep thread (once)."""
    global _thread
    if _thread is not None and _thread.is_alive():
        return
    _thread = threading.Thread(target=_run, name="sweeper", daemon=True)
    _thread.start()
