"""The campaign list: search and filter, clone (settings, files, members; no judgments), archive
and delete (admins, after the name is typed)."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from django.contrib.auth.models import AbstractBaseUser
from django.test import Client
from django.urls import reverse

from graded import gold as gold_questions
from graded.claims import task_next
from graded.judging import task_answer
from graded.models import GoldAnswer, GoldItem, GoldSettings
from labeling import dashboard
from labeling.models import Campaign, Judgment, PoolItem, RankingEntry
from labeling.services.campaign_copies import campaign_clone
from labeling.services.campaigns import campaign_create, campaign_update
from tests.conftest import PASSWORD, upload
from uploads.imports import qrels_import, topics_import

# Database-specific: `make test` runs this module again on PostgreSQL (tests/test_database_specific.py).
pytestmark = pytest.mark.postgresql


def _client(user: AbstractBaseUser) -> Client:
    client = Client()
    assert client.login(username=user.get_username(), password=PASSWORD)
    return client


def _judge(campaign: Campaign, assessor: AbstractBaseUser, count: int) -> None:
    for _ in range(count):
        task = task_next(campaign=campaign, assessor=assessor)
        assert task is not None
        task_answer(task=task, assessor=assessor, grade=2, seconds=3.0)


def _lines(campaign: Campaign) -> set[tuple[str, str, str, int, float]]:
    return set(
        RankingEntry.objects.filter(system__campaign=campaign).values_list(
            "system__name", "topic__qid", "document__docno", "rank", "score"
        )
    )


def test_a_clone_takes_settings_files_and_members_but_no_judgments(
    campaign: Campaign, assessor: AbstractBaseUser, coordinator: AbstractBaseUser
) -> None:
    topics_import(campaign=campaign, files=[upload("t.jsonl", '{"id": "1", "title": "cats"}\n')])
    campaign_update(campaign=campaign, overlap=2, lease_seconds=120, budget=77)
    _judge(campaign, assessor, 3)
    campaign.refresh_from_db()

    clone = campaign_clone(campaign=campaign, creator=coordinator, name="toy again")

    assert clone.name == "toy again" and clone.status == Campaign.Status.DRAFT
    assert (clone.metric, clone.grades, clone.overlap, clone.lease_seconds, clone.budget) == (
        campaign.metric,
        campaign.grades,
        2,
        120,
        77,
    )
    assert clone.seed != campaign.seed
    assert _lines(clone) == _lines(campaign) and len(_lines(clone)) == 30
    assert clone.topics.get(qid="1").title == "cats"
    assert set(clone.documents.values_list("docno", flat=True)) == set(
        campaign.documents.values_list("docno", flat=True)
    )
    pool = set(
        PoolItem.objects.filter(campaign=clone).values_list("topic__qid", "document__docno", "best_rank")
    )
    assert pool == set(
        PoolItem.objects.filter(campaign=campaign).values_list("topic__qid", "document__docno", "best_rank")
    )
    assert PoolItem.objects.filter(campaign=clone, drawn=True).count() == 0
    assert Judgment.objects.filter(campaign=campaign).count() == 3
    assert Judgment.objects.filter(campaign=clone).count() == 0
    assert set(clone.members.values_list("user__username", "role")) == set(
        campaign.members.values_list("user__username", "role")
    )


def test_a_clone_keeps_imported_qrels_and_the_pair_modes_settings(
    draft_campaign: Campaign, coordinator: AbstractBaseUser
) -> None:
    qrels_import(campaign=draft_campaign, files=[upload("q", "1 0 d1-1 2\n2 0 d2-3 1\n")])
    campaign_update(campaign=draft_campaign, judging_mode="topk", mode_settings={"k": 3})
    draft_campaign.refresh_from_db()
    clone = campaign_clone(campaign=draft_campaign, creator=coordinator)
    assert clone.name == "toy (copy)" and clone.judging_mode == "topk"
    from labeling.modes import mode_of

    assert mode_of(clone).settings_of(clone)["k"] == 3
    qrels = set(
        Judgment.objects.filter(campaign=clone).values_list(
            "topic__qid", "document__docno", "grade", "source"
        )
    )
    assert qrels == {("1", "d1-1", 2, "qrels"), ("2", "d2-3", 1, "qrels")}
    assert PoolItem.objects.filter(campaign=clone, prejudged=True).count() == 2


def test_a_clone_keeps_the_gold_questions_and_settings_but_no_gold_answers(
    campaign: Campaign, assessor: AbstractBaseUser, coordinator: AbstractBaseUser, api: Callable
) -> None:
    qrels_import(campaign=campaign, files=[upload("q", "1 0 d1-1 2\n2 0 d2-3 1\n")])
    assert gold_questions.gold_mark_from_qrels(campaign=campaign) == 2
    gold_questions.gold_configure(
        campaign=campaign, share=0.0, qualification=2, min_accuracy=0.75, min_answers=3
    )
    client = api(assessor)
    item = client.get(f"/api/campaigns/{campaign.pk}/next/").json()  # a gold question first
    assert client.post(f"/api/tasks/{item['task']}/answer/", {"grade": 0}, format="json").status_code == 201
    assert GoldAnswer.objects.filter(gold__campaign=campaign).count() == 1

    clone = campaign_clone(campaign=campaign, creator=coordinator)

    gold = set(GoldItem.objects.filter(campaign=clone).values_list("topic__qid", "document__docno", "grade"))
    assert gold == {("1", "d1-1", 2), ("2", "d2-3", 1)}
    settings = GoldSettings.objects.get(campaign=clone)
    assert (settings.qualification, settings.min_accuracy, settings.min_answers) == (2, 0.75, 3)
    assert clone.gold_active and Campaign.objects.get(pk=clone.pk).gold_active
    assert not GoldAnswer.objects.filter(gold__campaign=clone).exists()


def test_archiving_pauses_and_hides_a_campaign_until_it_is_brought_back(
    campaign: Campaign, assessor: AbstractBaseUser, coordinator: AbstractBaseUser
) -> None:
    client = _client(coordinator)
    response = client.post(reverse("labeling:campaign_archive", args=[campaign.pk]), {"archived": "1"})
    assert response.status_code == 302
    campaign.refresh_from_db()
    assert campaign.status == Campaign.Status.PAUSED and campaign.archived_at is not None
    assert list(dashboard.campaigns_to_judge(assessor)) == []
    assert list(dashboard.campaigns_listed(coordinator)) == []
    assert list(dashboard.campaigns_listed(coordinator, status="archived")) == [campaign]
    listed = client.get(reverse("labeling:campaign_list"), {"status": "archived"})
    assert b"Unarchive" in listed.content and campaign.name.encode() in listed.content
    client.post(reverse("labeling:campaign_archive", args=[campaign.pk]), {"archived": "0"})
    assert list(dashboard.campaigns_to_judge(assessor)) == [Campaign.objects.get(pk=campaign.pk)]


def test_the_list_searches_names_and_metrics_and_filters_by_status(
    campaign: Campaign, coordinator: AbstractBaseUser, api: Callable
) -> None:
    other = campaign_create(creator=coordinator, name="Robust replay", metric="ERR@20", budget=5)
    client = _client(coordinator)
    page = client.get(reverse("labeling:campaign_list"), {"q": "robust"})
    assert [row.pk for row in page.context["campaigns"]] == [other.pk]
    page = client.get(reverse("labeling:campaign_list"), {"q": "err@"})
    assert [row.pk for row in page.context["campaigns"]] == [other.pk]
    page = client.get(reverse("labeling:campaign_list"), {"status": "running"})
    assert [row.pk for row in page.context["campaigns"]] == [campaign.pk]
    coordinator_api = api(coordinator)
    assert [row["id"] for row in coordinator_api.get("/api/campaigns/?status=draft").json()] == [other.pk]
    assert [row["id"] for row in coordinator_api.get("/api/campaigns/?search=toy").json()] == [campaign.pk]
    assert coordinator_api.get("/api/campaigns/?status=sleeping").status_code == 400


def test_only_admins_delete_and_only_after_typing_the_name(
    campaign: Campaign, coordinator: AbstractBaseUser, admin: AbstractBaseUser, api: Callable
) -> None:
    url = reverse("labeling:campaign_delete", args=[campaign.pk])
    assert _client(coordinator).post(url, {"name": campaign.name}).status_code == 403
    assert api(coordinator).delete(f"/api/campaigns/{campaign.pk}/").status_code == 403
    client = _client(admin)
    page = client.get(url)
    assert page.status_code == 200 and b"Download first" in page.content
    assert client.post(url, {"name": "not it"}).status_code == 400
    assert Campaign.objects.filter(pk=campaign.pk).exists()
    assert client.post(url, {"name": campaign.name}).status_code == 302
    assert not Campaign.objects.filter(pk=campaign.pk).exists()
    assert not RankingEntry.objects.filter(system__campaign_id=campaign.pk).exists()


def test_the_api_clones_archives_and_deletes(
    campaign: Campaign,
    coordinator: AbstractBaseUser,
    admin: AbstractBaseUser,
    assessor: AbstractBaseUser,
    api: Callable,
) -> None:
    assert api(assessor).post(f"/api/campaigns/{campaign.pk}/clone/", {}, format="json").status_code == 403
    made = api(coordinator).post(f"/api/campaigns/{campaign.pk}/clone/", {"name": "again"}, format="json")
    assert made.status_code == 201 and made.json()["name"] == "again" and made.json()["status"] == "draft"
    archived = api(coordinator).post(f"/api/campaigns/{campaign.pk}/archive/", {}, format="json").json()
    assert archived["archived_at"] is not None and archived["status"] == "paused"
    assert api(admin).delete(f"/api/campaigns/{made.json()['id']}/").status_code == 204
    assert not Campaign.objects.filter(pk=made.json()["id"]).exists()


def test_the_clone_page_names_what_is_copied(campaign: Campaign, coordinator: AbstractBaseUser) -> None:
    client = _client(coordinator)
    page = client.get(reverse("labeling:campaign_clone", args=[campaign.pk]))
    assert page.status_code == 200 and b'value="toy (copy)"' in page.content
    response = client.post(reverse("labeling:campaign_clone", args=[campaign.pk]), {"name": "second round"})
    clone = Campaign.objects.get(name="second round")
    assert response.status_code == 302 and response["Location"].endswith(f"/campaigns/{clone.pk}/")


def test_the_clone_page_says_which_files_have_no_text_and_that_judges_are_not_copied(
    campaign: Campaign, coordinator: AbstractBaseUser
) -> None:
    from sampling import judge_create

    judge_create(campaign=campaign, name="lenient", model="m")
    client = _client(coordinator)
    page = " ".join(
        client.get(reverse("labeling:campaign_clone", args=[campaign.pk])).content.decode().split()
    )
    # The toy campaign has runs only: every topic and document is named by the runs alone.
    assert "3 topics, 3 of them named only by the runs, without text" in page
    assert 'id="clone-judges"' in page and "Model judges are not copied" in page
    response = client.post(
        reverse("labeling:campaign_clone", args=[campaign.pk]), {"name": "again"}, follow=True
    )
    assert "1 model judge(s) were not copied" in response.content.decode()
