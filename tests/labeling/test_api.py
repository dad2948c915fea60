"""The REST API: the paths and fields scripts rely on, errors, auth, and every role on every endpoint."""

from __future__ import annotations

import gzip
from collections.abc import Callable
from typing import Any

import pytest
from django.contrib.auth.models import AbstractBaseUser
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client
from rest_framework.test import APIClient

from graded.claims import task_next
from graded.judging import task_answer
from labeling.models import Campaign, Judgment, System, Task
from tests.conftest import PASSWORD, RUN_A, RUN_B

Api = Callable[[AbstractBaseUser | None], APIClient]


def _file(name: str, text: str | bytes) -> SimpleUploadedFile:
    return SimpleUploadedFile(name, text.encode() if isinstance(text, str) else text)


def test_it_runs_a_campaign_end_to_end_with_token_auth(admin: AbstractBaseUser) -> None:
    client = APIClient()
    token = client.post("/api/auth/token/", {"username": "ada", "password": PASSWORD}, format="json")
    assert token.status_code == 200 and token.json()["token"]
    client.credentials(HTTP_AUTHORIZATION=f"Token {token.json()['token']}")
    for username, role in (("cora", "coordinator"), ("ann", "assessor")):
        created = client.post(
            "/api/users/", {"username": username, "password": PASSWORD, "role": role}, format="json"
        )
        assert created.status_code == 201 and created.json()["role"] == role

    coordinator = APIClient()
    coordinator.credentials(
        HTTP_AUTHORIZATION="Token "
        + coordinator.post(
            "/api/auth/token/", {"username": "cora", "password": PASSWORD}, format="json"
        ).json()["token"]
    )
    body = {
        "name": "api",
        "metric": "ERR@5",
        "grades": ["Bad", "Good", "Great"],
        "goal": "difference",
        "strategy": "passive",
        # Passive samples whole topics (7 pool items each): the budget pays for two.
        "budget": 14,
        "budget_unit": "judgments",
    }
    response = coordinator.post("/api/campaigns/", body, format="json")
    assert response.status_code == 201
    campaign = response.json()
    assert campaign["grades"] == ["Bad", "Good", "Great"] and campaign["status"] == "draft"
    assert [grade["key"] for grade in campaign["grade_scale"]] == ["0", "1", "2"]
    base = f"/api/campaigns/{campaign['id']}"
    runs = coordinator.post(
        f"{base}/runs/",
        {"file": [_file("a.run", RUN_A), _file("b.run.gz", gzip.compress(RUN_B.encode()))]},
        format="multipart",
    )
    assert runs.status_code == 201 and runs.json()["systems"] == ["alpha", "beta"]
    topics = coordinator.post(
        f"{base}/topics/", {"file": _file("t.jsonl", '{"id": "1", "title": "cats"}\n')}, format="multipart"
    )
    assert topics.status_code == 201 and topics.json()["updated"] == 1
    documents = coordinator.post(
        f"{base}/documents/",
        {"file": _file("d.jsonl", '{"docno": "d1-1", "text": "cats"}\n'), "format": "jsonl"},
        format="multipart",
    )
    assert documents.status_code == 201
    assert coordinator.post(f"{base}/assessors/", {"usernames": ["ann"]}, format="json").json()[
        "usernames"
    ] == ["ann"]
    assert coordinator.post(f"{base}/start/").json()["status"] == "running"

    assessor = APIClient()
    assessor.login(username="ann", password=PASSWORD)
    answered = 0
    while (item := assessor.get(f"{base}/next/")).status_code == 200:
        task = item.json()
        assert task["kind"] == "grade"
        assert set(task["topic"]) >= {"id", "title", "description", "narrative"}
        assert set(task["document"]) >= {"docno", "title", "text", "url"}
        first = assessor.post(
            f"/api/tasks/{task['task']}/answer/", {"grade": 1, "seconds": 2.5}, format="json"
        )
        again = assessor.post(
            f"/api/tasks/{task['task']}/answer/", {"grade": 1, "seconds": 2.5}, format="json"
        )
        assert (first.status_code, again.status_code) == (201, 200)
        assert again.json()["id"] == first.json()["id"]
        answered += 1
    assert item.status_code == 204 and answered == 14
    progress = assessor.get(f"{base}/progress/").json()
    assert {key: progress[key] for key in ("judgments", "budget", "spent", "remaining", "state")} == {
        "judgments": 14,
        "budget": 14.0,
        "spent": 14.0,
        "remaining": 0.0,
        "state": "budget_spent",
    }
    exported = coordinator.get(f"{base}/export/judgments.jsonl")
    assert exported.status_code == 200 and len(b"".join(exported.streaming_content).splitlines()) == 14


