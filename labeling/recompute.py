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

Across nodes: at most one recompute of a campaign runs at a time (`infrastructure.recompute_lock`, a
lock the database holds and frees when its holder dies). A recompute that finds the lock taken
queues itself again after the spacing instead of waiting in a worker. Every request also counts
itself (``...-requested``, a counter), and every recompute stores the count it started from
(``...-covered``): a campaign whose requests outnumber its covered count while no recompute
holds its lock is owed one. A recompute parked in a worker that died (a countdown, or a message
that worker held unacknowledged) leaves exactly that state behind, and the sweep of every live
worker (`RecomputeSweep`, every LABELING_SWEEP_SECONDS) queues it again within seconds.
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

from infrastructure.recompute_lock import recompute_lock, recompute_locked
from infrastructure.unavailable import UNAVAILABLE
from labeling.models import Campaign, CampaignProgress
from labeling.modes import campaign_progress, mode_of

logger = logging.getLogger(__name__)

# How long a queued recompute suppresses further enqueues for the same campaign (beyond the
# minimum spacing); a marker whose recompute never runs (a lost message) expires after this.
RECOMPUTE_COALESCE_SECONDS = 30
# How long the queueing thread, woken by a judgment, lets others gather before it handles them:
# one marker check and one count for every judgment of those moments, not a wake-up of the
# thread per judgment (with assessors judging flat out that thread took about a twentieth of a
# web process's CPU). Recomputes start seconds apart anyway (LABELING_RECOMPUTE_MIN_SECONDS).
GATHER_SECONDS = 0.05
# Pauses between attempts while the cache or broker is unavailable (seconds).
RETRY_FIRST_SECONDS = 0.05
RETRY_MAX_SECONDS = 1.0
# How long a process that exits waits for its pending recomputes to be queued.
EXIT_WAIT_SECONDS = 3.0


def _marker_keys(campaign_id: int) -> tuple[str, str]:
    return f"labeling:campaign-refresh:{campaign_id}", f"labeling:campaign-refresh-started:{campaign_id}"


def _count_keys(campaign_id: int) -> tuple[str, str]:
    """The counter of recompute requests and the count the last finished recompute started from."""
    return (
        f"labeling:campaign-refresh-requested:{campaign_id}",
        f"labeling:campaign-refresh-covered:{campaign_id}",
    )


def _count_request(campaign_id: int) -> None:
    """Count one recompute request (after its judgment committed). Redis counts atomically, and so
    does the embedded default's file cache (`infrastructure.file_cache`: one appended byte)."""
    key = _count_keys(campaign_id)[0]
    counter_add = getattr(cache, "counter_add", None)
    if counter_add is not None:
        counter_add(key)
        return
    try:
        cache.incr(key)
    except ValueError:  # the first request (or a flushed cache)
        if not cache.add(key, 1, timeout=None):
            cache.incr(key)


def _requests_counted(campaign_ids: list[int]) -> dict[int, int]:
    """The campaigns' counts of recompute requests (0 where none was counted)."""
    keys = {campaign_id: _count_keys(campaign_id)[0] for campaign_id in campaign_ids}
    counter_values = getattr(cache, "counter_values", None)
    values = counter_values(keys.values()) if counter_values is not None else cache.get_many(keys.values())
    return {campaign_id: int(values.get(key) or 0) for campaign_id, key in keys.items()}


def _marker_seconds() -> float:
    return RECOMPUTE_COALESCE_SECONDS + settings.LABELING_RECOMPUTE_MIN_SECONDS


def recompute_countdown(last_started: float | None, now: float, min_seconds: float) -> float:
    """Seconds to wait before the next recompute: none, unless the last one started less than
    `min_seconds` ago."""
    if last_started is None:
        return 0.0
    return max(0.0, last_started + min_seconds - now)


