"""Hostile JSON bodies are a 400 on every JSON endpoint, by the one parser
(labeling.parsers.SafeJSONParser), including the anonymous token endpoint and the judging
short way of token holders; nothing is stored."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from django.contrib.auth.models import AbstractBaseUser
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from labeling.models import Campaign, Judgment

HOSTILE = {
    "nested 5000 deep": '{"a": ' * 5000 + "1" + "}" * 5000,
    "nested 5000 lists": "[" * 5000 + "]" * 5000,
    "nested past the limit": '{"a": ' * 33 + "1" + "}" * 33,
    "null": "null",
    "a number": "1",
    "a list": "[]",
    "a string": '"grade"',
    "an overflowing integer": '{"grade": 1, "seconds": 1' + "0" * 400 + "}",
    "an integer of 5000 digits": '{"grade": 1, "seconds": ' + "9" * 5000 + "}",
    "an overflowing float": '{"grade": 1, "seconds": 1e999}',
    "NaN": '{"grade": 1, "seconds": NaN}',
    "Infinity": '{"grade": 1, "seconds": -Infinity}',
    "a NUL character": '{"name": "a\\u0000b", "grade": 1}',
    "a lone surrogate": '{"name": "\\ud800", "grade": 1, "username": "\\udfff"}',
    "a lone surrogate key": '{"\\ud800": 1}',
    "over the size limit": '{"name": "' + "a" * (1024 * 1024) + '"}',
    "not JSON": "{grade: 1}",
    "not UTF-8": b'{"name": "\xff"}',
}


def _endpoints(campaign: Campaign, task_id: int) -> list[tuple[str, str]]:
    base = f"/api/campaigns/{campaign.pk}"
    return [
        ("post", "/api/auth/token/"),
        ("post", "/api/users/"),
        ("post", "/api/campaigns/"),
        ("patch", f"{base}/"),
        ("post", f"{base}/assessors/"),
        ("post", f"{base}/plan/"),
        ("post", f"/api/tasks/{task_id}/answer/"),
    ]


@pytest.fixture
def task_id(campaign: Campaign, assessor: AbstractBaseUser, api: Callable[..., APIClient]) -> int:
    return api(assessor).get(f"/api/campaigns/{campaign.pk}/next/").json()["task"]


@pytest.mark.parametrize("body", list(HOSTILE.values()), ids=list(HOSTILE))
def test_it_answers_400_to_a_hostile_body_on_every_json_endpoint(
    campaign: Campaign,
    admin: AbstractBaseUser,
    assessor: AbstractBaseUser,
    api: Callable[..., APIClient],
    task_id: int,
    body: str | bytes,
) -> None:
    token = Token.objects.get_or_create(user=assessor)[0].key
    token_client = APIClient()
    token_client.credentials(HTTP_AUTHORIZATION=f"Token {token}")
    clients = {
        "anonymous": APIClient(),
        "admin": api(admin),
        "assessor": api(assessor),
        "token": token_client,
    }
    campaigns = Campaign.objects.count()
    for method, path in _endpoints(campaign, task_id):
        users = ["anonymous"] if "token" in path else ["admin"]
        users += ["assessor", "token"] if "answer" in path else []
        for user in users:
            response = getattr(clients[user], method)(path, body, content_type="application/json")
            assert response.status_code == 400, (user, path, response.status_code, response.content[:300])
            assert "JSON parse error" in response.json()["detail"]
    assert Campaign.objects.count() == campaigns
    assert not Judgment.objects.filter(campaign=campaign).exists()


def test_it_still_takes_a_plain_answer_and_a_token_request(
    campaign: Campaign, assessor: AbstractBaseUser, api: Callable[..., APIClient], task_id: int
) -> None:
    answered = api(assessor).post(
        f"/api/tasks/{task_id}/answer/", {"grade": 2, "seconds": 3.5}, format="json"
    )
    assert answered.status_code == 201
    token = APIClient().post(
        "/api/auth/token/", {"username": "alice", "password": "correct-horse-battery-42"}, format="json"
    )
    assert token.status_code == 200 and token.json()["token"]


def test_it_names_the_limits_it_refuses(
    admin: AbstractBaseUser, api: Callable[..., APIClient], settings: object
) -> None:
    settings.LABELING_JSON_MAX_DEPTH = 3  # type: ignore[attr-defined]
    settings.LABELING_JSON_MAX_BYTES = 100  # type: ignore[attr-defined]
    client = api(admin)
    deep = client.post("/api/campaigns/", '{"a": {"b": {"c": {}}}}', content_type="application/json")
    assert deep.status_code == 400 and "deeper than 3 levels" in deep.json()["detail"]
    big = client.post("/api/campaigns/", '{"name": "' + "a" * 100 + '"}', content_type="application/json")
    assert big.status_code == 400 and "larger than 100 bytes" in big.json()["detail"]
    shallow = client.post("/api/campaigns/", '{"a": {"b": {}}}', content_type="application/json")
    assert shallow.status_code == 400 and "JSON parse error" not in str(shallow.json())
