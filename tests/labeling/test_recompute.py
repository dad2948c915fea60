"""Recompute coalescing under bursts: every burst of judgments ends with a recompute that counts them.

Two assessor processes (`tests.labeling.burst_assessor`, each with its own Django cache and
recompute thread) judge 200 items as fast as they can while a real Celery worker recomputes the
campaign: in the embedded default (SQLite, filesystem broker, file cache, no Redis), over a real
Redis, and over a Redis that hangs (SIGSTOP) for 10 s from early in the burst to past its end.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np
import pytest
import redis
from django.contrib.auth.models import AbstractBaseUser
from django.core.cache import cache

from labeling import recompute as pipeline
from labeling.models import Campaign, CampaignProgress, Judgment
from labeling.services.campaigns import campaign_assessors_assign, campaign_create, campaign_start
from sampling.models import EstimateSnapshot
from tests.conftest import REPO_ROOT, upload
from tests.labeling.helpers import queued_recomputes
from tests.servers import redis_server
from tests.workers import CeleryWorker, running_worker
from uploads.run_imports import runs_import

TOPICS, DOCUMENTS = 12, 25  # a pool of 300 items, one topic drawn at a time
PER_ASSESSOR = 100
JUDGMENTS = 2 * PER_ASSESSOR
# After the last judgment a snapshot must count it within this many seconds.
SNAPSHOT_SECONDS = 30.0
HANG_SECONDS = 10.0


@pytest.fixture
def big_campaign(
    coordinator: AbstractBaseUser, assessor: AbstractBaseUser, second_assessor: AbstractBaseUser
) -> Campaign:
    """A running campaign with more to judge than the burst (overlap 1, budget 400 judgments)."""
    campaign = campaign_create(
        creator=coordinator,
        name="burst",
        metric="DCG@10",
        grades=["Bad", "Fair", "Good"],
        budget=400,
        budget_unit="judgments",
        overlap=1,
    )
    pairs = [(q, d) for q in range(1, TOPICS + 1) for d in range(1, DOCUMENTS + 1)]
    run_a = "".join(f"{q} Q0 d{q}-{d} {d} {100 - d}.0 alpha\n" for q, d in pairs)
    run_b = "".join(f"{q} Q0 d{q}-{d} {DOCUMENTS + 1 - d} {d}.0 beta\n" for q, d in pairs)
    runs_import(campaign=campaign, files=[upload("a.run", run_a), upload("b.run", run_b)])
    campaign_assessors_assign(campaign=campaign, usernames=["alice", "bob"])
    return campaign_start(campaign=campaign)


@pytest.fixture
def embedded_worker(tmp_path: Path, settings: object) -> Iterator[CeleryWorker]:
    """A worker on the embedded default: filesystem broker and file cache under tmp_path/var."""
    with running_worker(None, tmp_path, settings) as handle:
        yield handle


@pytest.fixture
def redis_worker(redis_url: str, tmp_path: Path, settings: object) -> Iterator[CeleryWorker]:
    """A worker whose broker and cache are the session's Redis."""
    redis.Redis.from_url(redis_url).flushdb()  # no marker of an earlier test
    with running_worker(redis_url, tmp_path, settings) as handle:
        yield handle


@pytest.fixture
def own_redis() -> Iterator[str]:
    """A Redis of this test's own, to hang."""
    with redis_server() as url:
        yield url


def _burst(
    worker: CeleryWorker, campaign: Campaign, during: Callable[[], None] | None = None
) -> list[dict[str, object]]:
    """Two assessor processes judge PER_ASSESSOR items each; `during` runs meanwhile. Their reports."""
    reports = [worker.folder / f"{name}.json" for name in ("alice", "bob")]
    logs = [worker.folder / f"{name}.log" for name in ("alice", "bob")]
    processes = []
    for name, report, log in zip(("alice", "bob"), reports, logs, strict=True):
        with log.open("wb") as output:
            argv = [sys.executable, "-m", "tests.labeling.burst_assessor", str(campaign.pk), name]
            processes.append(
                subprocess.Popen(
                    [*argv, str(PER_ASSESSOR), str(report)],
                    cwd=REPO_ROOT,
                    env=worker.env(),
                    stdout=output,
                    stderr=subprocess.STDOUT,
                )
            )
    try:
        if during is not None:
            during()
        for process, log in zip(processes, logs, strict=True):
            assert process.wait(timeout=120) == 0, log.read_text(errors="replace")[-3000:]
    finally:
        for process in processes:
            if process.poll() is None:
                process.kill()
                process.wait()
    return [json.loads(report.read_text()) for report in reports]