def _recompute_queue_once(campaign_id: int, token: str) -> bool:
    """Mark the campaign and queue its recompute unless one is queued already; True if this call
    queued it. Raises UNAVAILABLE errors (the marker may then be set with `token`)."""
    queued_key, started_key = _marker_keys(campaign_id)
    _count_request(campaign_id)
    if not cache.add(queued_key, token, timeout=_marker_seconds()) and cache.get(queued_key) != token:
        # A recompute is queued and has not started: it will read this judgment. (If the marker
        # vanished between the two calls, that recompute has started since, after this commit.)
        return False
    from labeling.tasks import campaign_recompute

    min_seconds = settings.LABELING_RECOMPUTE_MIN_SECONDS
    countdown = recompute_countdown(cache.get(started_key), time.time(), min_seconds)
    campaign_recompute.apply_async((campaign_id,), countdown=countdown or None)
    return True


def recompute_queue(campaign_id: int) -> bool:
    """Queue `campaign_recompute` now unless one is already queued; True if this call queued it.

    Synchronous, one attempt, never raises: a cache or broker failure is logged and returns False.
    Judging goes through `recompute_soon` instead, which retries. Recomputes of one campaign
    start at least LABELING_RECOMPUTE_MIN_SECONDS apart: queued right after one started, the next
    waits out the rest (a countdown), so a busy campaign is refitted every few seconds instead of
    back to back (a worker refitting without pause took 0.4 of the 2 cores the web server needed).
    """
    try:
        return _recompute_queue_once(campaign_id, uuid.uuid4().hex)
    except UNAVAILABLE as error:
        logger.warning("could not enqueue campaign_refresh(%s): %r", campaign_id, error)
        try:
            cache.delete(_marker_keys(campaign_id)[0])
        except UNAVAILABLE:
            pass
        return False


def recompute_started(campaign_id: int) -> int | None:
    """A recompute starts (called by the worker before it reads anything): clear the marker, so the
    next judgment queues another recompute, which waits out the minimum interval from now. Returns
    the count of requests this recompute covers (None when the cache could not tell).

    The marker must be gone before the recompute reads the judgments, or a judgment that saw it
    would be followed by no recompute. While the cache is unavailable this keeps trying, at most
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
                logger.warning("cache unavailable; campaign %s's recompute marker has expired", campaign_id)
                break
            time.sleep(pause)
            pause = min(2 * pause, RETRY_MAX_SECONDS)
    min_seconds = settings.LABELING_RECOMPUTE_MIN_SECONDS
    if min_seconds > 0:
        try:
            cache.set(started_key, time.time(), timeout=min_seconds)
        except UNAVAILABLE:  # only the spacing of recomputes suffers
            logger.warning("cache unavailable; the next recompute of campaign %s starts at once", campaign_id)
    try:
        # Read after the marker is gone and before any judgment: every request counted so far
        # belongs to a judgment this recompute reads.
        return _requests_counted([campaign_id])[campaign_id]
    except UNAVAILABLE:
        return None


def _covered(campaign_id: int, requests: int | None) -> None:
    """A recompute that started from `requests` counted requests has finished."""
    if requests is None:
        return
    try:
        cache.set(_count_keys(campaign_id)[1], requests, timeout=None)
    except UNAVAILABLE:  # the sweep may queue one recompute too many
        logger.warning("cache unavailable; campaign %s's covered count not stored", campaign_id)


def recompute_owed(campaign_ids: list[int]) -> dict[int, int]:
    """Campaigns with recompute requests no finished recompute covered (or whose count of requests
    went back): id -> the covered count."""
    requested = _requests_counted(campaign_ids)
    covered_keys = {campaign_id: _count_keys(campaign_id)[1] for campaign_id in campaign_ids}
    values = cache.get_many(covered_keys.values())
    owed = {}
    for campaign_id, covered_key in covered_keys.items():
        covered = int(values.get(covered_key) or 0)
        # Fewer requests than covered: the counter was reset without the covered count (the file
        # cache's counters are new in this version). Whether a recompute is owed cannot be told,
        # and one too many costs a little time where one too few leaves an estimate stale.
        if requested[campaign_id] != covered:
            owed[campaign_id] = covered
    return owed


class RecomputeQueue:
    """Campaign ids whose recompute is to be queued, and the daemon thread that queues them."""

    def __init__(self, gather_seconds: float = GATHER_SECONDS) -> None:
        self._gather_seconds = gather_seconds
        self._changed = threading.Condition()
        # Campaign id -> the token of its marker. An id whose attempt failed keeps its token,
        # so a marker that attempt set unseen is recognised as its own on the next attempt.
        self._pending: dict[int, str] = {}
        self._working = False
        self._thread: threading.Thread | None = None

    def put(self, campaign_id: int) -> None:
        """Queue a recompute of the campaign soon (returns at once)."""
        with self._changed:
            if campaign_id in self._pending:
                return  # the thread has not taken it yet: this judgment joins that round
            self._pending[campaign_id] = uuid.uuid4().hex
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="recompute-queue", daemon=True)
                self._thread.start()
            self._changed.notify_all()

    def wait(self, timeout: float) -> bool:
        """Wait until every requested recompute is queued (or found queued); False on timeout."""
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
            time.sleep(self._gather_seconds)
            with self._changed:
                # Ids put from now on get fresh tokens and another attempt: their judgments may
                # have committed after this round's markers were set and its recomputes started.
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
    """After a judgment commits: have the campaign recomputed soon. Returns at once; the recompute is
    queued by this process's background thread, retried while the cache or broker is down."""
    _recompute_queue().put(campaign_id)


