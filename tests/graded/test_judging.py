"""Leasing, answering, undo, overlap, budget, and races between assessors."""

from __future__ import annotations

import threading
from collections.abc import Callable
from datetime import timedelta

import pytest
from django.contrib.auth.models import AbstractBaseUser
from django.core.cache import cache
from django.db import DatabaseError, connection
from django.utils import timezone
from rest_framework.test import APIClient

from graded.claims import task_next
from graded.judging import judgment_undo, task_answer
from labeling.leases import LeaseConflict, UndoNotAllowed
from labeling.models import Campaign, Draw, Judgment, PoolItem, Task
from labeling.modes import campaign_progress
from labeling.recompute import recompute_countdown, recompute_queue, recompute_started
from labeling.services.campaigns import (
    campaign_assessors_assign,
    campaign_create,
    campaign_start,
    campaign_update,
)
from tests.conftest import RUN_A, upload
from tests.faults import inserts_refused
from tests.graded.helpers import claim_at_once
from uploads.imports import qrels_import
from uploads.run_imports import runs_import

# Database-specific: `make test` runs this module again on PostgreSQL (tests/test_database_specific.py).
pytestmark = pytest.mark.postgresql


def test_it_leases_distinct_items_and_records_the_draw_propensity(
    campaign: Campaign, assessor: AbstractBaseUser, second_assessor: AbstractBaseUser
) -> None:
    first = task_next(campaign=campaign, assessor=assessor)
    second = task_next(campaign=campaign, assessor=second_assessor)
    assert first is not None and second is not None
    assert (first.topic_id, first.document_id) != (second.topic_id, second.document_id)
    topics = PoolItem.objects.filter(campaign=campaign).values("topic_id").distinct().count()
    draws = list(Draw.objects.filter(campaign=campaign).order_by("order"))
    # Passive: topics uniformly with replacement, q = 1 / (number of topics) at every draw.
    assert [draw.propensity for draw in draws] == pytest.approx([1 / topics] * len(draws))
    assert {draw.kind for draw in draws} == {"query"} and topics == 3
    assert [draw.order for draw in draws] == list(range(1, len(draws) + 1))
    # A topic's first draw asks for every pool item of it; a repeat asks for nothing.
    seen: set[int] = set()
    for draw in draws:
        items = PoolItem.objects.filter(campaign=campaign, topic_id=draw.topic_id).count()
        assert draw.tasks.count() == (0 if draw.topic_id in seen else items)
        seen.add(draw.topic_id)


def test_it_gives_an_assessor_back_their_current_task(campaign: Campaign, assessor: AbstractBaseUser) -> None:
    first = task_next(campaign=campaign, assessor=assessor)
    again = task_next(campaign=campaign, assessor=assessor)
    assert first is not None and again is not None and again.pk == first.pk


def test_it_stores_one_judgment_for_a_double_submit(campaign: Campaign, assessor: AbstractBaseUser) -> None:
    task = task_next(campaign=campaign, assessor=assessor)
    assert task is not None
    judgment, created = task_answer(task=task, assessor=assessor, grade=2, seconds=4.5)
    repeat, created_again = task_answer(task=task, assessor=assessor, grade=1, seconds=9.0)
    assert (created, created_again) == (True, False)
    assert repeat.pk == judgment.pk and repeat.grade == 2
    assert Judgment.objects.filter(task=task).count() == 1
    stored = Judgment.objects.get(task=task)
    assert (stored.assessor_id, stored.seconds, stored.draw_id) == (assessor.pk, 4.5, task.draw_id)


def test_it_refuses_an_expired_or_foreign_lease(
    campaign: Campaign, assessor: AbstractBaseUser, second_assessor: AbstractBaseUser
) -> None:
    now = timezone.now()
    task = task_next(campaign=campaign, assessor=assessor, now=now)
    assert task is not None
    with pytest.raises(LeaseConflict):
        task_answer(task=task, assessor=second_assessor, grade=1, seconds=1.0, now=now)
    later = now + timedelta(seconds=campaign.lease_seconds + 1)
    with pytest.raises(LeaseConflict):
        task_answer(task=task, assessor=assessor, grade=1, seconds=1.0, now=later)
    assert not Judgment.objects.filter(task=task).exists()


