"""The SxS API through the core's routes: personas, next / answer / undo / skip, settings,
downloads, and concurrent claims."""

from __future__ import annotations

import io
from collections.abc import Callable

import pytest
from django.contrib.auth.models import AbstractBaseUser
from rest_framework.test import APIClient

from labeling.models import Campaign
from labeling.services.campaigns import campaign_assessors_assign, campaign_create, campaign_start
from sxs import services
from sxs.models import SxsAnswer, SxsTask
from tests.concurrency import at_once
from uploads.run_imports import runs_import

# Database-specific: `make test` runs this module again on PostgreSQL (tests/test_database_specific.py).
pytestmark = [pytest.mark.django_db, pytest.mark.postgresql]

Client = Callable[[AbstractBaseUser | None], APIClient]


def next_comparison(client: APIClient, campaign: Campaign) -> dict:
    """GET /next/, grading whatever document comes first, until a comparison comes."""
    while True:
        response = client.get(f"/api/campaigns/{campaign.pk}/next/")
        assert response.status_code == 200, response.content
        item = response.json()
        if item["kind"] == "sxs":
            return item
        assert item["kind"] == "grade" and item["document"]["docno"]
        answered = client.post(
            f"/api/tasks/{item['task']}/answer/", {"grade": 1, "seconds": 2}, format="json"
        )
        assert answered.status_code == 201, answered.content


def test_it_serves_two_anonymous_lists_and_takes_an_answer_as_displayed(
    sxs_campaign: Campaign, assessor: AbstractBaseUser, api: Client
) -> None:
    client = api(assessor)
    item = next_comparison(client, sxs_campaign)
    assert set(item) >= {"task", "topic", "left", "right", "k", "lease_expires_at"}
    assert item["topic"] == {
        "id": item["topic"]["id"],
        "title": f"query {item['topic']['id']}",
        "description": "d",
        "narrative": "n",
    }
    assert [row["rank"] for row in item["left"]] == [1, 2, 3] and len(item["right"]) == 3
    assert set(item["left"][0]) == {"rank", "docno", "title", "url", "excerpt"}
    assert len(item["left"][0]["excerpt"]) <= 321 and item["left"][0]["excerpt"].endswith("…")
    text = str(item)
    assert "alpha" not in text and "beta" not in text and "gamma" not in text, "systems are never named"
    body = {"preference": -2, "seconds": 5.5, "comment": "clearer"}
    first = client.post(f"/api/tasks/{item['task']}/answer/", body, format="json")
    again = client.post(f"/api/tasks/{item['task']}/answer/", body, format="json")
    assert first.status_code == 201 and again.status_code == 200 and again.json()["id"] == first.json()["id"]
    answer = SxsAnswer.objects.get()
    task = SxsTask.objects.get(pk=item["task"])
    left_docnos = [row["docno"] for row in item["left"]]
    shown_a = task.a_on_left
    assert left_docnos[0].endswith(
        "-" + str(1 if task.system_a.name == "alpha" and shown_a else left_docnos[0][-1])
    )
    assert answer.shown == -2 and answer.preference == (-2 if shown_a else 2) and answer.comment == "clearer"
    assert first.json()["preference_a"] == answer.preference


def test_it_refuses_bad_answers_and_foreign_tasks(
    sxs_campaign: Campaign, assessor: AbstractBaseUser, second_assessor: AbstractBaseUser, api: Client
) -> None:
    item = next_comparison(api(assessor), sxs_campaign)
    url = f"/api/tasks/{item['task']}/answer/"
    assert api(assessor).post(url, {"preference": 3}, format="json").status_code == 400
    assert api(assessor).post(url, {"preference": 1, "grade": 1}, format="json").status_code == 400
    assert api(second_assessor).post(url, {"preference": 1}, format="json").status_code == 409


@pytest.mark.parametrize(
    ("persona", "expected"),
    [("assessor", 200), ("coordinator", 200), ("admin", 200), ("outsider", 404), (None, 403)],
)
def test_it_lets_members_fetch_items(
    api: Client, sxs_campaign: Campaign, persona: str | None, expected: int, request: pytest.FixtureRequest
) -> None:
    user = request.getfixturevalue(persona) if persona else None
    assert api(user).get(f"/api/campaigns/{sxs_campaign.pk}/next/").status_code == expected


