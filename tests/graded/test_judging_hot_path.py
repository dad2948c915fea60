"""The judging hot path: concurrent claims, the combined answer-and-next call, paused campaigns,
and how many SQL statements a judgment costs."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from django.contrib.auth.models import AbstractBaseUser
from django.db import connection
from django.test.utils import CaptureQueriesContext
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from graded.claims import task_next
from labeling.models import Campaign, Judgment, Task
from labeling.services.campaigns import campaign_assessors_assign, campaign_pause
from tests.graded.helpers import claim_at_once

# Database-specific: `make test` runs this module again on PostgreSQL (tests/test_database_specific.py).
pytestmark = pytest.mark.postgresql


@pytest.mark.django_db(transaction=True)
def test_it_gives_each_of_several_racing_assessors_its_own_task(
    campaign: Campaign, make_user: Callable[..., AbstractBaseUser]
) -> None:
    # The queue holds more open tasks than there are assessors: nobody may be told "nothing
    # left" because the others' claims had the rows locked at that moment.
    users = tuple(make_user(f"racer{index}", "assessor") for index in range(4))
    campaign_assessors_assign(campaign=campaign, usernames=[user.get_username() for user in users])
    open_before = Task.objects.filter(campaign=campaign, assessor__isnull=True).count()
    assert open_before >= len(users)
    got, failures = claim_at_once(campaign.pk, users)
    assert failures == []
    assert None not in got and len(set(got)) == len(users)
    holders = dict(Task.objects.filter(pk__in=got).values_list("pk", "assessor_id"))
    assert sorted(holders.values()) == sorted(user.pk for user in users)


def test_it_answers_and_leases_the_next_task_in_one_request(
    campaign: Campaign, assessor: AbstractBaseUser, api: Callable[[AbstractBaseUser | None], APIClient]
) -> None:
    client = api(assessor)
    first = client.get(f"/api/campaigns/{campaign.pk}/next/").json()
    response = client.post(
        f"/api/tasks/{first['task']}/answer/?next=1", {"grade": 2, "seconds": 4.0}, format="json"
    )
    assert response.status_code == 201
    body = response.json()
    assert body["task"] == first["task"] and body["grade"] == 2 and body["seconds"] == 4.0
    upcoming = body["next"]
    assert upcoming["task"] != first["task"] and upcoming["kind"] == "grade"
    assert set(upcoming) >= {"task", "topic", "document", "lease_expires_at"}
    assert Task.objects.get(pk=upcoming["task"]).assessor_id == assessor.pk
    # A repeat stores nothing new and hands back the same (already leased) next task.
    again = client.post(
        f"/api/tasks/{first['task']}/answer/?next=1", {"grade": 2, "seconds": 4.0}, format="json"
    )
    assert again.status_code == 200 and again.json()["next"]["task"] == upcoming["task"]
    assert Judgment.objects.filter(task_id=first["task"]).count() == 1
    # Without the flag the answer keeps its plain shape.
    plain = client.post(f"/api/tasks/{upcoming['task']}/answer/", {"grade": 0}, format="json")
    assert plain.status_code == 201 and "next" not in plain.json()


def test_it_refuses_a_foreign_lease_in_the_combined_call_without_leasing(
    campaign: Campaign,
    assessor: AbstractBaseUser,
    second_assessor: AbstractBaseUser,
    api: Callable[[AbstractBaseUser | None], APIClient],
) -> None:
    task = task_next(campaign=campaign, assessor=assessor)
    response = api(second_assessor).post(f"/api/tasks/{task.pk}/answer/?next=1", {"grade": 1}, format="json")
    assert response.status_code == 409
    assert not Task.objects.filter(campaign=campaign, assessor_id=second_assessor.pk).exists()


def test_it_hands_out_only_current_leases_while_paused(
    campaign: Campaign, assessor: AbstractBaseUser, second_assessor: AbstractBaseUser
) -> None:
    task = task_next(campaign=campaign, assessor=assessor)
    paused = campaign_pause(campaign=campaign)
    again = task_next(campaign=paused, assessor=assessor)
    assert again is not None and again.pk == task.pk
    assert task_next(campaign=paused, assessor=second_assessor) is None


def _token_client(user: AbstractBaseUser) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.create(user=user).key}")
    return client


def test_it_judges_with_a_handful_of_sql_statements(campaign: Campaign, assessor: AbstractBaseUser) -> None:
    client = _token_client(assessor)
    client.get(f"/api/campaigns/{campaign.pk}/next/")  # the first lease; the queue is already drawn
    task = task_next(campaign=campaign, assessor=assessor)
    with CaptureQueriesContext(connection) as answer_queries:
        response = client.post(f"/api/tasks/{task.pk}/answer/", {"grade": 1, "seconds": 2.0}, format="json")
    assert response.status_code == 201
    with CaptureQueriesContext(connection) as next_queries:
        response = client.get(f"/api/campaigns/{campaign.pk}/next/")
    assert response.status_code == 200
    # Savepoints appear because the test itself runs inside a transaction; they are not SQL work.
    answer = [q["sql"] for q in answer_queries.captured_queries if "SAVEPOINT" not in q["sql"]]
    nexts = [q["sql"] for q in next_queries.captured_queries if "SAVEPOINT" not in q["sql"]]
    # Before the hot path was trimmed: 14 for an answer and 10 for a next item. Now a token
    # holder's answer is one statement for token, role, task, campaign, length and cost model,
    # then on PostgreSQL one that closes the lease and inserts the judgment (elsewhere an UPDATE
    # and an INSERT).
    assert len(answer) <= (2 if connection.vendor == "postgresql" else 3), answer
    # A next item: token, role and campaign in one statement, then on PostgreSQL one that claims
    # and returns the task with the count of unleased ones left; SQLite claims and counts in one
    # and reads the claimed task back in another (5 before the count joined the claim).
    assert len(nexts) <= (2 if connection.vendor == "postgresql" else 3), nexts