def test_it_returns_expired_leases_to_the_pool(
    draft_campaign: Campaign, assessor: AbstractBaseUser, second_assessor: AbstractBaseUser
) -> None:
    campaign_update(campaign=draft_campaign, budget=1, strategy="items")
    campaign_assessors_assign(campaign=draft_campaign, usernames=["alice", "bob"])
    campaign = campaign_start(campaign=draft_campaign)
    now = timezone.now()
    held = task_next(campaign=campaign, assessor=assessor, now=now)
    assert held is not None
    # Budget 1: the only task is leased, so the other assessor gets nothing ...
    assert task_next(campaign=campaign, assessor=second_assessor, now=now) is None
    # ... until the lease expires.
    later = now + timedelta(seconds=campaign.lease_seconds + 1)
    taken = task_next(campaign=campaign, assessor=second_assessor, now=later)
    assert taken is not None and taken.pk == held.pk
    with pytest.raises(LeaseConflict):
        task_answer(task=held, assessor=assessor, grade=0, seconds=1.0, now=later)
    judgment, created = task_answer(task=taken, assessor=second_assessor, grade=1, seconds=2.0, now=later)
    assert created and judgment.assessor_id == second_assessor.pk


def test_it_never_offers_an_answered_task_to_another_assessor_once_its_lease_ran_out(
    campaign: Campaign, assessor: AbstractBaseUser, second_assessor: AbstractBaseUser
) -> None:
    # An answered task keeps its lease columns, so its lease runs out like any other: only the
    # answer keeps the claim statement off it, for every claimant and not just its holder.
    now = timezone.now()
    answered = task_next(campaign=campaign, assessor=assessor, now=now)
    assert answered is not None
    task_answer(task=answered, assessor=assessor, grade=2, seconds=1.0, now=now)
    later = now + timedelta(seconds=campaign.lease_seconds + 1)
    taken = task_next(campaign=campaign, assessor=second_assessor, now=later)
    assert taken is not None and taken.pk != answered.pk
    stored = Task.objects.get(pk=answered.pk)
    assert (stored.assessor_id, stored.answered_at) == (assessor.pk, now)
    judgments = Judgment.objects.filter(task_id=answered.pk).values_list("assessor_id", "grade")
    assert list(judgments) == [(assessor.pk, 2)]


# The rule at the boundary (labeling.leases, and the claim and answer statements here): a lease
# runs out strictly after `lease_expires_at`. At that instant its holder may still answer and
# nobody else may take the task; a microsecond later it is the other way round.
TICK = timedelta(microseconds=1)


def test_a_lease_keeps_others_off_its_task_until_just_after_it_expires(
    campaign: Campaign, assessor: AbstractBaseUser, second_assessor: AbstractBaseUser
) -> None:
    held = task_next(campaign=campaign, assessor=assessor, now=timezone.now())
    assert held is not None
    expiry = Task.objects.get(pk=held.pk).lease_expires_at
    other = task_next(campaign=campaign, assessor=second_assessor, now=expiry)
    assert other is not None and other.pk != held.pk, "at its expiry instant the lease still holds"
    task_answer(task=other, assessor=second_assessor, grade=1, seconds=1.0, now=expiry)
    taken = task_next(campaign=campaign, assessor=second_assessor, now=expiry + TICK)
    assert taken is not None and taken.pk == held.pk, "a microsecond later it is free"


