"""Requests no database may see are refused before any view reads them, alike on SQLite and
PostgreSQL (this module runs on both): ids longer than a database key, NUL characters in a URL's
query or a form field, integers beyond what a setting's column holds."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from django.contrib.auth.models import AbstractBaseUser
from django.test import Client
from rest_framework.test import APIClient

from graded.models import GoldAnswer
from labeling.models import Campaign, Judgment

pytestmark = pytest.mark.django_db

Api = Callable[[AbstractBaseUser | None], APIClient]
HUGE = "99999999999999999999"


def test_an_id_longer_than_a_database_key_is_a_404_on_every_route(
    campaign: Campaign, assessor: AbstractBaseUser, admin: AbstractBaseUser, api: Api
) -> None:
    answer = api(assessor).post(f"/api/tasks/{HUGE}/answer/", {"grade": 1}, format="json")
    assert answer.status_code == 404
    assert api(admin).get(f"/api/campaigns/{HUGE}/").status_code == 404
    page = Client()
    page.force_login(admin)
    assert page.get(f"/campaigns/{HUGE}/").status_code == 404
    assert api(assessor).get("/api/campaigns/999999999999999999/").status_code == 404, "18 digits: no row"
    assert not Judgment.objects.exists()


@pytest.mark.parametrize("query", [f"campaign={HUGE}", f"page={HUGE}", "campaign=-1", "page=two"])
def test_a_query_number_that_is_no_database_key_is_a_400_naming_it(
    campaign: Campaign, assessor: AbstractBaseUser, api: Api, query: str
) -> None:
    response = api(assessor).get(f"/api/my/judgments/?{query}")
    assert response.status_code == 400
    assert response.json()["detail"].startswith(query.split("=")[0] + " must be a whole number")


def test_a_snapshot_after_beyond_a_key_is_a_400(
    campaign: Campaign, coordinator: AbstractBaseUser, api: Api
) -> None:
    response = api(coordinator).get(f"/api/campaigns/{campaign.pk}/estimates/history/?after={HUGE}")
    assert response.status_code == 400 and "after" in response.json()["detail"]


def test_a_nul_in_a_query_or_a_form_field_is_a_400(
    campaign: Campaign, assessor: AbstractBaseUser, coordinator: AbstractBaseUser, api: Api
) -> None:
    search = api(assessor).get("/api/my/judgments/?search=%00")
    assert search.status_code == 400 and "NUL" in search.json()["detail"]
    page = Client()
    page.force_login(assessor)
    assert page.get("/my/judgments/?q=a%00b").status_code == 400
    gold = Client()
    gold.force_login(coordinator)
    resume = gold.post(f"/campaigns/{campaign.pk}/gold/", {"action": "resume", "username": "\x00"})
    assert resume.status_code == 400
    assert not GoldAnswer.objects.exists()


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"mode": "topk", "k": 100000000000}, "k"),
        ({"goal": "leaderboard", "goal_k": 100000000000}, "goal_k"),
        ({"pool_depth": 100000000000}, "pool_depth"),
    ],
)
def test_an_integer_setting_beyond_its_column_is_a_400_naming_it(
    coordinator: AbstractBaseUser, api: Api, body: dict, field: str
) -> None:
    response = api(coordinator).post("/api/campaigns/", {"name": "big", "budget": 10, **body}, format="json")
    assert response.status_code == 400 and field in response.json(), response.content
    assert not Campaign.objects.exists()


def test_mode_settings_beyond_their_range_are_refused_in_the_service(coordinator: AbstractBaseUser) -> None:
    from labeling.services.campaigns import campaign_create

    with pytest.raises(ValueError, match="k must be from 1 to 1000"):
        campaign_create(
            creator=coordinator, name="big", budget=10, judging_mode="topk", mode_settings={"k": 10**11}
        )
    with pytest.raises(ValueError, match="pool_depth must be from 1 to 100000"):
        campaign_create(creator=coordinator, name="deep", budget=10, pool_depth=10**11)
