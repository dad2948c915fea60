"""The recompute pipeline, in one place: what a worker recomputes after answers, and how a
request asks for it without waiting.

Vocabulary: `recompute(campaign_id)` is the worker's job (the Celery task `campaign_recompute`
runs it): every mode's own recompute (`JudgingMode.recompute`: the graded mode refits the
label model, recomputes the sampling distribution, tops up the draws and stores an estimate
snapshot; side by side refits learned DCG; training selects the next round), then the progress
record. `recompute_soon(campaign_id)` asks for it after an answer commits (never waits);
`recompute_queue` is one synchronous attempt; `recompute_started` is what the job does first.

Coalescing, the rule that makes a burst of judgments cost one recompute and still never leaves
the last judgment out: while the marker ``labeling:campaign-refresh:<id>`` is in the cache, a
recompute of that campaign is queued and has not started yet; a recompute clears the marker
before it reads any judgment (`recompute_started`). So a judgment that finds the marker set
will be read by the queued recompute, and one that does not find it sets it and queues one.
The marker only works if the web processes and the worker share the cache: Redis, or, in the
embedded default, Django's file cache under VAR_DIR/cache (config/settings.py). The marker and
the Celery message keep their earlier names (``campaign-refresh``, ``campaign_refresh``), so
processes of the previous version and this one understand each other during an upgrade.

Judging never waits on the cache or the broker: on commit, `recompute_soon` hands the campaign
id to a daemon thread of the process (`RecomputeQueue`), which sets the marker and publishes the
task. When either fails it keeps the id and tries again with a short backoff, so an outage at the
end of a burst delays that burst's recompute instead of losing it. Each attempt marks the cache
with a token of its own: an add whose reply timed out may still have reached Redis, and the
retry then recognises the marker as its own rather than as someone else's queued recompute.
"""

from __future__ import annotations

import atexit
import logging
import os
import threading
import time
import uuid

from django.conf import settings
from django.core.cache import cache
from django.db import transaction
from kombu.exceptions import KombuError
from redis.exceptions import RedisError

from estimation.sampling.draws import STOP_EXHAUSTED
from labeling.models import Campaign, CampaignProgress, Task
from labeling.modes import campaign_progress, mode_of

logger = logging.getLogger(__name__)

# How long a queued refresh suppresses further enqueues for the same campaign (beyond the
# minimum spacing); a marker whose refresh never runs (a lost message) expires after this.
RECOMPUTE_COALESCE_SECONDS = 30
# The failures of a cache or broker that is down, hung or unreachable.
UNAVAILABLE = (KombuError, OSError, RedisError)
# Pauses between attempts while the cache or broker is unavailable (seconds).
RETRY_FIRST_SECONDS = 0.05
RETRY_MAX_SECONDS = 1.0
# How long a process that exits waits for its pending refreshes to be queued.
EXIT_WAIT_SECONDS = 3.0


def _marker_keys(campaign_id: int) -> tuple[str, str]:
    return f"labeling:campaign-refresh:{campaign_id}", f"labeling:campaign-refresh-started:{campaign_id}"


def _marker_seconds() -> float:
    return RECOMPUTE_COALESCE_SECONDS + settings.LABELING_REFRESH_MIN_SECONDS


def recompute_countdown(last_started: float | None, now: float, min_seconds: float) -> float:
    """Seconds to wait before the next refresh: none, unless the last one started less than
    `min_seconds` ago."""
    if last_started is None:
        return 0.0
    return max(0.0, last_started + min_seconds - now)


def _recompute_queue_once(campaign_id: int, token: str) -> bool:
    """Mark the campaign and queue its refresh unless one is queued already; True if this call
    queued it. Raises UNAVAILABLE errors (the marker may then be set with `token`)."""
    queued_key, started_key = _marker_keys(campaign_id)
    if not cache.add(queued_key, token, timeout=_marker_seconds()) and cache.get(queued_key) != token:
        # A refresh is queued and has not started: it will read this judgment. (If the marker
        # vanished between the two calls, that refresh has started since, after this commit.)
        return False
    from labeling.tasks import campaign_recompute

    min_seconds = settings.LABELING_REFRESH_MIN_SECONDS
    countdown = recompute_countdown(cache.get(started_key), time.time(), min_seconds)
    campaign_recompute.apply_async((campaign_id,), countdown=countdown or None)
    return True