def test_a_holder_may_answer_at_the_expiry_instant_and_not_a_microsecond_later(
    campaign: Campaign, assessor: AbstractBaseUser
) -> None:
    first = task_next(campaign=campaign, assessor=assessor, now=timezone.now())
    assert first is not None
    expiry = Task.objects.get(pk=first.pk).lease_expires_at
    _, created = task_answer(task=first, assessor=assessor, grade=1, seconds=1.0, now=expiry)
    assert created
    second = task_next(campaign=campaign, assessor=assessor, now=expiry)
    assert second is not None and second.pk != first.pk
    second_expiry = Task.objects.get(pk=second.pk).lease_expires_at
    with pytest.raises(LeaseConflict):
        task_answer(task=second, assessor=assessor, grade=1, seconds=1.0, now=second_expiry + TICK)
    assert not Judgment.objects.filter(task_id=second.pk).exists()
    assert Task.objects.get(pk=second.pk).answered_at is None


def test_it_stops_at_the_budget(draft_campaign: Campaign, assessor: AbstractBaseUser) -> None:
    campaign_update(campaign=draft_campaign, budget=3, strategy="items")
    campaign_assessors_assign(campaign=draft_campaign, usernames=["alice"])
    campaign = campaign_start(campaign=draft_campaign)
    answered = 0
    while (task := task_next(campaign=campaign, assessor=assessor)) is not None:
        task_answer(task=task, assessor=assessor, grade=1, seconds=1.0)
        answered += 1
        assert answered <= 3
    progress = campaign_progress(campaign)
    assert (answered, progress.judgments, progress.spent, progress.remaining) == (3, 3, 3.0, 0.0)
    assert progress.state == "budget_spent"


def test_it_stops_before_a_topic_that_would_exceed_the_budget_until_it_is_raised(
    draft_campaign: Campaign, assessor: AbstractBaseUser
) -> None:
    # Every topic has 7 pool items: 10 judgments pay for one topic, not two (Sawade's Algorithm 1).
    campaign_update(campaign=draft_campaign, budget=10)
    campaign_assessors_assign(campaign=draft_campaign, usernames=["alice"])
    campaign = campaign_start(campaign=draft_campaign)
    judged_topics = set()
    while (task := task_next(campaign=campaign, assessor=assessor)) is not None:
        task_answer(task=task, assessor=assessor, grade=1, seconds=1.0)
        judged_topics.add(task.topic_id)
    progress = campaign_progress(campaign)
    assert (progress.judgments, len(judged_topics), progress.state) == (7, 1, "budget_spent")
    campaign_update(campaign=campaign, budget=14)
    assert campaign_progress(campaign).state == "running"
    while (task := task_next(campaign=campaign, assessor=assessor)) is not None:
        task_answer(task=task, assessor=assessor, grade=1, seconds=1.0)
    assert campaign_progress(campaign).judgments == 14


def test_it_asks_different_assessors_for_overlap(
    coordinator: AbstractBaseUser, assessor: AbstractBaseUser, second_assessor: AbstractBaseUser
) -> None:
    campaign = campaign_create(
        creator=coordinator, name="overlap", metric="DCG@2", grades=["no", "yes"], budget=4, overlap=2
    )
    runs_import(campaign=campaign, files=[upload("a.run", "1 Q0 x 1 2 a\n1 Q0 y 2 1 a\n")])
    campaign_assessors_assign(campaign=campaign, usernames=["alice", "bob"])
    campaign = campaign_start(campaign=campaign)
    seen: dict[int, list[int]] = {assessor.pk: [], second_assessor.pk: []}
    for user in (assessor, second_assessor, assessor, second_assessor):
        task = task_next(campaign=campaign, assessor=user)
        assert task is not None
        seen[user.pk].append(task.document_id)
        task_answer(task=task, assessor=user, grade=1, seconds=1.0)
    assert sorted(seen[assessor.pk]) == sorted(seen[second_assessor.pk])
    assert len(set(seen[assessor.pk])) == 2
    assert task_next(campaign=campaign, assessor=assessor) is None


def test_it_undoes_the_last_judgment_within_the_window(
    campaign: Campaign, assessor: AbstractBaseUser
) -> None:
    now = timezone.now()
    task = task_next(campaign=campaign, assessor=assessor, now=now)
    assert task is not None
    task_answer(task=task, assessor=assessor, grade=2, seconds=1.0, now=now)
    again = judgment_undo(campaign=campaign, assessor=assessor, now=timezone.now())
    assert again.pk == task.pk and not Judgment.objects.filter(task=task).exists()
    assert task_next(campaign=campaign, assessor=assessor).pk == task.pk
    task_answer(task=again, assessor=assessor, grade=0, seconds=1.0)
    with pytest.raises(UndoNotAllowed):
        judgment_undo(campaign=campaign, assessor=assessor, now=timezone.now() + timedelta(hours=1))