def _last_judgment_at(reports: list[dict[str, object]]) -> float:
    return max(start + seconds for report in reports for start, seconds in report["answers"])  # type: ignore[attr-defined]


def _snapshot_counting_all(campaign: Campaign, last_judgment_at: float, worker: CeleryWorker) -> float:
    """Wait for a stored snapshot counting every judgment; seconds from the last judgment to it."""
    assert Judgment.objects.filter(campaign=campaign).count() == JUDGMENTS
    deadline = last_judgment_at + SNAPSHOT_SECONDS
    while time.time() < deadline:
        snapshot = EstimateSnapshot.objects.filter(campaign=campaign, judgments=JUDGMENTS).first()
        if snapshot is not None and CampaignProgress.objects.get(campaign=campaign).judgments == JUDGMENTS:
            return snapshot.created_at.timestamp() - last_judgment_at
        time.sleep(0.2)
    counted = list(EstimateSnapshot.objects.filter(campaign=campaign).values_list("judgments", flat=True))
    raise AssertionError(
        f"no snapshot counts all {JUDGMENTS} judgments {SNAPSHOT_SECONDS:.0f} s after the last one "
        f"(snapshots: {counted}); worker log:\n{worker.log.read_text(errors='replace')[-3000:]}"
    )


def test_it_takes_a_marker_its_own_unseen_earlier_attempt_set_for_its_own(campaign: Campaign) -> None:
    queued_recomputes()
    queued_key = f"labeling:campaign-refresh:{campaign.pk}"
    # An earlier attempt's add reached the cache but its reply timed out: the marker holds its token.
    assert cache.add(queued_key, "first-attempt")
    assert pipeline._recompute_queue_once(campaign.pk, "first-attempt") is True  # so it queues now
    assert pipeline._recompute_queue_once(campaign.pk, "someone-else") is False  # theirs is queued
    assert queued_recomputes() == [[campaign.pk]]


def test_it_queues_in_the_background_and_coalesces_until_a_refresh_starts(campaign: Campaign) -> None:
    queued_recomputes()
    for _ in range(3):
        pipeline.recompute_soon(campaign.pk)
    assert pipeline.recompute_soon_wait(timeout=10) is True
    assert queued_recomputes() == [[campaign.pk]]  # one queued recompute covers all three
    pipeline.recompute_started(campaign.pk)
    pipeline.recompute_soon(campaign.pk)
    assert pipeline.recompute_soon_wait(timeout=10) is True
    assert queued_recomputes() == [[campaign.pk]]


def test_judgments_of_one_moment_are_handled_in_one_round_and_later_ones_in_another(
    campaign: Campaign,
) -> None:
    queued_recomputes()
    counted = pipeline._requests_counted([campaign.pk])[campaign.pk]
    queue = pipeline.RecomputeQueue(gather_seconds=1.0)  # a slow moment of the test is no new round
    for _ in range(20):
        queue.put(campaign.pk)
    assert queue.wait(timeout=10) is True
    assert pipeline._requests_counted([campaign.pk])[campaign.pk] == counted + 1
    assert queued_recomputes() == [[campaign.pk]]
    # A judgment after that round is a round of its own: counted, so the sweep sees it owed if the
    # recompute queued for the first round has started before it.
    pipeline.recompute_started(campaign.pk)
    queue.put(campaign.pk)
    assert queue.wait(timeout=10) is True
    assert pipeline._requests_counted([campaign.pk])[campaign.pk] == counted + 2
    assert queued_recomputes() == [[campaign.pk]]


