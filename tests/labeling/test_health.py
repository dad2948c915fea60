"""Freshness for monitoring (operations.freshness): the estimates API and `GET /api/health/` say
how far each campaign's recomputed state is behind its answers; with a real worker the staleness
grows while the worker is stopped and drops back to 0 once it runs again."""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import timedelta

import pytest
from django.contrib.auth.models import AbstractBaseUser
from django.utils import timezone
from rest_framework.test import APIClient

from graded.claims import task_next
from graded.judging import task_answer
from labeling.models import Campaign, CampaignProgress
from labeling.recompute import recompute
from tests.workers import CeleryWorker

Api = Callable[[AbstractBaseUser | None], APIClient]


def _judge(campaign: Campaign, assessor: AbstractBaseUser, count: int) -> None:
    for _ in range(count):
        task = task_next(campaign=campaign, assessor=assessor)
        assert task is not None
        task_answer(task=task, assessor=assessor, grade=1, seconds=2.0)


def test_health_says_stale_once_answers_wait_past_the_limit(
    campaign: Campaign, assessor: AbstractBaseUser, admin: AbstractBaseUser, api: Api, settings: object
) -> None:
    _judge(campaign, assessor, 2)
    recompute(campaign.pk)
    fresh = api(None).get("/api/health/")
    assert fresh.status_code == 200 and fresh.json()["status"] == "ok"
    assert fresh.json()["answers_behind"] == 0 and "campaigns" not in fresh.json(), "no campaign to anonymous"
    _judge(campaign, assessor, 3)
    # The last recompute was 10 minutes ago: 3 answers have waited since.
    CampaignProgress.objects.filter(campaign=campaign).update(
        recomputed_at=timezone.now() - timedelta(minutes=10)
    )
    settings.HEALTH_STALE_SECONDS = 60  # type: ignore[attr-defined]
    stale = api(admin).get("/api/health/")
    assert stale.status_code == 503 and stale.json()["status"] == "stale"
    [row] = stale.json()["campaigns"]
    assert row["campaign"] == campaign.pk and row["behind"] == 3 and row["counted"] == 2
    assert 590 <= row["stale_seconds"] <= 700 and stale.json()["stale_seconds_max"] == row["stale_seconds"]
    estimates = api(admin).get(f"/api/campaigns/{campaign.pk}/estimates/").json()
    assert estimates["freshness"]["behind"] == 3 and estimates["freshness"]["stale_seconds"] >= 590
    recompute(campaign.pk)
    again = api(admin).get("/api/health/").json()
    assert again["status"] == "ok" and again["campaigns"][0]["stale_seconds"] == 0.0


@pytest.mark.servers
@pytest.mark.django_db(transaction=True)
def test_staleness_grows_while_the_worker_is_stopped_and_drops_once_it_runs(
    celery_worker: CeleryWorker,
    campaign: Campaign,
    assessor: AbstractBaseUser,
    admin: AbstractBaseUser,
    api: Api,
) -> None:
    def health_row() -> dict:
        return api(admin).get("/api/health/").json()["campaigns"][0]

    def wait(condition: Callable[[dict], bool], seconds: float) -> dict:
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            row = health_row()
            if condition(row):
                return row
            time.sleep(0.2)
        raise AssertionError(f"{health_row()}\n{celery_worker.log.read_text(errors='replace')[-2000:]}")

    _judge(campaign, assessor, 2)
    wait(lambda row: row["behind"] == 0 and row["counted"] == 2, 60)
    celery_worker.stop()
    _judge(campaign, assessor, 2)
    first = wait(lambda row: row["behind"] == 2, 10)
    time.sleep(1.5)
    later = health_row()
    assert later["behind"] == 2 and later["stale_seconds"] >= first["stale_seconds"] + 1.0, (first, later)
    celery_worker.start()
    wait(lambda row: row["behind"] == 0 and row["stale_seconds"] == 0.0, 60)
