"""The recompute pipeline's guards for several workers and nodes: one recompute of a campaign at a
time (a lock the database frees when its holder dies), the counts that tell a live worker's
sweep a recompute was lost, catch-ups coalesced, and a finished pool ending the campaign.

These run on SQLite and, through `test_postgresql.py`, on PostgreSQL (advisory locks)."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from collections.abc import Iterator

import pytest
import redis.exceptions
from django.contrib.auth.models import AbstractBaseUser
from django.core.cache import cache

from graded.claims import task_next
from graded.judging import task_answer
from infrastructure.recompute_lock import recompute_lock, recompute_locked
from labeling import recompute as pipeline
from labeling.models import Campaign
from labeling.tasks import campaign_recompute, campaigns_catch_up
from tests.conftest import REPO_ROOT
from tests.labeling.helpers import queued_recomputes
from tests.workers import _database_url

# Database-specific: `make test` runs this module again on PostgreSQL (tests/test_database_specific.py).
pytestmark = pytest.mark.postgresql

HOLDER = """
import sys, time
import django
django.setup()
from infrastructure.recompute_lock import recompute_lock
with recompute_lock(int(sys.argv[1])) as acquired:
    print("held" if acquired else "refused", flush=True)
    time.sleep(120)
"""


@pytest.fixture
def holder_process(campaign: Campaign) -> Iterator[subprocess.Popen[str]]:
    """Another process (as another worker would be) holding the campaign's recompute lock."""
    env = {**os.environ, "DATABASE_URL": _database_url(), "DJANGO_SETTINGS_MODULE": "config.settings"}
    process = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(campaign.pk)],
        cwd=REPO_ROOT,
        env=env,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stdout is not None and process.stdout.readline().strip() == "held"
        yield process
    finally:
        process.kill()
        process.wait()


@pytest.mark.django_db(transaction=True)
def test_a_recompute_waits_for_another_process_and_takes_over_when_it_dies(
    campaign: Campaign, holder_process: subprocess.Popen[str]
) -> None:
    assert recompute_locked(campaign.pk)
    assert pipeline.recompute_if_free(campaign.pk) == pipeline.RecomputeResult.BUSY
    # Busy, and queued again after the spacing.
    assert campaign_recompute(campaign.pk) == pipeline.RecomputeResult.BUSY
    holder_process.kill()  # a worker killed mid-recompute: no shutdown, no unlock
    holder_process.wait()
    with recompute_lock(campaign.pk, wait_seconds=10) as acquired:
        assert acquired
    assert pipeline.recompute_if_free(campaign.pk) == pipeline.RecomputeResult.DONE


@pytest.mark.django_db(transaction=True)
def test_the_lock_excludes_another_thread_and_is_free_again_after(campaign: Campaign) -> None:
    entered, release = threading.Event(), threading.Event()
    seen: list[bool] = []

    def hold() -> None:
        from django.db import connection

        with recompute_lock(campaign.pk) as acquired:
            seen.append(acquired)
            entered.set()
            release.wait(10)
        connection.close()

    thread = threading.Thread(target=hold)
    thread.start()
    assert entered.wait(10) and seen == [True]
    with recompute_lock(campaign.pk) as acquired:
        assert not acquired
    other = Campaign.objects.exclude(pk=campaign.pk).first()
    if other is not None:  # a lock is per campaign
        with recompute_lock(other.pk) as acquired:
            assert acquired
    release.set()
    thread.join(10)
    with recompute_lock(campaign.pk) as acquired:
        assert acquired