@pytest.mark.parametrize("rest", ["sxs/export/answers.tsv", "sxs/export/answers.jsonl"])
def test_it_exports_to_coordinators_only(
    api: Client,
    sxs_campaign: Campaign,
    assessor: AbstractBaseUser,
    coordinator: AbstractBaseUser,
    outsider: AbstractBaseUser,
    rest: str,
) -> None:
    url = f"/api/campaigns/{sxs_campaign.pk}/{rest}"
    assert api(coordinator).get(url).status_code == 200
    assert api(assessor).get(url).status_code == 403
    assert api(outsider).get(url).status_code == 404


def test_it_answers_404_for_sxs_routes_of_another_mode(
    api: Client, make_sxs: Callable[..., Campaign], coordinator: AbstractBaseUser
) -> None:
    graded = campaign_create(creator=coordinator, name="graded", budget=5)
    assert api(coordinator).get(f"/api/campaigns/{graded.pk}/sxs/settings/").status_code == 404
    assert api(coordinator).get(f"/api/campaigns/{graded.pk}/sxs/export/answers.tsv").status_code == 404


def test_it_undoes_through_the_core_route(
    sxs_campaign: Campaign, assessor: AbstractBaseUser, api: Client
) -> None:
    client = api(assessor)
    item = next_comparison(client, sxs_campaign)
    client.post(f"/api/tasks/{item['task']}/answer/", {"preference": 1, "seconds": 1}, format="json")
    undone = client.post(f"/api/campaigns/{sxs_campaign.pk}/undo/")
    assert (
        undone.status_code == 200 and undone.json()["task"] == item["task"] and undone.json()["kind"] == "sxs"
    )
    assert not SxsAnswer.objects.exists()


def test_it_skips_with_a_reason(
    sxs_campaign: Campaign, assessor: AbstractBaseUser, second_assessor: AbstractBaseUser, api: Client
) -> None:
    item = next_comparison(api(assessor), sxs_campaign)
    url = f"/api/campaigns/{sxs_campaign.pk}/sxs/tasks/{item['task']}/skip/"
    assert api(assessor).post(url, {"reason": ""}, format="json").status_code == 400
    assert api(second_assessor).post(url, {"reason": "mine?"}, format="json").status_code == 409
    assert api(assessor).post(url, {"reason": "both lists are empty pages"}, format="json").status_code == 204
    assert next_comparison(api(assessor), sxs_campaign)["task"] != item["task"]


def test_it_reads_and_changes_settings_for_coordinators_only(
    make_sxs: Callable[..., Campaign], coordinator: AbstractBaseUser, assessor: AbstractBaseUser, api: Client
) -> None:
    campaign = make_sxs(start=False)
    url = f"/api/campaigns/{campaign.pk}/sxs/settings/"
    assert api(assessor).get(url).json()["k"] == 3
    assert api(assessor).put(url, {"k": 5}, format="json").status_code == 403
    changed = api(coordinator).put(url, {"k": 5, "selection": "margin", "random_start": 10}, format="json")
    assert changed.status_code == 200 and changed.json()["selection"] == "margin"
    assert api(coordinator).put(url, {"k": 21}, format="json").status_code == 400
    detail = api(coordinator).get(f"/api/campaigns/{campaign.pk}/").json()
    assert detail["mode"] == "sxs" and detail["k"] == 5


def test_it_creates_an_sxs_campaign_through_the_api(coordinator: AbstractBaseUser, api: Client) -> None:
    response = api(coordinator).post(
        "/api/campaigns/", {"name": "sxs", "mode": "sxs", "k": 5, "budget": 10}, format="json"
    )
    assert response.status_code == 201, response.content
    assert response.json()["mode"] == "sxs" and response.json()["k"] == 5