def test_it_answers_a_malformed_upload_with_file_line_and_message(
    api: Api, coordinator: AbstractBaseUser, draft_campaign: Campaign
) -> None:
    response = api(coordinator).post(
        f"/api/campaigns/{draft_campaign.pk}/runs/",
        {
            "file": [
                _file("ok.run", "1 Q0 z 1 1.0 fine\n"),
                _file("bad.run", "1 Q0 d1 1 1.0 x\n1 Q0 d2 two 1.0 x\n"),
            ]
        },
        format="multipart",
    )
    assert response.status_code == 400
    assert response.json() == {
        "errors": [{"file": "bad.run", "line": 2, "message": "rank 'two' is not an integer"}]
    }
    assert not System.objects.filter(campaign=draft_campaign, name="fine").exists()
    empty = api(coordinator).post(f"/api/campaigns/{draft_campaign.pk}/qrels/", {}, format="multipart")
    assert empty.status_code == 400 and empty.json()["errors"][0]["message"]


def test_it_answers_409_for_a_foreign_lease_and_400_for_a_bad_grade(
    api: Api, campaign: Campaign, assessor: AbstractBaseUser, second_assessor: AbstractBaseUser
) -> None:
    task = api(assessor).get(f"/api/campaigns/{campaign.pk}/next/").json()["task"]
    foreign = api(second_assessor).post(
        f"/api/tasks/{task}/answer/", {"grade": 1, "seconds": 1}, format="json"
    )
    assert foreign.status_code == 409
    bad = api(assessor).post(f"/api/tasks/{task}/answer/", {"grade": 9, "seconds": 1}, format="json")
    assert bad.status_code == 400
    assert api(assessor).post(f"/api/campaigns/{campaign.pk}/undo/").status_code == 409
    assert (
        api(assessor)
        .post(f"/api/tasks/{task}/answer/", {"grade": 2, "seconds": 1}, format="json")
        .status_code
        == 201
    )
    undone = api(assessor).post(f"/api/campaigns/{campaign.pk}/undo/")
    assert undone.status_code == 200 and undone.json()["task"] == task
    assert not Judgment.objects.filter(task_id=task).exists()


def test_it_enforces_csrf_for_session_requests(assessor: AbstractBaseUser, campaign: Campaign) -> None:
    client = Client(enforce_csrf_checks=True)
    client.force_login(assessor)
    task = client.get(f"/api/campaigns/{campaign.pk}/next/").json()["task"]
    response = client.post(
        f"/api/tasks/{task}/answer/", {"grade": 1, "seconds": 1}, content_type="application/json"
    )
    assert response.status_code == 403 and "CSRF" in response.json()["detail"]
    client.get("/accounts/login/")  # sets the CSRF cookie
    token = client.cookies["csrftoken"].value
    response = client.post(
        f"/api/tasks/{task}/answer/",
        {"grade": 1, "seconds": 1},
        content_type="application/json",
        HTTP_X_CSRFTOKEN=token,
    )
    assert response.status_code == 201


def test_it_publishes_an_openapi_schema_with_the_core_paths(api: Api, assessor: AbstractBaseUser) -> None:
    assert api(None).get("/api/schema/").status_code in (401, 403)
    response = api(assessor).get("/api/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json")
    assert response.status_code == 200
    paths = response.json()["paths"]
    for path in (
        "/api/auth/token/",
        "/api/users/",
        "/api/campaigns/",
        "/api/campaigns/{campaign_id}/runs/",
        "/api/campaigns/{campaign_id}/next/",
        "/api/tasks/{task_id}/answer/",
        "/api/campaigns/{campaign_id}/progress/",
        "/api/campaigns/{campaign_id}/export/qrels/",
        "/api/campaigns/{campaign_id}/webhooks/",
        "/api/campaigns/{campaign_id}/arrivals/{arrival_id}/",
    ):
        assert path in paths


