"""The app issue's REST contract for pair campaigns: mode and k on create, /next/ with
kind "pair", /tasks/{task}/answer/ with an outcome, /topk/, and graded campaigns unchanged."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from django.contrib.auth.models import AbstractBaseUser
from django.test import Client as DjangoClient
from rest_framework.test import APIClient

from labeling.models import Campaign
from labeling.services.campaigns import campaign_assessors_assign, campaign_start
from pairwise.models import Comparison, PairTask, PairwiseSettings
from tests.pairwise.conftest import GOOD, POOR, _run
from tests.pairwise.helpers import oracle
from uploads.run_imports import runs_import

pytestmark = pytest.mark.django_db

Client = Callable[[AbstractBaseUser | None], APIClient]


@pytest.fixture
def created(api: Client, coordinator: AbstractBaseUser, assessor: AbstractBaseUser) -> Campaign:
    """A top-3 campaign made through POST /api/campaigns/, runs imported, alice assigned, running."""
    response = api(coordinator).post(
        "/api/campaigns/",
        {"name": "top three", "metric": "DCG@5", "budget": 100, "mode": "topk", "k": 3},
        format="json",
    )
    assert response.status_code == 201, response.content
    assert response.json()["mode"] == "topk" and response.json()["k"] == 3
    campaign = Campaign.objects.get(pk=response.json()["id"])
    runs_import(campaign=campaign, files=[_run("good", GOOD), _run("poor", POOR)])
    campaign_assessors_assign(campaign=campaign, usernames=["alice"])
    return campaign_start(campaign=campaign)


def test_it_creates_a_top_k_campaign_with_its_pairwise_settings(created: Campaign) -> None:
    pairwise = PairwiseSettings.objects.get(campaign=created)
    assert (created.judging_mode, pairwise.k) == ("topk", 3)
    assert created.judging_mode == "topk"
    assert not created.tasks.exists(), "a pair campaign draws no graded items"


def test_it_judges_a_top_k_through_the_app_endpoints(
    api: Client, created: Campaign, assessor: AbstractBaseUser, coordinator: AbstractBaseUser
) -> None:
    client = api(assessor)
    answered = 0
    while True:
        response = client.get(f"/api/campaigns/{created.pk}/next/")
        if response.status_code == 204:
            break
        pair = response.json()
        assert pair["kind"] == "pair" and pair["left"]["docno"] != pair["right"]["docno"]
        outcome = oracle(pair["left"]["docno"], pair["right"]["docno"])
        stored = client.post(
            f"/api/tasks/{pair['task']}/answer/", {"outcome": outcome, "seconds": 1.0}, format="json"
        )
        assert stored.status_code == 201
        again = client.post(
            f"/api/tasks/{pair['task']}/answer/", {"outcome": outcome, "seconds": 1.0}, format="json"
        )
        assert again.status_code == 409, "an answered pair is no longer pending"
        answered += 1
    assert answered == Comparison.objects.count() > 0
    rows = api(coordinator).get(f"/api/campaigns/{created.pk}/topk/").json()
    assert len(rows) == 2
    for row in rows:
        assert row["done"] and row["assessor"] == "alice"
        assert [int(docno.rsplit("-", 1)[1]) for docno in row["order"]] == [8, 7, 6]


def test_it_undoes_a_pair_answer_through_the_app_endpoint(
    api: Client, created: Campaign, assessor: AbstractBaseUser
) -> None:
    client = api(assessor)
    pair = client.get(f"/api/campaigns/{created.pk}/next/").json()
    client.post(f"/api/tasks/{pair['task']}/answer/", {"outcome": "tie"}, format="json")
    undone = client.post(f"/api/campaigns/{created.pk}/undo/")
    assert undone.status_code == 200 and undone.json()["kind"] == "pair"
    assert undone.json()["task"] == pair["task"]
    assert PairTask.objects.get(pk=pair["task"]).answered_at is None


def test_it_keeps_graded_campaigns_graded(
    api: Client, campaign: Campaign, assessor: AbstractBaseUser
) -> None:
    response = api(assessor).get(f"/api/campaigns/{campaign.pk}/next/")
    assert response.status_code == 200 and response.json()["kind"] == "grade"
    assert (
        api(assessor).post(f"/api/tasks/{response.json()['task']}/answer/", {"grade": 1}).status_code == 201
    )


def test_it_creates_a_top_k_campaign_from_the_html_form(coordinator: AbstractBaseUser) -> None:
    client = DjangoClient()
    client.force_login(coordinator)
    form = {
        "name": "form top-k",
        "metric": "DCG@10",
        "goal": "one",
        "strategy": "passive",
        "grades": "Bad\nGood",
        "budget": "100",
        "budget_unit": "judgments",
        "overlap": "2",
        "judging_mode": "topk",
        "topk_k": "4",
    }
    assert client.post("/campaigns/new/", form).status_code == 302
    pairwise = PairwiseSettings.objects.get(campaign__name="form top-k")
    assert (pairwise.campaign.judging_mode, pairwise.k) == ("topk", 4)


def test_it_keeps_the_campaign_mode_in_step_with_the_pairwise_settings(
    api: Client, created: Campaign, coordinator: AbstractBaseUser
) -> None:
    response = api(coordinator).put(
        f"/api/campaigns/{created.pk}/pairwise/settings/", {"k": 5}, format="json"
    )
    assert response.status_code == 200
    shown = api(coordinator).get(f"/api/campaigns/{created.pk}/").json()
    assert (shown["mode"], shown["k"]) == ("topk", 5)