def test_it_exports_answers_that_cut_to_prefs_tsv(
    sxs_campaign: Campaign, assessor: AbstractBaseUser, coordinator: AbstractBaseUser, api: Client
) -> None:
    client = api(assessor)
    item = next_comparison(client, sxs_campaign)
    client.post(
        f"/api/tasks/{item['task']}/answer/",
        {"preference": -1, "seconds": 2, "comment": "a\tb"},
        format="json",
    )
    tsv = b"".join(
        api(coordinator).get(f"/api/campaigns/{sxs_campaign.pk}/sxs/export/answers.tsv").streaming_content
    )
    header, line = tsv.decode().splitlines()
    assert header.startswith("# topic\tsystem_a\tsystem_b\tpreference\tleft_system\tanswer")
    cells = line.split("\t")
    answer = SxsAnswer.objects.get()
    assert cells[:6] == [
        answer.topic.qid,
        answer.system_a.name,
        answer.system_b.name,
        str(answer.preference),
        answer.system_a.name if answer.a_on_left else answer.system_b.name,
        "-1",
    ]
    assert cells[8] == "a b" and cells[9] == "random" and float(cells[10]) == pytest.approx(1 / 6)
    jsonl = b"".join(
        api(coordinator).get(f"/api/campaigns/{sxs_campaign.pk}/sxs/export/answers.jsonl").streaming_content
    )
    assert b'"answer_label": "Left better"' in jsonl
    assert api(assessor).get(f"/api/campaigns/{sxs_campaign.pk}/sxs/export/answers.tsv").status_code == 403


def test_it_lists_sxs_in_the_openapi_schema(coordinator: AbstractBaseUser, api: Client) -> None:
    schema = api(coordinator).get("/api/schema/?format=json").json()
    assert (
        "SxsItem" in schema["components"]["schemas"]
        and "SxsAnswerInputRequest" in schema["components"]["schemas"]
    )
    assert "/api/campaigns/{campaign_id}/sxs/tasks/{task_id}/skip/" in schema["paths"]


@pytest.mark.django_db(transaction=True)
def test_it_never_leases_one_comparison_to_two_racing_assessors(
    coordinator: AbstractBaseUser, assessor: AbstractBaseUser, second_assessor: AbstractBaseUser
) -> None:
    for round_number in range(3):
        campaign = campaign_create(
            creator=coordinator,
            name=f"race {round_number}",
            budget=5,
            judging_mode="sxs",
            mode_settings={"k": 2, "unjudged": "zero"},
        )
        runs = [(f"{tag}.run", io.BytesIO(f"7 Q0 R-{tag} 1 1.0 {tag}\n".encode())) for tag in ("one", "two")]
        runs_import(campaign=campaign, files=runs)
        campaign_assessors_assign(campaign=campaign, usernames=["alice", "bob"])
        campaign_start(campaign=campaign)

        def ask(user: AbstractBaseUser, campaign_id: int = campaign.pk) -> int | None:
            item = services.sxs_next(campaign=Campaign.objects.get(pk=campaign_id), assessor=user)
            return None if item is None else item.sxs.pk

        tasks, failures = at_once((assessor, second_assessor), ask)
        assert not failures, failures
        assert len([task for task in tasks if task is not None]) == 1, tasks


@pytest.mark.django_db(transaction=True)
def test_it_stores_one_answer_for_two_racing_submits(
    coordinator: AbstractBaseUser, assessor: AbstractBaseUser
) -> None:
    campaign = campaign_create(
        creator=coordinator,
        name="double",
        budget=5,
        judging_mode="sxs",
        mode_settings={"k": 1, "unjudged": "zero"},
    )
    runs = [(f"{tag}.run", io.BytesIO(f"7 Q0 R-{tag} 1 1.0 {tag}\n".encode())) for tag in ("one", "two")]
    runs_import(campaign=campaign, files=runs)
    campaign_assessors_assign(campaign=campaign, usernames=["alice"])
    campaign = campaign_start(campaign=campaign)
    task = services.sxs_next(campaign=campaign, assessor=assessor).sxs

    def submit(user: AbstractBaseUser) -> int:
        return services.sxs_answer(task=task, assessor=user, preference=1, seconds=1.0)[0].pk

    answers, failures = at_once((assessor, assessor), submit)
    assert not failures, failures
    assert len(set(answers)) == 1 and SxsAnswer.objects.count() == 1


def test_the_core_skip_route_skips_a_comparison_with_a_reason(
    sxs_campaign: Campaign, assessor: AbstractBaseUser, api: Client
) -> None:
    from labeling.models import Skip

    item = next_comparison(api(assessor), sxs_campaign)
    body = {"reason": "not_sure", "note": "both pages equal", "kind": "sxs"}
    assert api(assessor).post(f"/api/tasks/{item['task']}/skip/", body, format="json").status_code == 200
    recorded = Skip.objects.get()
    assert (recorded.kind, recorded.reason, recorded.note) == ("sxs", "not_sure", "both pages equal")
    assert next_comparison(api(assessor), sxs_campaign)["task"] != item["task"]