def test_it_rejects_grades_off_the_scale(campaign: Campaign, assessor: AbstractBaseUser) -> None:
    task = task_next(campaign=campaign, assessor=assessor)
    assert task is not None
    for grade in (3, -1):
        with pytest.raises(ValueError, match="grade must be"):
            task_answer(task=task, assessor=assessor, grade=grade, seconds=1.0)
    with pytest.raises(ValueError, match="seconds"):
        task_answer(task=task, assessor=assessor, grade=1, seconds=-2.0)


def test_it_never_draws_items_judged_by_imported_qrels(
    draft_campaign: Campaign, assessor: AbstractBaseUser
) -> None:
    qrels = "".join(f"{q} 0 d{q}-{d} 1\n" for q in (1, 2, 3) for d in range(1, 8) if d != 4)
    qrels_import(campaign=draft_campaign, files=[upload("q.txt", qrels)])
    campaign_assessors_assign(campaign=draft_campaign, usernames=["alice"])
    campaign = campaign_start(campaign=draft_campaign)
    documents = []
    while (task := task_next(campaign=campaign, assessor=assessor)) is not None:
        documents.append(task.document.docno)
        task_answer(task=task, assessor=assessor, grade=0, seconds=1.0)
    assert sorted(documents) == ["d1-4", "d2-4", "d3-4"]


def test_it_replays_the_same_draws_from_the_campaign_seed(coordinator: AbstractBaseUser) -> None:
    orders = []
    for name in ("first", "second"):
        campaign = campaign_create(
            creator=coordinator, name=name, metric="DCG@5", budget=10, seed=1234, strategy="items"
        )
        runs_import(campaign=campaign, files=[upload("a.run", RUN_A)])
        campaign_start(campaign=campaign)
        orders.append(
            list(
                Draw.objects.filter(campaign=campaign)
                .order_by("order")
                .values_list("document__docno", "propensity")
            )
        )
    assert orders[0] == orders[1] and len(orders[0]) >= 10


@pytest.mark.django_db(transaction=True)
def test_it_leases_one_item_to_only_one_of_two_racing_assessors(
    coordinator: AbstractBaseUser, assessor: AbstractBaseUser, second_assessor: AbstractBaseUser
) -> None:
    leased: list[int] = []
    for round_number in range(5):
        # A pool of exactly one item: exactly one of the two assessors may get it.
        campaign = campaign_create(creator=coordinator, name=f"race {round_number}", metric="DCG@1", budget=5)
        runs_import(campaign=campaign, files=[upload("one.run", f"1 Q0 only{round_number} 1 1.0 r\n")])
        campaign_assessors_assign(campaign=campaign, usernames=["alice", "bob"])
        campaign_start(campaign=campaign)
        got, failures = claim_at_once(campaign.pk, (assessor, second_assessor))
        assert failures == []
        winners = [task_id for task_id in got if task_id is not None]
        assert len(winners) == 1, f"round {round_number}: handed out {got}"
        leased.extend(winners)
        assert Task.objects.filter(campaign=campaign, assessor__isnull=False).count() == 1
    assert len(set(leased)) == 5