def test_it_gives_a_forked_child_a_queue_of_its_own(campaign: Campaign) -> None:
    pipeline.recompute_soon(campaign.pk)
    assert pipeline.recompute_soon_wait(timeout=10) is True
    parent = pipeline._recompute_queue()
    child = os.fork()
    if child == 0:  # the child: exit status 0 if its queue is a new one, with no thread yet
        fresh = pipeline._recompute_queue()
        os._exit(0 if fresh is not parent and fresh._thread is None else 1)
    _, status = os.waitpid(child, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    assert pipeline._recompute_queue() is parent


@pytest.mark.servers
@pytest.mark.alone
@pytest.mark.django_db(transaction=True)
def test_it_refreshes_after_a_burst_in_the_embedded_default(
    embedded_worker: CeleryWorker, big_campaign: Campaign
) -> None:
    env = embedded_worker.env()
    assert "REDIS_URL" not in env
    reports = _burst(embedded_worker, big_campaign)
    assert all(report["flushed"] for report in reports)
    delay = _snapshot_counting_all(big_campaign, _last_judgment_at(reports), embedded_worker)
    # The worker and the assessors shared the file cache and the filesystem queue under VAR_DIR.
    var = Path(env["VAR_DIR"])
    assert (var / "cache").is_dir() and (var / "celery" / "queue").is_dir()
    assert "campaign_refresh" in embedded_worker.log.read_text(errors="replace")
    print(f"embedded: snapshot {delay:.1f} s after the last judgment")


@pytest.mark.servers
@pytest.mark.alone
@pytest.mark.django_db(transaction=True)
def test_it_refreshes_after_a_burst_over_redis(redis_worker: CeleryWorker, big_campaign: Campaign) -> None:
    reports = _burst(redis_worker, big_campaign)
    assert all(report["flushed"] for report in reports)
    delay = _snapshot_counting_all(big_campaign, _last_judgment_at(reports), redis_worker)
    print(f"redis: snapshot {delay:.1f} s after the last judgment")


@pytest.mark.servers
@pytest.mark.alone
@pytest.mark.django_db(transaction=True)
def test_it_keeps_judging_while_redis_hangs_and_refreshes_once_it_is_back(
    own_redis: str, tmp_path: Path, settings: object, big_campaign: Campaign
) -> None:
    pid = int(redis.Redis.from_url(own_redis).info("server")["process_id"])
    hang: list[float] = []

    def hang_redis_early_in_the_burst() -> None:
        deadline = time.monotonic() + 60
        while Judgment.objects.filter(campaign=big_campaign).count() < 30:
            assert time.monotonic() < deadline, "the burst did not start"
            time.sleep(0.02)
        os.kill(pid, signal.SIGSTOP)
        try:
            hang.append(time.time())
            time.sleep(HANG_SECONDS)
        finally:
            os.kill(pid, signal.SIGCONT)
        hang.append(time.time())

    with running_worker(own_redis, tmp_path, settings) as worker:
        reports = _burst(worker, big_campaign, during=hang_redis_early_in_the_burst)
        assert all(report["flushed"] for report in reports)
        last = _last_judgment_at(reports)
        delay = _snapshot_counting_all(big_campaign, last, worker)
    stopped, resumed = hang
    durations = [
        seconds
        for report in reports
        for start, seconds in report["answers"]  # type: ignore[attr-defined]
        if stopped <= start <= resumed
    ]
    # Judging went on while Redis hung, each answer well clear of the cache and broker timeouts.
    assert len(durations) >= 50, len(durations)
    p95 = float(np.percentile(durations, 95))
    assert p95 < 0.25, p95
    # The burst ended while Redis hung: the recompute waited for it instead of being lost.
    assert last < resumed
    print(
        f"hung redis: {len(durations)} answers during the hang, p95 {1000 * p95:.1f} ms, "
        f"max {1000 * max(durations):.1f} ms; last judgment {resumed - last:.1f} s before SIGCONT; "
        f"snapshot {delay:.1f} s after the last judgment"
    )