def recompute_soon_wait(timeout: float = 10.0) -> bool:
    """Wait until this process has queued every recompute requested so far; False on timeout."""
    queue = _queue
    if queue is None or _queue_pid != os.getpid():
        return True
    return queue.wait(timeout)


@atexit.register
def _queue_before_exit() -> None:
    # A process that exits normally (a gunicorn worker recycled after max_requests) first hands
    # on what it still holds; the daemon thread would otherwise die with it.
    if not recompute_soon_wait(EXIT_WAIT_SECONDS):
        logger.error("exiting with recomputes not yet queued; the worker catches up when it restarts")


# -- the worker's job -------------------------------------------------------------------------------
# How long a direct call (`recompute`) waits for a recompute of the campaign running elsewhere.
LOCK_WAIT_SECONDS = 120.0


class RecomputeResult:
    """What `recompute_if_free` did."""

    DONE = "done"
    BUSY = "busy"  # another process holds the campaign's lock
    CURRENT = "current"  # only_if_owed, and nothing is owed


def recompute(campaign_id: int) -> CampaignProgress | None:
    """What a worker recomputes after answers: the campaign's mode's own recompute
    (`JudgingMode.recompute`), then the progress record, marking the campaign done once every
    pool item is judged. Idempotent; waits for a recompute of the campaign running elsewhere."""
    with recompute_lock(campaign_id, wait_seconds=LOCK_WAIT_SECONDS) as acquired:
        if not acquired:
            raise TimeoutError(
                f"campaign {campaign_id}'s recompute lock stayed taken for {LOCK_WAIT_SECONDS:.0f} s"
            )
        return _recompute_locked(campaign_id)


def recompute_if_free(campaign_id: int, *, only_if_owed: bool = False) -> str:
    """The worker's recompute: at once if no other process recomputes the campaign (else BUSY);
    with `only_if_owed` (a sweep's message) only if requests are still uncovered."""
    with recompute_lock(campaign_id) as acquired:
        if not acquired:
            return RecomputeResult.BUSY
        if only_if_owed and not _still_owed(campaign_id):
            return RecomputeResult.CURRENT
        _recompute_locked(campaign_id)
        return RecomputeResult.DONE


def _still_owed(campaign_id: int) -> bool:
    """Whether a sweep's recompute is still owed; when the cache cannot say (a busy Redis past its
    short timeout), it is: one recompute too many costs a little time, one too few a stale estimate."""
    try:
        return campaign_id in recompute_owed([campaign_id])
    except UNAVAILABLE as error:
        logger.warning(
            "cache unavailable; campaign %s's owed recompute runs without the check: %r", campaign_id, error
        )
        return True