def test_it_takes_the_preference_as_a_json_number_only(
    sxs_campaign: Campaign, assessor: AbstractBaseUser, api: Client
) -> None:
    client = api(assessor)
    item = next_comparison(client, sxs_campaign)
    url = f"/api/tasks/{item['task']}/answer/"
    refused = client.post(url, {"preference": "2"}, format="json")
    assert refused.status_code == 400
    assert refused.json() == {"preference": ["expected a number, not a string"]}
    assert not SxsAnswer.objects.exists()
    assert client.post(url, {"preference": 2}, format="json").status_code == 201


def test_the_page_s_skip_route_records_the_skip_the_export_lists(
    sxs_campaign: Campaign, assessor: AbstractBaseUser, coordinator: AbstractBaseUser, api: Client
) -> None:
    import csv

    item = next_comparison(api(assessor), sxs_campaign)
    url = f"/api/campaigns/{sxs_campaign.pk}/sxs/tasks/{item['task']}/skip/"
    assert api(assessor).post(url, {"reason": "cannot tell"}, format="json").status_code == 204
    export = api(coordinator).get(f"/api/campaigns/{sxs_campaign.pk}/export/skips.csv")
    rows = list(csv.DictReader(io.StringIO(b"".join(export.streaming_content).decode())))
    assert [(row["kind"], row["task"], row["reason"], row["note"]) for row in rows] == [
        ("sxs", str(item["task"]), "other", "cannot tell")
    ]


@pytest.mark.parametrize("route", ["core", "sxs"])
def test_an_outsider_skipping_a_comparison_gets_404_as_for_an_answer(
    sxs_campaign: Campaign, assessor: AbstractBaseUser, outsider: AbstractBaseUser, api: Client, route: str
) -> None:
    item = next_comparison(api(assessor), sxs_campaign)
    answer = api(outsider).post(f"/api/tasks/{item['task']}/answer/", {"preference": 1}, format="json")
    if route == "core":
        url, body = f"/api/tasks/{item['task']}/skip/", {"reason": "other", "kind": "sxs"}
    else:
        url, body = f"/api/campaigns/{sxs_campaign.pk}/sxs/tasks/{item['task']}/skip/", {"reason": "x"}
    skip = api(outsider).post(url, body, format="json")
    assert (answer.status_code, skip.status_code) == (404, 404)


def test_a_skipped_single_document_never_comes_back_to_its_skipper(
    make_sxs: Callable[..., Campaign], assessor: AbstractBaseUser, api: Client
) -> None:
    from labeling.models import Skip

    campaign = make_sxs(qrels=False)
    client = api(assessor)
    first = client.get(f"/api/campaigns/{campaign.pk}/next/").json()
    assert first["kind"] == "grade"
    body = {"reason": "not_sure", "note": "cannot tell", "kind": "grade"}
    assert client.post(f"/api/tasks/{first['task']}/skip/", body, format="json").status_code == 200
    assert Skip.objects.get().kind == "grade"
    seen = []
    while (item := client.get(f"/api/campaigns/{campaign.pk}/next/")).status_code == 200:
        item = item.json()
        seen.append(item["task"] if item["kind"] == "grade" else None)
        answer = {"grade": 1} if item["kind"] == "grade" else {"preference": 0}
        assert client.post(f"/api/tasks/{item['task']}/answer/", answer, format="json").status_code == 201
    assert seen and first["task"] not in seen


def test_a_reloaded_comparison_page_keeps_its_item_when_the_old_page_reports_late(
    sxs_campaign: Campaign, assessor: AbstractBaseUser, api: Client
) -> None:
    client = api(assessor)
    old_page = next_comparison(client, sxs_campaign)
    new_page = client.get(f"/api/campaigns/{sxs_campaign.pk}/next/").json()
    assert new_page["task"] == old_page["task"] and new_page["lease"] != old_page["lease"]
    url = f"/api/tasks/{new_page['task']}/lease/"
    late = client.post(url, {"state": "left", "kind": "sxs", "lease": old_page["lease"]}, format="json")
    assert late.json()["held"] is False
    assert SxsTask.objects.get(pk=new_page["task"]).assessor_id == assessor.pk
    left = client.post(url, {"state": "left", "kind": "sxs", "lease": new_page["lease"]}, format="json")
    assert left.json()["held"] is True and SxsTask.objects.get(pk=new_page["task"]).assessor_id is None
