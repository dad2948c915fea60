"""The recompute task in a real Celery worker process over a real Redis, and judging with the broker down."""

from __future__ import annotations

import logging
import time
from pathlib import Path

import pytest
from django.contrib.auth.models import AbstractBaseUser
from django.core.cache import cache

from config.celery import app as celery_app
from graded.claims import task_next
from graded.judging import task_answer
from labeling.models import Campaign, CampaignProgress, Task
from labeling.recompute import recompute_queue, recompute_soon_wait
from sampling.models import EstimateSnapshot, SamplingState
from tests.servers import free_port
from tests.workers import use_broker

pytestmark = [pytest.mark.servers, pytest.mark.alone, pytest.mark.django_db(transaction=True)]


def _wait_for(condition: object, seconds: float, log: Path) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():  # type: ignore[operator]
            return
        time.sleep(0.2)
    raise AssertionError(f"timed out; worker log:\n{log.read_text(errors='replace')[-3000:]}")


def test_it_refreshes_the_campaign_in_a_real_worker_after_a_judgment(
    worker: Path, campaign: Campaign, assessor: AbstractBaseUser
) -> None:
    assert not EstimateSnapshot.objects.filter(campaign=campaign).exists()
    task = task_next(campaign=campaign, assessor=assessor)
    task_answer(task=task, assessor=assessor, grade=1, seconds=2.0)  # enqueues on commit
    _wait_for(lambda: CampaignProgress.objects.get(campaign=campaign).judgments == 1, 60, worker)
    progress = CampaignProgress.objects.get(campaign=campaign)
    assert progress.pool_size == 21 and progress.spent == 1.0
    assert progress.open_tasks == Task.objects.filter(campaign=campaign, answered_at__isnull=True).count()
    # The worker refitted the label model on the judgment and stored a snapshot of the estimates.
    state = SamplingState.objects.get(campaign=campaign)
    assert state.label_model["n_labels"] == 1
    assert EstimateSnapshot.objects.filter(campaign=campaign, judgments=1).exists()
    assert "campaign_refresh" in worker.read_text(errors="replace")


def test_it_keeps_judging_when_the_broker_is_down_and_queues_the_refresh_once_it_is_back(
    campaign: Campaign, assessor: AbstractBaseUser, caplog: pytest.LogCaptureFixture
) -> None:
    use_broker(f"redis://127.0.0.1:{free_port()}/0")  # nothing listens there
    cache.clear()
    try:
        with caplog.at_level(logging.WARNING, logger="labeling.recompute"):
            # The synchronous enqueue reports the failure and leaves no marker behind.
            assert recompute_queue(campaign.pk) is False
            assert "could not enqueue campaign_refresh" in caplog.text
            # An unreachable broker is expected in operation: one warning line, no traceback.
            assert all(record.exc_info is None for record in caplog.records)
            assert cache.get(f"labeling:campaign-refresh:{campaign.pk}") is None
            task = task_next(campaign=campaign, assessor=assessor)
            started = time.monotonic()
            judgment, created = task_answer(task=task, assessor=assessor, grade=2, seconds=1.0)
            elapsed = time.monotonic() - started
            assert created and judgment.pk
            assert elapsed < 0.2  # the broker is the background thread's business
            # The recompute is held, not dropped: still pending while the broker stays down.
            assert recompute_soon_wait(timeout=1.0) is False
            assert "will retry" in caplog.text
        assert task_next(campaign=campaign, assessor=assessor) is not None
        use_broker("memory://")
        with celery_app.connection_for_write() as connection:
            connection.SimpleQueue("celery").clear()
        assert recompute_soon_wait(timeout=10.0) is True
        with celery_app.connection_for_write() as connection:
            message = connection.SimpleQueue("celery").get(timeout=1)
        assert message.headers["task"] == "labeling.tasks.campaign_refresh"
        assert message.decode()[0] == [campaign.pk]
    finally:
        use_broker("memory://")


def test_it_spaces_refreshes_out_and_still_follows_every_judgment(
    worker: Path, campaign: Campaign, assessor: AbstractBaseUser
) -> None:
    # The fixture spaces recomputes 2 s apart: the first judgment is recomputed at once, the four
    # that follow within a second share one recompute that waits out the rest of the 2 s.
    first = task_next(campaign=campaign, assessor=assessor)
    task_answer(task=first, assessor=assessor, grade=1, seconds=2.0)
    _wait_for(lambda: CampaignProgress.objects.get(campaign=campaign).judgments == 1, 60, worker)
    for _ in range(4):
        task = task_next(campaign=campaign, assessor=assessor)
        task_answer(task=task, assessor=assessor, grade=0, seconds=2.0)
    _wait_for(lambda: CampaignProgress.objects.get(campaign=campaign).judgments == 5, 60, worker)
    snapshots = list(EstimateSnapshot.objects.filter(campaign=campaign).order_by("id"))
    assert [snapshot.judgments for snapshot in snapshots][-1] == 5
    assert len(snapshots) <= 3, [snapshot.judgments for snapshot in snapshots]
    gaps = [
        (b.created_at - a.created_at).total_seconds() for a, b in zip(snapshots, snapshots[1:], strict=False)
    ]
    assert all(gap >= 1.5 for gap in gaps), gaps
