"""The pairwise REST API: what each persona may do, answers, refusals, results, exports, schema."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from django.contrib.auth.models import AbstractBaseUser
from django.db import DatabaseError
from rest_framework.test import APIClient

from labeling.models import Campaign
from pairwise.models import Comparison, PairTask, TopKHeap
from tests.faults import inserts_refused
from tests.pairwise.helpers import oracle

pytestmark = pytest.mark.django_db

Client = Callable[[AbstractBaseUser | None], APIClient]


def url(campaign: Campaign, rest: str) -> str:
    return f"/api/campaigns/{campaign.pk}/pairwise/{rest}"


def answer(client: APIClient, campaign: Campaign, pair: dict, outcome: str) -> object:
    return client.post(
        url(campaign, f"tasks/{pair['task']}/answer/"), {"outcome": outcome, "seconds": 2.5}, format="json"
    )


def test_it_serves_a_pair_with_left_and_right_documents(
    api: Client, topk_campaign: Campaign, assessor: AbstractBaseUser
) -> None:
    response = api(assessor).get(url(topk_campaign, "next/"))
    assert response.status_code == 200
    pair = response.json()
    assert pair["kind"] == "pair" and pair["mode"] == "topk"
    assert pair["left"]["docno"] != pair["right"]["docno"]
    assert pair["topic"]["id"] in {"401", "402"}
    assert pair["progress"] == {"judgments": 0, "documents": 6, "k": 3}


def test_it_stores_an_answer_and_refuses_it_twice_with_409(
    api: Client, topk_campaign: Campaign, assessor: AbstractBaseUser
) -> None:
    client = api(assessor)
    pair = client.get(url(topk_campaign, "next/")).json()
    outcome = oracle(pair["left"]["docno"], pair["right"]["docno"])
    stored = answer(client, topk_campaign, pair, outcome)
    assert stored.status_code == 201
    assert stored.json()["outcome"] == outcome and stored.json()["seconds"] == 2.5
    again = answer(client, topk_campaign, pair, outcome)
    assert again.status_code == 409, "the pair is no longer the pending one"
    assert Comparison.objects.count() == 1
    assert TopKHeap.objects.get(assessor=assessor).steps == 1


@pytest.mark.django_db(transaction=True)
def test_it_leaves_the_pair_pending_and_the_list_as_it_was_when_the_answer_cannot_be_stored(
    api: Client, topk_campaign: Campaign, assessor: AbstractBaseUser
) -> None:
    # Transactional: the request commits on its own, as in production, so a pair closed or a
    # heap advanced outside the comparison's transaction would stay so.
    client = api(assessor)
    pair = client.get(url(topk_campaign, "next/")).json()
    before = TopKHeap.objects.get(assessor=assessor)
    outcome = oracle(pair["left"]["docno"], pair["right"]["docno"])
    with inserts_refused(Comparison, "comparison refused"):
        with pytest.raises(DatabaseError, match="comparison refused"):
            answer(client, topk_campaign, pair, outcome)
    task = PairTask.objects.get(pk=pair["task"])
    assert (task.assessor_id, task.answered_at, task.superseded) == (assessor.pk, None, False)
    heap = TopKHeap.objects.get(pk=before.pk)
    assert heap.steps == 0 and heap.state == before.state, "the list did not advance"
    assert not Comparison.objects.exists()
    assert client.get(url(topk_campaign, "next/")).json()["task"] == pair["task"]
    stored = answer(client, topk_campaign, pair, outcome)
    assert stored.status_code == 201, stored.content
    assert list(Comparison.objects.values_list("task_id", "outcome")) == [(pair["task"], outcome)]
    assert TopKHeap.objects.get(pk=before.pk).steps == 1


def test_it_rejects_an_unknown_outcome_with_400(
    api: Client, topk_campaign: Campaign, assessor: AbstractBaseUser
) -> None:
    client = api(assessor)
    pair = client.get(url(topk_campaign, "next/")).json()
    assert answer(client, topk_campaign, pair, "both").status_code == 400
    response = client.post(
        url(topk_campaign, f"tasks/{pair['task']}/answer/"), {"outcome": "left", "seconds": -1}
    )
    assert response.status_code == 400
    assert not Comparison.objects.exists()


def test_it_undoes_over_the_api(api: Client, topk_campaign: Campaign, assessor: AbstractBaseUser) -> None:
    client = api(assessor)
    pair = client.get(url(topk_campaign, "next/")).json()
    assert answer(client, topk_campaign, pair, "tie").status_code == 201
    following = client.get(url(topk_campaign, "next/")).json()
    undone = client.post(url(topk_campaign, "undo/"))
    assert undone.status_code == 200 and undone.json()["task"] == pair["task"]
    assert client.post(url(topk_campaign, "undo/")).status_code == 409
    # The pair shown after the undone answer is no longer the pending one.
    assert answer(client, topk_campaign, following, "left").status_code == 409
    assert client.get(url(topk_campaign, "next/")).json()["task"] == pair["task"]
    assert answer(client, topk_campaign, pair, "left").status_code == 201


def test_it_keeps_other_assessors_off_your_pair(
    api: Client, topk_campaign: Campaign, assessor: AbstractBaseUser, second_assessor: AbstractBaseUser
) -> None:
    pair = api(assessor).get(url(topk_campaign, "next/")).json()
    assert answer(api(second_assessor), topk_campaign, pair, "left").status_code == 409


@pytest.mark.parametrize(
    ("persona", "expected"),
    [("assessor", 200), ("coordinator", 200), ("admin", 200), ("outsider", 404), (None, 403)],
)
def test_it_lets_members_fetch_pairs(
    api: Client, topk_campaign: Campaign, persona: str | None, expected: int, request: pytest.FixtureRequest
) -> None:
    user = request.getfixturevalue(persona) if persona else None
    assert api(user).get(url(topk_campaign, "next/")).status_code == expected


@pytest.mark.parametrize(
    "rest",
    [
        "topk/",
        "results/",
        "agreement/",
        "export/preferences.csv",
        "export/preferences.jsonl",
        "export/topk.jsonl",
        "export/topk.qrels",
        "export/agreement.json",
    ],
)
def test_it_shows_results_and_exports_to_coordinators_only(
    api: Client,
    topk_campaign: Campaign,
    assessor: AbstractBaseUser,
    coordinator: AbstractBaseUser,
    outsider: AbstractBaseUser,
    rest: str,
) -> None:
    assert api(coordinator).get(url(topk_campaign, rest)).status_code == 200
    assert api(assessor).get(url(topk_campaign, rest)).status_code == 403
    assert api(outsider).get(url(topk_campaign, rest)).status_code == 404


def test_it_lets_coordinators_change_the_settings(
    api: Client, topk_campaign: Campaign, assessor: AbstractBaseUser, coordinator: AbstractBaseUser
) -> None:
    change = {"k": 2, "use_transitivity": False}
    assert api(assessor).put(url(topk_campaign, "settings/"), change, format="json").status_code == 403
    response = api(coordinator).put(url(topk_campaign, "settings/"), change, format="json")
    assert response.status_code == 200
    assert response.json()["k"] == 2 and response.json()["use_transitivity"] is False
    assert api(assessor).get(url(topk_campaign, "settings/")).json()["k"] == 2
    bad = api(coordinator).put(url(topk_campaign, "settings/"), {"k": 0}, format="json")
    assert bad.status_code == 400


def test_it_lists_the_top_k_per_topic_once_done(
    api: Client, topk_campaign: Campaign, assessor: AbstractBaseUser, coordinator: AbstractBaseUser
) -> None:
    client = api(assessor)
    while True:
        response = client.get(url(topk_campaign, "next/"))
        if response.status_code == 204:
            break
        pair = response.json()
        assert (
            answer(
                client, topk_campaign, pair, oracle(pair["left"]["docno"], pair["right"]["docno"])
            ).status_code
            == 201
        )
    rows = api(coordinator).get(f"/api/campaigns/{topk_campaign.pk}/topk/").json()
    assert rows == api(coordinator).get(url(topk_campaign, "topk/")).json()
    assert all({"topic", "assessor", "order", "judgments", "done"} <= set(row) for row in rows)
    assert {row["topic"] for row in rows} == {"401", "402"}
    for row in rows:
        assert row["assessor"] == "alice" and row["done"] is True
        assert row["judgments"] == Comparison.objects.filter(topic__qid=row["topic"]).count()
        assert [int(docno.rsplit("-", 1)[1]) for docno in row["order"]] == [8, 7, 6]


def test_it_documents_every_endpoint_in_the_openapi_schema(
    api: Client, coordinator: AbstractBaseUser
) -> None:
    response = api(coordinator).get("/api/schema/", HTTP_ACCEPT="application/json")
    assert response.status_code == 200
    paths = response.json()["paths"]
    prefix = "/api/campaigns/{campaign_id}/pairwise/"
    for rest in [
        "settings/",
        "next/",
        "tasks/{task_id}/answer/",
        "undo/",
        "topk/",
        "results/",
        "agreement/",
        "export/preferences.csv",
        "export/topk.qrels",
    ]:
        assert prefix + rest in paths, rest
    answer_schema = paths[prefix + "tasks/{task_id}/answer/"]["post"]
    assert {"201", "400", "409"} <= set(answer_schema["responses"])