def test_requests_are_counted_and_a_recompute_covers_what_it_started_from(campaign: Campaign) -> None:
    cache.clear()
    assert pipeline.recompute_owed([campaign.pk]) == {}
    assert pipeline.recompute_queue(campaign.pk) is True
    assert pipeline.recompute_queue(campaign.pk) is False  # coalesced, but counted
    assert pipeline.recompute_owed([campaign.pk]) == {campaign.pk: 0}
    pipeline.recompute(campaign.pk)
    assert pipeline.recompute_owed([campaign.pk]) == {}
    # A request that arrives while a recompute runs is owed by it.
    requests = pipeline.recompute_started(campaign.pk)
    assert requests == 2
    pipeline.recompute_queue(campaign.pk)
    assert pipeline.recompute_owed([campaign.pk]) == {campaign.pk: 2}
    queued_recomputes()


def test_a_count_of_requests_that_went_back_is_owed_one_recompute(campaign: Campaign) -> None:
    cache.clear()
    pipeline.recompute_queue(campaign.pk)
    pipeline.recompute(campaign.pk)
    assert pipeline.recompute_owed([campaign.pk]) == {}
    # The counter restarts while the covered count stays (an upgrade from a version that kept the
    # count among the file cache's values; a key Redis evicted): a recompute may be owed.
    cache.set(pipeline._count_keys(campaign.pk)[1], 50, timeout=None)
    assert pipeline.recompute_owed([campaign.pk]) == {campaign.pk: 50}
    assert pipeline.recompute_if_free(campaign.pk, only_if_owed=True) == pipeline.RecomputeResult.DONE
    assert pipeline.recompute_owed([campaign.pk]) == {}
    queued_recomputes()


def test_the_sweep_queues_only_a_refresh_that_is_owed_and_not_coming(campaign: Campaign) -> None:
    cache.clear()
    sweep = pipeline.RecomputeSweep(grace=10.0)
    assert sweep(now=0.0) == []  # nothing requested
    pipeline.recompute_queue(campaign.pk)  # the message then dies with its worker
    queued_recomputes()
    assert sweep(now=100.0) == []  # first seen owed
    assert sweep(now=105.0) == []  # within the grace: the countdown of a live worker
    assert sweep(now=111.0) == [campaign.pk]
    assert sweep(now=115.0) == []  # not again within the grace
    assert sweep(now=122.0) == [campaign.pk]  # still owed: once more
    assert pipeline.recompute_if_free(campaign.pk, only_if_owed=True) == pipeline.RecomputeResult.DONE
    assert pipeline.recompute_if_free(campaign.pk, only_if_owed=True) == pipeline.RecomputeResult.CURRENT
    assert sweep(now=200.0) == [] and sweep(now=300.0) == []
    queued_recomputes()


@pytest.mark.django_db(transaction=True)
def test_the_sweep_leaves_a_campaign_alone_while_its_recompute_runs(
    campaign: Campaign, holder_process: subprocess.Popen[str]
) -> None:
    cache.clear()
    pipeline.recompute_queue(campaign.pk)
    sweep = pipeline.RecomputeSweep(grace=1.0)
    assert sweep(now=0.0) == [] and sweep(now=50.0) == []
    holder_process.kill()
    holder_process.wait()
    assert sweep(now=60.0) == [] and sweep(now=62.0) == [campaign.pk]
    queued_recomputes()


def test_two_catch_ups_at_once_queue_one_recompute(campaign: Campaign) -> None:
    cache.clear()
    assert campaigns_catch_up() == 1
    assert campaigns_catch_up() == 0  # the second worker to start finds it queued
    pipeline.recompute_started(campaign.pk)  # the recompute starts: the next catch-up queues again
    assert campaigns_catch_up() == 1
    queued_recomputes()


def test_a_finished_pool_ends_the_campaign(campaign: Campaign, assessor: AbstractBaseUser) -> None:
    for _ in range(100):
        task = task_next(campaign=campaign, assessor=assessor)
        if task is None:
            break
        task_answer(task=task, assessor=assessor, grade=1, seconds=2.0)
    # Whatever the draws' flag says (the last top-up may have stopped on its item target): every
    # item is judged and none is open.
    Campaign.objects.filter(pk=campaign.pk).update(blocked="")
    pipeline.recompute(campaign.pk)
    campaign.refresh_from_db()
    assert campaign.status == Campaign.Status.DONE
    queued_recomputes()