def _recompute_locked(campaign_id: int) -> CampaignProgress | None:
    started = time.time()
    requests = recompute_started(campaign_id)
    campaign = Campaign.objects.filter(pk=campaign_id).first()
    if campaign is None:
        return None
    mode_of(campaign).recompute(campaign)
    record = _progress_record(campaign)
    _covered(campaign_id, requests)
    # Epoch seconds, so the runs of several workers can be laid side by side.
    logger.info("campaign %s recomputed: from %.3f to %.3f", campaign_id, started, time.time())
    return record


def recompute_queue_later(campaign_id: int) -> None:
    """Queue the campaign's recompute again after the spacing (its lock was taken): the marker stays,
    so judgments meanwhile still count on this recompute."""
    from labeling.tasks import campaign_recompute

    campaign_recompute.apply_async((campaign_id,), countdown=max(1, settings.LABELING_RECOMPUTE_MIN_SECONDS))


def recompute_sweep_grace() -> float:
    """How long a recompute may be owed with no recompute running before a sweep queues one: the
    spacing (a countdown a live worker holds) and two sweep periods."""
    return settings.LABELING_RECOMPUTE_MIN_SECONDS + 2 * settings.LABELING_SWEEP_SECONDS


class RecomputeSweep:
    """A live worker's check for recomputes owed and not coming: a campaign owed a recompute
    (`recompute_owed`) that no process has held the lock of for `grace` seconds gets one queued.
    The grace outlasts the spacing (a countdown in a live worker) and a margin, so the sweep only
    speaks when a recompute was lost: parked in a worker that died, or dropped with its message."""

    def __init__(self, grace: float) -> None:
        self.grace = grace
        # Campaign id -> (covered count, when it was first seen owed and unlocked with it).
        self._owed_since: dict[int, tuple[int, float]] = {}

    def __call__(self, now: float | None = None) -> list[int]:
        """One sweep; returns the campaigns it queued a recompute of."""
        from labeling.tasks import campaign_recompute

        now = time.monotonic() if now is None else now
        active = list(
            Campaign.objects.filter(status__in=[Campaign.Status.RUNNING, Campaign.Status.PAUSED]).values_list(
                "pk", flat=True
            )
        )
        try:
            owed = recompute_owed(active)
        except UNAVAILABLE as error:  # a slow or absent cache: the next round looks again
            logger.warning("cache unavailable; the recompute sweep waits for its next round: %r", error)
            return []
        queued = []
        for campaign_id in list(self._owed_since):
            if campaign_id not in owed:
                del self._owed_since[campaign_id]
        for campaign_id, covered in owed.items():
            if recompute_locked(campaign_id):
                self._owed_since.pop(campaign_id, None)
                continue
            seen = self._owed_since.get(campaign_id)
            if seen is None or seen[0] != covered:
                self._owed_since[campaign_id] = (covered, now)
            elif now - seen[1] >= self.grace:
                logger.warning("campaign %s is owed a recompute that has not come; queueing one", campaign_id)
                campaign_recompute.apply_async((campaign_id,), kwargs={"only_if_owed": True})
                self._owed_since[campaign_id] = (covered, now)
                queued.append(campaign_id)
        return queued


@transaction.atomic
def _progress_record(campaign: Campaign) -> CampaignProgress:
    progress = campaign_progress(campaign)
    if campaign.status == Campaign.Status.RUNNING and mode_of(campaign).finished(campaign, progress):
        Campaign.objects.filter(pk=campaign.pk).update(status=Campaign.Status.DONE)
    record, _ = CampaignProgress.objects.update_or_create(
        campaign_id=campaign.pk,
        defaults={
            "judgments": progress.judgments,
            "spent": progress.spent,
            "pool_size": progress.pool_size,
            "drawn": progress.drawn,
            "open_tasks": progress.open_tasks,
        },
    )
    return record