def test_it_requires_a_login_for_pages(client: Client) -> None:
    response = client.get("/admin/labeling/campaign/")
    assert response.status_code == 302 and "login" in response["Location"]
    assert client.get("/api/campaigns/").status_code in (401, 403)


# ---- every role on every endpoint ------------------------------------------------------------

ROLES = ("assessor", "coordinator", "admin", "outsider")


def _upload(kind: str) -> dict[str, Any]:
    files = {
        "topics": _file("t.jsonl", '{"id": "1", "title": "x"}\n'),
        "documents": _file("d.jsonl", '{"docno": "d1-1"}\n'),
        "runs": _file("c.run", "1 Q0 d1-1 1 1.0 gamma\n"),
        "qrels": _file("q.txt", "1 0 d1-1 1\n"),
    }
    return {"file": files[kind]}


ENDPOINTS: list[tuple[str, str, Callable[[], Any] | None, dict[str, int]]] = [
    (
        "get",
        "/api/campaigns/{c}/",
        None,
        {"assessor": 200, "coordinator": 200, "admin": 200, "outsider": 404},
    ),
    (
        "patch",
        "/api/campaigns/{c}/",
        lambda: {"budget": 50},
        {"assessor": 403, "coordinator": 200, "admin": 200, "outsider": 404},
    ),
    (
        "post",
        "/api/campaigns/{c}/topics/",
        lambda: _upload("topics"),
        {"assessor": 403, "coordinator": 201, "admin": 201, "outsider": 404},
    ),
    (
        "post",
        "/api/campaigns/{c}/documents/",
        lambda: _upload("documents"),
        {"assessor": 403, "coordinator": 201, "admin": 201, "outsider": 404},
    ),
    (
        "post",
        "/api/campaigns/{c}/runs/",
        lambda: _upload("runs"),
        {"assessor": 403, "coordinator": 201, "admin": 201, "outsider": 404},
    ),
    (
        "post",
        "/api/campaigns/{c}/qrels/",
        lambda: _upload("qrels"),
        {"assessor": 403, "coordinator": 201, "admin": 201, "outsider": 404},
    ),
    (
        "post",
        "/api/campaigns/{c}/assessors/",
        lambda: {"usernames": ["bob"]},
        {"assessor": 403, "coordinator": 200, "admin": 200, "outsider": 404},
    ),
    (
        "get",
        "/api/campaigns/{c}/assessors/",
        None,
        {"assessor": 403, "coordinator": 200, "admin": 200, "outsider": 404},
    ),
    (
        "post",
        "/api/campaigns/{c}/pause/",
        None,
        {"assessor": 403, "coordinator": 200, "admin": 200, "outsider": 404},
    ),
    (
        "get",
        "/api/campaigns/{c}/preflight/",
        None,
        {"assessor": 403, "coordinator": 200, "admin": 200, "outsider": 404},
    ),
    (
        "post",
        "/api/campaigns/{c}/start/",
        None,
        {"assessor": 403, "coordinator": 200, "admin": 200, "outsider": 404},
    ),
    (
        "get",
        "/api/campaigns/{c}/next/",
        None,
        {"assessor": 200, "coordinator": 200, "admin": 200, "outsider": 404},
    ),
    (
        "post",
        "/api/tasks/{t}/answer/",
        lambda: {"grade": 1, "seconds": 2},
        {"assessor": 201, "coordinator": 409, "admin": 409, "outsider": 404},
    ),
    (
        "post",
        "/api/campaigns/{c}/undo/",
        None,
        {"assessor": 409, "coordinator": 409, "admin": 409, "outsider": 404},
    ),
    (
        "get",
        "/api/campaigns/{c}/progress/",
        None,
        {"assessor": 200, "coordinator": 200, "admin": 200, "outsider": 404},
    ),
    (
        "get",
        "/api/campaigns/{c}/export/qrels/",
        None,
        {"assessor": 403, "coordinator": 200, "admin": 200, "outsider": 404},
    ),
    (
        "get",
        "/api/campaigns/{c}/export/judgments.csv",
        None,
        {"assessor": 403, "coordinator": 200, "admin": 200, "outsider": 404},
    ),
    (
        "get",
        "/api/campaigns/{c}/export/judgments.jsonl",
        None,
        {"assessor": 403, "coordinator": 200, "admin": 200, "outsider": 404},
    ),
    (
        "get",
        "/api/campaigns/{c}/export/config.json",
        None,
        {"assessor": 403, "coordinator": 200, "admin": 200, "outsider": 404},
    ),
    ("get", "/api/campaigns/", None, {"assessor": 200, "coordinator": 200, "admin": 200, "outsider": 200}),
    (
        "post",
        "/api/campaigns/",
        lambda: {"name": "n", "budget": 5},
        {"assessor": 403, "coordinator": 201, "admin": 201, "outsider": 403},
    ),
    (
        "post",
        "/api/users/",
        lambda: {"username": "newbie", "password": PASSWORD, "role": "assessor"},
        {"assessor": 403, "coordinator": 201, "admin": 201, "outsider": 403},
    ),
    (
        "post",
        "/api/users/",
        lambda: {"username": "boss", "password": PASSWORD, "role": "admin"},
        {"assessor": 403, "coordinator": 403, "admin": 201, "outsider": 403},
    ),
    (
        "get",
        "/api/campaigns/{c}/webhooks/",
        None,
        {"assessor": 403, "coordinator": 200, "admin": 200, "outsider": 404},
    ),
    (
        "post",
        "/api/campaigns/{c}/webhooks/",
        lambda: {"url": "http://127.0.0.1:9/hook", "secret": "s" * 16, "events": ["arrival.decided"]},
        {"assessor": 403, "coordinator": 201, "admin": 201, "outsider": 404},
    ),
]