def test_a_pool_with_work_left_keeps_running(campaign: Campaign, assessor: AbstractBaseUser) -> None:
    task = task_next(campaign=campaign, assessor=assessor)
    assert task is not None
    task_answer(task=task, assessor=assessor, grade=1, seconds=2.0)
    pipeline.recompute(campaign.pk)
    campaign.refresh_from_db()
    assert campaign.status == Campaign.Status.RUNNING
    queued_recomputes()


def test_a_sweep_round_runs_every_check_and_survives_a_failing_one(caplog: pytest.LogCaptureFixture) -> None:
    """A bug is logged with its traceback; a cache or broker that is away (expected in operation)
    is one warning line."""
    from labeling import sweeper

    calls: list[str] = []

    def failing() -> None:
        calls.append("failing")
        raise RuntimeError("boom")

    def unreachable() -> None:
        calls.append("unreachable")
        raise ConnectionRefusedError("the cache is away")

    saved = list(sweeper._sweeps)
    sweeper._sweeps[:] = [failing, unreachable, lambda: calls.append("next")]
    try:
        with caplog.at_level("WARNING", logger="labeling.sweeper"):
            sweeper.sweep_once()
        assert calls == ["failing", "unreachable", "next"]
    finally:
        sweeper._sweeps[:] = saved
    [bug] = [record for record in caplog.records if "boom" in record.getMessage() or record.exc_info]
    assert bug.levelname == "ERROR" and bug.exc_info is not None
    [away] = [record for record in caplog.records if "the cache is away" in record.getMessage()]
    assert away.levelname == "WARNING" and away.exc_info is None


def test_the_sweep_waits_for_its_next_round_when_the_cache_times_out(
    campaign: Campaign, settings: object, caplog: pytest.LogCaptureFixture
) -> None:
    """The cache's socket timeout is short (a request must not wait); a busy Redis then times out
    the sweep's read, which is a warning and a skipped round, not an error."""
    settings.CACHES = {  # type: ignore[attr-defined]
        "default": {
            "BACKEND": "django.core.cache.backends.redis.RedisCache",
            "LOCATION": "redis://127.0.0.1:9/0",  # nothing listens on the discard port
            "OPTIONS": {"socket_connect_timeout": 0.05, "socket_timeout": 0.05},
        }
    }
    sweep = pipeline.RecomputeSweep(grace=0.0)
    with caplog.at_level("WARNING", logger="labeling.recompute"):
        assert sweep(now=0.0) == [] and sweep(now=10.0) == []
    assert "recompute sweep waits for its next round" in caplog.text


def test_a_sweep_s_recompute_runs_when_the_cache_cannot_say_whether_it_is_still_owed(
    campaign: Campaign, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """The sweep's message is checked against the counts again before it runs; a cache timing out
    on that read (a loaded Redis past its 50 ms, as CI once saw) must not fail the task with an
    error: the recompute runs. Only that read fails here: a cache away for good would make the
    recompute wait out its marker (`recompute_started`), which another test covers."""

    def timed_out(keys: list[str]) -> dict[str, object]:
        raise redis.exceptions.TimeoutError("Timeout reading from socket")

    cache.clear()
    pipeline.recompute_queue(campaign.pk)
    queued_recomputes()
    monkeypatch.setattr(cache, "get_many", timed_out)
    with caplog.at_level("WARNING", logger="labeling.recompute"):
        outcome = pipeline.recompute_if_free(campaign.pk, only_if_owed=True)
    monkeypatch.undo()
    assert outcome == pipeline.RecomputeResult.DONE
    assert "owed recompute runs without the check" in caplog.text
    assert not [record for record in caplog.records if record.levelname == "ERROR"]
    assert pipeline.recompute_owed([campaign.pk]) == {}, "the recompute covered the request"