def recompute_queue(campaign_id: int) -> bool:
    """Queue `campaign_recompute` now unless one is already queued; True if this call queued it.

    Synchronous, one attempt, never raises: a cache or broker failure is logged and returns False.
    Judging goes through `recompute_soon` instead, which retries. Refreshes of one campaign
    start at least LABELING_REFRESH_MIN_SECONDS apart: queued right after one started, the next
    waits out the rest (a countdown), so a busy campaign is refitted every few seconds instead of
    back to back (a worker refitting without pause took 0.4 of the 2 cores the web server needed).
    """
    try:
        return _recompute_queue_once(campaign_id, uuid.uuid4().hex)
    except UNAVAILABLE:
        logger.exception("could not enqueue campaign_refresh(%s)", campaign_id)
        try:
            cache.delete(_marker_keys(campaign_id)[0])
        except UNAVAILABLE:
            pass
        return False


def recompute_started(campaign_id: int) -> None:
    """A refresh starts (called by the worker before it reads anything): clear the marker, so the
    next judgment queues another refresh, which waits out the minimum interval from now.

    The marker must be gone before the refresh reads the judgments, or a judgment that saw it
    would be followed by no refresh. While the cache is unavailable this keeps trying, at most
    until the marker has expired by itself; the worker can afford to wait, a request could not.
    """
    queued_key, started_key = _marker_keys(campaign_id)
    deadline = time.monotonic() + _marker_seconds()
    pause = RETRY_FIRST_SECONDS
    while True:
        try:
            cache.delete(queued_key)
            break
        except UNAVAILABLE:
            if time.monotonic() >= deadline:
                logger.warning("cache unavailable; campaign %s's refresh marker has expired", campaign_id)
                break
            time.sleep(pause)
            pause = min(2 * pause, RETRY_MAX_SECONDS)
    min_seconds = settings.LABELING_REFRESH_MIN_SECONDS
    if min_seconds > 0:
        try:
            cache.set(started_key, time.time(), timeout=min_seconds)
        except UNAVAILABLE:  # only the spacing of refreshes suffers
            logger.warning("cache unavailable; the next refresh of campaign %s starts at once", campaign_id)


class RecomputeQueue:
    """Campaign ids whose refresh is to be queued, and the daemon thread that queues them."""

    def __init__(self) -> None:
        self._changed = threading.Condition()
        # Campaign id -> the token of its marker. An id whose attempt failed keeps its token,
        # so a marker that attempt set unseen is recognised as its own on the next attempt.
        self._pending: dict[int, str] = {}
        self._working = False
        self._thread: threading.Thread | None = None

    def put(self, campaign_id: int) -> None:
        """Queue a refresh of the campaign soon (returns at once)."""
        with self._changed:
            self._pending.setdefault(campaign_id, uuid.uuid4().hex)
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="refresh-queue", daemon=True)
                self._thread.start()
            self._changed.notify_all()

    def wait(self, timeout: float) -> bool:
        """Wait until every requested refresh is queued (or found queued); False on timeout."""
        deadline = time.monotonic() + timeout
        with self._changed:
            while self._pending or self._working:
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self._changed.wait(left)
        return True

    def _run(self) -> None:
        pause = RETRY_FIRST_SECONDS
        while True:
            with self._changed:
                while not self._pending:
                    self._changed.wait()
                # Ids put from now on get fresh tokens and another attempt: their judgments may
                # have committed after this round's markers were set and its refreshes started.
                batch, self._pending, self._working = self._pending, {}, True
            failed = {key: token for key, token in batch.items() if not self._queue(key, token)}
            with self._changed:
                # A failed attempt covers the judgments put since: its retry comes after them.
                self._pending.update(failed)
                self._working = False
                self._changed.notify_all()
            if failed:
                time.sleep(pause)
                pause = min(2 * pause, RETRY_MAX_SECONDS)
            else:
                pause = RETRY_FIRST_SECONDS

    @staticmethod
    def _queue(campaign_id: int, token: str) -> bool:
        """One attempt; False if it is to be retried."""
        try:
            _recompute_queue_once(campaign_id, token)
            return True
        except UNAVAILABLE as error:
            logger.warning("could not enqueue campaign_refresh(%s), will retry: %r", campaign_id, error)
            return False
        except Exception:  # a bug must not stop the thread every later judgment of this process needs
            logger.exception("campaign_refresh(%s) not enqueued", campaign_id)
            return True


