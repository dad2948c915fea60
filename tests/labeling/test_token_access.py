"""Token-authenticated judging: the short way (labeling.token_access plus the views' dispatch)
must grant exactly what the full DRF way grants and answer with the same bodies."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from django.contrib.auth.models import AbstractBaseUser
from django.db import connection
from django.test.utils import CaptureQueriesContext
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from graded.claims import task_next
from labeling import token_access
from labeling.models import Campaign, Judgment, Task
from labeling.permissions import JUDGE, ROLE_ADMIN, role_group
from labeling.services.campaigns import campaign_assessors_assign, campaign_pause

# Database-specific: `make test` runs this module again on PostgreSQL (tests/test_database_specific.py).
pytestmark = pytest.mark.postgresql


def _key(user: AbstractBaseUser) -> str:
    return Token.objects.get_or_create(user=user)[0].key


def _token_client(user: AbstractBaseUser) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {_key(user)}")
    return client


def _short_way(queries: CaptureQueriesContext) -> bool:
    """True when the request was served without DRF's token lookup (the ORM's token query)."""
    sql = [query["sql"] for query in queries.captured_queries]
    return any('"authtoken_token" AS tok' in text for text in sql) and not any(
        '"authtoken_token"."key"' in text for text in sql
    )


def _personas(
    make_user: Callable[..., AbstractBaseUser], campaign: Campaign, assessor: AbstractBaseUser
) -> dict[str, AbstractBaseUser]:
    group_admin = make_user("gwen", "assessor")
    group_admin.groups.add(role_group(ROLE_ADMIN))
    superuser = make_user("sue", None)
    superuser.is_superuser = True
    superuser.save()
    inactive = make_user("ivan", "assessor")
    campaign_assessors_assign(campaign=campaign, usernames=["ivan"])
    inactive.is_active = False
    inactive.save()
    other_coordinator = make_user("olga", "coordinator")
    return {
        "assessor": assessor,
        "coordinator": campaign.created_by,
        "admin group": group_admin,
        "superuser": superuser,
        "inactive member": inactive,
        "coordinator elsewhere": other_coordinator,
        "outsider": make_user("oscar", None),
    }


def test_it_grants_judging_by_token_exactly_as_the_permission_backend(
    campaign: Campaign, assessor: AbstractBaseUser, make_user: Callable[..., AbstractBaseUser]
) -> None:
    task = task_next(campaign=campaign, assessor=assessor)
    personas = _personas(make_user, campaign, assessor)
    granted = {}
    for name, user in personas.items():
        user = type(user).objects.get(pk=user.pk)  # a fresh object: no cached roles
        expected = user.is_active and user.has_perm(JUDGE, campaign)
        judge = token_access.judge_by_token(_key(user), campaign.pk)
        found = token_access.task_by_token(_key(user), task.pk)
        assert (judge is not None) == expected, name
        assert (found is not None) == expected, name
        granted[name] = expected
        if judge is not None:
            assert judge.user.pk == user.pk and judge.campaign.pk == campaign.pk
            assert judge.campaign.grades == campaign.grades and judge.campaign.status == campaign.status
    # The personas do cover both answers.
    assert granted == {
        "assessor": True,
        "coordinator": True,
        "admin group": True,
        "superuser": True,
        "inactive member": False,
        "coordinator elsewhere": False,
        "outsider": False,
    }
    assert token_access.judge_by_token("not-a-token", campaign.pk) is None
    assert token_access.judge_by_token(_key(assessor), campaign.pk + 1000) is None


def test_it_reads_what_answering_needs_with_the_task(campaign: Campaign, assessor: AbstractBaseUser) -> None:
    task = task_next(campaign=campaign, assessor=assessor)
    user, found = token_access.task_by_token(_key(assessor), task.pk)
    assert user.pk == assessor.pk and found.pk == task.pk
    assert (found.campaign_id, found.topic_id, found.document_id, found.draw_id) == (
        task.campaign_id,
        task.topic_id,
        task.document_id,
        task.draw_id,
    )
    assert found.campaign.grade_count == 3 and found.document_length == task.document.length
    assert found.sampling_cost_model == campaign.sampling_state.cost_model


def test_it_serves_a_token_holder_the_short_way_with_the_full_ways_bodies(
    campaign: Campaign,
    assessor: AbstractBaseUser,
    second_assessor: AbstractBaseUser,
    api: Callable[[AbstractBaseUser | None], APIClient],
) -> None:
    token_client, session_client = _token_client(assessor), api(second_assessor)
    with CaptureQueriesContext(connection) as queries:
        short = token_client.get(f"/api/campaigns/{campaign.pk}/next/")
    assert short.status_code == 200 and _short_way(queries)
    full = session_client.get(f"/api/campaigns/{campaign.pk}/next/")
    assert full.status_code == 200 and full.json()["task"] != short.json()["task"]
    assert short["Content-Type"] == full["Content-Type"] == "application/json"
    assert _shape(short.json()) == _shape(full.json())

    with CaptureQueriesContext(connection) as queries:
        answered = token_client.post(
            f"/api/tasks/{short.json()['task']}/answer/?next=1", {"grade": 2, "seconds": 3}, format="json"
        )
    assert answered.status_code == 201 and _short_way(queries)
    full_answer = session_client.post(
        f"/api/tasks/{full.json()['task']}/answer/?next=1", {"grade": 2, "seconds": 3}, format="json"
    )
    assert full_answer.status_code == 201
    assert _shape(answered.json()) == _shape(full_answer.json())
    stored = Judgment.objects.get(task_id=short.json()["task"])
    assert (stored.assessor_id, stored.grade, stored.seconds) == (assessor.pk, 2, 3.0)
    assert answered.json()["seconds"] == 3.0 and answered.json()["next"]["task"] != short.json()["task"]

    # A repeat stores nothing new: 200 with the stored judgment, as on the full way.
    again = token_client.post(f"/api/tasks/{short.json()['task']}/answer/", {"grade": 2}, format="json")
    assert again.status_code == 200 and again.json()["id"] == stored.pk
    assert Judgment.objects.filter(task_id=short.json()["task"]).count() == 1


def _shape(body: object) -> object:
    """Keys and value types, recursively: two different tasks share a shape, not values."""
    if isinstance(body, dict):
        return {key: _shape(value) for key, value in body.items()}
    return type(body).__name__


@pytest.mark.parametrize(
    ("payload", "status_code", "short"),
    [
        ({"grade": 1}, 201, True),
        ({"grade": "1"}, 400, False),  # a string is no number: the full way refuses it
        ({"grade": 7}, 400, False),  # out of range: the full way words the error
        ({"grade": -1}, 400, False),
        ({"grade": 1, "seconds": -2}, 400, False),
        ({"grade": True}, 400, False),
        ({"grade": 1, "note": "x"}, 201, False),  # unknown fields: the full way ignores them
    ],
)
def test_it_leaves_anything_but_a_plain_valid_answer_to_the_full_way(
    campaign: Campaign,
    assessor: AbstractBaseUser,
    payload: dict[str, object],
    status_code: int,
    short: bool,
) -> None:
    client = _token_client(assessor)
    task = client.get(f"/api/campaigns/{campaign.pk}/next/").json()["task"]
    with CaptureQueriesContext(connection) as queries:
        response = client.post(f"/api/tasks/{task}/answer/", payload, format="json")
    assert response.status_code == status_code, response.content
    assert _short_way(queries) == short
    assert Judgment.objects.filter(task_id=task).count() == (1 if status_code == 201 else 0)


def test_it_answers_errors_for_token_holders_as_before(
    campaign: Campaign,
    assessor: AbstractBaseUser,
    second_assessor: AbstractBaseUser,
    outsider: AbstractBaseUser,
) -> None:
    task = task_next(campaign=campaign, assessor=assessor)
    # Someone else's lease: 409 and nothing stored.
    foreign = _token_client(second_assessor).post(
        f"/api/tasks/{task.pk}/answer/", {"grade": 1}, format="json"
    )
    assert foreign.status_code == 409 and "detail" in foreign.json()
    # Not a member: 404 for the campaign and for its task, as the full way answers.
    stranger = _token_client(outsider)
    assert stranger.get(f"/api/campaigns/{campaign.pk}/next/").status_code == 404
    assert stranger.post(f"/api/tasks/{task.pk}/answer/", {"grade": 1}, format="json").status_code == 404
    # A wrong token: refused by DRF (403: session authentication comes first and sends no
    # WWW-Authenticate challenge, so DRF does not answer 401).
    wrong = APIClient()
    wrong.credentials(HTTP_AUTHORIZATION="Token 0000")
    refused = wrong.get(f"/api/campaigns/{campaign.pk}/next/")
    assert refused.status_code == 403 and "Invalid token" in refused.json()["detail"]
    assert not Judgment.objects.filter(task_id=task.pk).exists()
    assert Task.objects.get(pk=task.pk).assessor_id == assessor.pk


def test_it_says_204_by_token_when_nothing_is_left(
    campaign: Campaign, assessor: AbstractBaseUser, second_assessor: AbstractBaseUser
) -> None:
    task_next(campaign=campaign, assessor=second_assessor)
    campaign_pause(campaign=campaign)
    client = _token_client(assessor)
    with CaptureQueriesContext(connection) as queries:
        response = client.get(f"/api/campaigns/{campaign.pk}/next/")
    assert response.status_code == 204 and _short_way(queries)


def test_it_lets_a_session_win_over_a_token_as_drf_does(
    campaign: Campaign,
    assessor: AbstractBaseUser,
    second_assessor: AbstractBaseUser,
    api: Callable[[AbstractBaseUser | None], APIClient],
) -> None:
    client = api(second_assessor)  # logged in as bob ...
    client.credentials(HTTP_AUTHORIZATION=f"Token {_key(assessor)}")  # ... holding alice's token
    response = client.get(f"/api/campaigns/{campaign.pk}/next/")
    assert response.status_code == 200
    assert Task.objects.get(pk=response.json()["task"]).assessor_id == second_assessor.pk