@pytest.mark.django_db(transaction=True)
def test_it_stores_one_judgment_when_two_submits_race(campaign: Campaign, assessor: AbstractBaseUser) -> None:
    task = task_next(campaign=campaign, assessor=assessor)
    assert task is not None
    barrier = threading.Barrier(2)
    created: list[bool] = []
    failures: list[BaseException] = []

    def submit() -> None:
        try:
            barrier.wait()
            _, was_created = task_answer(
                task=Task.objects.get(pk=task.pk), assessor=assessor, grade=2, seconds=3.0
            )
            created.append(was_created)
        except BaseException as error:  # surfaced by the assertion below
            failures.append(error)
        finally:
            connection.close()

    threads = [threading.Thread(target=submit) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert failures == []
    assert sorted(created) == [False, True]
    assert Judgment.objects.filter(task_id=task.pk).count() == 1


@pytest.mark.django_db(transaction=True)
def test_it_keeps_the_task_leased_when_its_judgment_cannot_be_stored(
    api: Callable[[AbstractBaseUser], APIClient], campaign: Campaign, assessor: AbstractBaseUser
) -> None:
    # Transactional: the request commits on its own, as in production, so a lease closed
    # outside the judgment's transaction would stay closed.
    client = api(assessor)
    task = client.get(f"/api/campaigns/{campaign.pk}/next/").json()["task"]
    answer = {"grade": 2, "seconds": 3.0}
    with inserts_refused(Judgment, "judgment refused"):
        with pytest.raises(DatabaseError, match="judgment refused"):
            client.post(f"/api/tasks/{task}/answer/", answer, format="json")
    held = Task.objects.get(pk=task)
    assert (held.assessor_id, held.answered_at) == (assessor.pk, None), "the lease was not closed"
    assert not Judgment.objects.filter(task_id=task).exists()
    assert client.get(f"/api/campaigns/{campaign.pk}/next/").json()["task"] == task
    stored = client.post(f"/api/tasks/{task}/answer/", answer, format="json")
    assert stored.status_code == 201, stored.content
    judgments = Judgment.objects.filter(task_id=task).values_list("assessor_id", "grade")
    assert list(judgments) == [(assessor.pk, 2)]
    assert Task.objects.get(pk=task).answered_at is not None


def test_it_spends_a_budget_in_assessor_hours_by_the_seconds_measured(
    draft_campaign: Campaign, assessor: AbstractBaseUser
) -> None:
    campaign_update(campaign=draft_campaign, budget=40 / 3600, budget_unit="hours", strategy="items")
    campaign_assessors_assign(campaign=draft_campaign, usernames=["alice"])
    campaign = campaign_start(campaign=draft_campaign)
    answered = 0
    while (task := task_next(campaign=campaign, assessor=assessor)) is not None:
        task_answer(task=task, assessor=assessor, grade=1, seconds=10.0)
        answered += 1
        assert answered <= 5
    progress = campaign_progress(campaign)
    # 40 seconds of budget at 10 seconds a judgment.
    assert answered == 4
    assert progress.spent == pytest.approx(40 / 3600) and progress.remaining == pytest.approx(0.0)


def test_it_renews_the_lease_when_an_assessor_comes_back_to_their_task(
    campaign: Campaign, assessor: AbstractBaseUser
) -> None:
    now = timezone.now()
    task = task_next(campaign=campaign, assessor=assessor, now=now)
    later = now + timedelta(seconds=campaign.lease_seconds + 5)  # expired, but nobody took it
    again = task_next(campaign=campaign, assessor=assessor, now=later)
    assert again.pk == task.pk
    assert again.lease_expires_at == later + timedelta(seconds=campaign.lease_seconds)
    judgment, created = task_answer(task=again, assessor=assessor, grade=1, seconds=1.0, now=later)
    assert created and judgment.task_id == task.pk


def test_it_counts_down_to_the_next_refresh_from_the_last_start() -> None:
    assert recompute_countdown(None, 100.0, 10) == 0.0
    assert recompute_countdown(97.0, 100.0, 10) == 7.0
    assert recompute_countdown(88.0, 100.0, 10) == 0.0


def test_it_queues_one_refresh_at_a_time_and_the_next_once_one_starts(campaign: Campaign) -> None:
    cache.clear()
    assert recompute_queue(campaign.pk) is True
    assert recompute_queue(campaign.pk) is False  # one is queued already
    recompute_started(campaign.pk)
    assert recompute_queue(campaign.pk) is True  # after the start, the next one queues
    assert recompute_queue(campaign.pk) is False