_queue: RecomputeQueue | None = None
_queue_pid: int | None = None
_queue_lock = threading.Lock()


def _recompute_queue() -> RecomputeQueue:
    """This process's queue; a forked child (a gunicorn worker) starts its own."""
    global _queue, _queue_pid
    with _queue_lock:
        if _queue is None or _queue_pid != os.getpid():
            _queue, _queue_pid = RecomputeQueue(), os.getpid()
        return _queue


def _forget_after_fork() -> None:
    # The parent's queue, its thread and locks are not the child's (a lock held at fork time
    # would stay held forever in the child).
    global _queue, _queue_pid, _queue_lock
    _queue, _queue_pid, _queue_lock = None, None, threading.Lock()


os.register_at_fork(after_in_child=_forget_after_fork)


def recompute_soon(campaign_id: int) -> None:
    """After a judgment commits: have the campaign refreshed soon. Returns at once; the refresh is
    queued by this process's background thread, retried while the cache or broker is down."""
    _recompute_queue().put(campaign_id)


def recompute_soon_wait(timeout: float = 10.0) -> bool:
    """Wait until this process has queued every refresh requested so far; False on timeout."""
    queue = _queue
    if queue is None or _queue_pid != os.getpid():
        return True
    return queue.wait(timeout)


@atexit.register
def _queue_before_exit() -> None:
    # A process that exits normally (a gunicorn worker recycled after max_requests) first hands
    # on what it still holds; the daemon thread would otherwise die with it.
    if not recompute_soon_wait(EXIT_WAIT_SECONDS):
        logger.error("exiting with refreshes not yet queued; the worker catches up when it restarts")


# -- the worker's job -------------------------------------------------------------------------------
BLOCKED_EXHAUSTED = STOP_EXHAUSTED
"""`Campaign.blocked` once every item is drawn and covered (the sampling engine sets it)."""


def recompute(campaign_id: int) -> CampaignProgress | None:
    """What a worker recomputes after answers: the campaign's mode's own recompute
    (`JudgingMode.recompute`), then the progress record, marking the campaign done once every
    pool item is judged. Idempotent."""
    recompute_started(campaign_id)
    campaign = Campaign.objects.filter(pk=campaign_id).first()
    if campaign is None:
        return None
    mode_of(campaign).recompute(campaign)
    return _progress_record(campaign)


@transaction.atomic
def _progress_record(campaign: Campaign) -> CampaignProgress:
    progress = campaign_progress(campaign)
    open_tasks = Task.objects.filter(campaign=campaign, answered_at__isnull=True).count()
    if (
        campaign.status == Campaign.Status.RUNNING
        and open_tasks == 0
        and campaign.blocked == BLOCKED_EXHAUSTED
    ):
        Campaign.objects.filter(pk=campaign.pk).update(status=Campaign.Status.DONE)
    record, _ = CampaignProgress.objects.update_or_create(
        campaign_id=campaign.pk,
        defaults={
            "judgments": progress.judgments,
            "spent": progress.spent,
            "pool_size": progress.pool_size,
            "drawn": progress.drawn,
            "open_tasks": open_tasks,
        },
    )
    return record
