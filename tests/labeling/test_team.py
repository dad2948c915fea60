"""A team judging at once: the queue of draws grows with the active assessors, and `next` never
answers 204 while work and budget remain, however many assessors empty the queue together."""

from __future__ import annotations

import threading
from collections.abc import Callable
from datetime import timedelta

import pytest
from django.contrib.auth.models import AbstractBaseUser
from django.db import connection
from django.utils import timezone
from rest_framework.test import APIClient

from labeling.models import Campaign, Judgment, Task
from labeling.services.campaigns import (
    campaign_assessors_assign,
    campaign_create,
    campaign_start,
    campaign_update,
)
from sampling.draws import assessors_active_forget, queue_target
from tests.conftest import upload
from uploads.run_imports import runs_import

# Database-specific: `make test` runs this module again on PostgreSQL (tests/test_database_specific.py).
pytestmark = pytest.mark.postgresql

TOPICS, DEPTH = 12, 25


def _big_campaign(coordinator: AbstractBaseUser, usernames: list[str], strategy: str = "passive") -> Campaign:
    """Far more unjudged items than the assessors below will judge, and budget for all of them."""
    run = "".join(f"{q} Q0 d{q}-{d} {d} {100 - d}.0 r\n" for q in range(TOPICS) for d in range(DEPTH))
    campaign = campaign_create(
        creator=coordinator,
        name="team",
        metric=f"DCG@{DEPTH}",
        grades=["Bad", "Fair", "Good"],
        budget=10_000,
        budget_unit="judgments",
        pool_depth=DEPTH,
    )
    campaign_update(campaign=campaign, strategy=strategy)
    runs_import(campaign=campaign, files=[upload("a.run", run)])
    campaign_assessors_assign(campaign=campaign, usernames=usernames)
    return campaign_start(campaign=campaign)


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("strategy", ["passive", "items"])
def test_it_never_answers_204_to_a_team_while_work_remains(
    coordinator: AbstractBaseUser,
    make_user: Callable[..., AbstractBaseUser],
    settings: object,
    strategy: str,
) -> None:
    # A queue of one item, refilled only by the requests themselves (no worker): sixteen
    # assessors empty it all the time, and each of them must still be served at once.
    settings.LABELING_QUEUE_TARGET = 1  # type: ignore[attr-defined]
    settings.LABELING_QUEUE_PER_ASSESSOR = 1  # type: ignore[attr-defined]
    users = [make_user(f"team{index:02d}", "assessor") for index in range(16)]
    campaign = _big_campaign(coordinator, [user.get_username() for user in users], strategy)
    rounds = 8
    barrier = threading.Barrier(len(users))
    served: list[tuple[int, int]] = []
    refusals: list[str] = []
    failures: list[BaseException] = []
    lock = threading.Lock()

    def judge(user: AbstractBaseUser) -> None:
        client = APIClient()
        client.force_authenticate(user=user)
        try:
            barrier.wait()
            for _ in range(rounds):
                response = client.get(f"/api/campaigns/{campaign.pk}/next/")
                if response.status_code != 200:
                    with lock:
                        refusals.append(f"next {response.status_code}")
                    continue
                task = response.json()["task"]
                answer = client.post(
                    f"/api/tasks/{task}/answer/", {"grade": 1, "seconds": 2.0}, format="json"
                )
                with lock:
                    served.append((task, user.pk))
                    if answer.status_code != 201:
                        refusals.append(f"answer {answer.status_code}")
        except BaseException as error:  # "database is locked" and the like: the assertion shows it
            failures.append(error)
        finally:
            connection.close()

    threads = [threading.Thread(target=judge, args=(user,)) for user in users]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert failures == []
    assert refusals == []
    assert len(served) == len(users) * rounds
    # No item was served to two assessors, and every answer was stored once.
    assert len({task for task, _ in served}) == len(served)
    assert Judgment.objects.filter(campaign=campaign).count() == len(served)


@pytest.mark.django_db
def test_it_keeps_more_draws_queued_the_more_assessors_are_active(
    campaign: Campaign, make_user: Callable[..., AbstractBaseUser], settings: object
) -> None:
    settings.LABELING_QUEUE_TARGET = 3  # type: ignore[attr-defined]
    settings.LABELING_QUEUE_PER_ASSESSOR = 2  # type: ignore[attr-defined]
    settings.LABELING_ACTIVE_MINUTES = 10  # type: ignore[attr-defined]
    assessors_active_forget()
    assert queue_target(campaign.pk) == 3  # nobody active yet: the floor
    now = timezone.now()
    users = [make_user(f"active{index}", "assessor") for index in range(4)]
    tasks = list(Task.objects.filter(campaign=campaign)[: len(users) + 1])
    for task, user in zip(tasks, users, strict=False):
        Task.objects.filter(pk=task.pk).update(assessor=user, leased_at=now - timedelta(minutes=1))
    # One more who leased long ago no longer counts.
    Task.objects.filter(pk=tasks[-1].pk).update(assessor=users[0], leased_at=now - timedelta(minutes=30))
    assessors_active_forget()
    assert queue_target(campaign.pk, now) == 2 * 4
    settings.LABELING_QUEUE_TARGET = 20  # type: ignore[attr-defined]
    assert queue_target(campaign.pk, now) == 20  # the floor still holds