@pytest.mark.parametrize("role", ROLES)
@pytest.mark.parametrize(
    ("method", "path", "payload", "expected"),
    ENDPOINTS,
    ids=[f"{method} {path}" for method, path, _, _ in ENDPOINTS],
)
def test_it_answers_each_role_on_each_endpoint(
    api: Api,
    campaign: Campaign,
    assessor: AbstractBaseUser,
    coordinator: AbstractBaseUser,
    admin: AbstractBaseUser,
    outsider: AbstractBaseUser,
    role: str,
    method: str,
    path: str,
    payload: Callable[[], Any] | None,
    expected: dict[str, int],
) -> None:
    user = {"assessor": assessor, "coordinator": coordinator, "admin": admin, "outsider": outsider}[role]
    task: Task | None = task_next(campaign=campaign, assessor=assessor)
    assert task is not None
    url = path.format(c=campaign.pk, t=task.pk)
    data = payload() if payload else None
    multipart = isinstance(data, dict) and "file" in data
    response = getattr(api(user), method)(url, data, format="multipart" if multipart else "json")
    assert response.status_code == expected[role], getattr(response, "data", response)
    if response.status_code in (403, 404):
        assert response.json()["detail"]


def test_it_hides_estimates_and_other_labels_from_assessors(
    api: Api, campaign: Campaign, assessor: AbstractBaseUser, second_assessor: AbstractBaseUser
) -> None:
    task = task_next(campaign=campaign, assessor=second_assessor)
    task_answer(task=task, assessor=second_assessor, grade=2, seconds=1.0)
    served = api(assessor).get(f"/api/campaigns/{campaign.pk}/next/").json()
    assert "grade" not in str(served["topic"]) and "judgment" not in served
    for export in ("qrels/", "judgments.csv", "judgments.jsonl"):
        assert api(assessor).get(f"/api/campaigns/{campaign.pk}/export/{export}").status_code == 403


def test_it_refuses_anonymous_requests(api: Api, campaign: Campaign) -> None:
    for url in (f"/api/campaigns/{campaign.pk}/", f"/api/campaigns/{campaign.pk}/next/", "/api/campaigns/"):
        assert api(None).get(url).status_code in (401, 403)


def test_the_api_schema_is_generated_without_warnings(tmp_path: Any) -> None:
    """/api/docs/ reads the same schema: a warning there (two names for one choice set, a field
    whose type cannot be inferred) is logged at every load and leaves the docs vaguer."""
    from django.core.management import call_command

    call_command("spectacular", "--fail-on-warn", "--file", str(tmp_path / "schema.yml"))
    assert "VerdictRuleEnum" in (tmp_path / "schema.yml").read_text()
