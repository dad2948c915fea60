"""A campaign's grade keys follow the rules of every shortcut key (labeling.shortcuts), at
creation and update, through the API and the form; a key refused by them never reaches a judge
page."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from django.contrib.auth.models import AbstractBaseUser
from django.test import Client
from django.urls import reverse
from rest_framework.test import APIClient

from labeling.models import Campaign
from tests.conftest import PASSWORD

Api = Callable[[AbstractBaseUser | None], APIClient]


def grades_with(key: str) -> list[dict[str, str]]:
    return [{"name": "Bad", "key": key}, {"name": "Good", "key": "g"}]


@pytest.mark.parametrize(
    ("key", "words"),
    [
        ("\u0007", "a single visible character"),
        ("\u200b", "a single visible character"),  # zero-width space: nothing to see or type
        ("İ", "one-character lower case"),
        ("G", "grade keys must be distinct"),  # "G" and "g" are one key press
    ],
)
def test_the_api_refuses_a_grade_key_no_shortcut_could_be(
    api: Api, coordinator: AbstractBaseUser, draft_campaign: Campaign, key: str, words: str
) -> None:
    client = api(coordinator)
    created = client.post(
        "/api/campaigns/",
        {"name": "keys", "budget": 10, "grades": grades_with(key)},
        format="json",
    )
    assert created.status_code == 400, created.content
    assert words in created.json()["detail"], created.json()
    assert not Campaign.objects.filter(name="keys").exists()
    updated = client.patch(
        f"/api/campaigns/{draft_campaign.pk}/", {"grades": grades_with(key)}, format="json"
    )
    assert updated.status_code == 400, updated.content
    assert words in updated.json()["detail"], updated.json()
    draft_campaign.refresh_from_db()
    assert [grade["key"] for grade in draft_campaign.grades] == ["0", "1", "2"]


def test_the_form_refuses_a_control_character_as_a_grade_key(coordinator: AbstractBaseUser) -> None:
    client = Client()
    assert client.login(username=coordinator.get_username(), password=PASSWORD)
    response = client.post(
        reverse("labeling:campaign_create"),
        {
            "name": "Bell",
            "metric": "DCG@10",
            "goal": "one",
            "strategy": "passive",
            "grades": "\u0007: Bad\nGood",
            "budget": "10",
            "budget_unit": "judgments",
            "overlap": "1",
        },
    )
    assert response.status_code == 400
    assert "a single visible character" in " ".join(response.context["form"].errors["grades"])
    assert not Campaign.objects.filter(name="Bell").exists()


def test_a_stored_key_the_rules_refuse_leaves_the_judge_page_working(
    assessor: AbstractBaseUser, campaign: Campaign
) -> None:
    # A key stored before the rules applied: that grade has no shortcut, the page still opens.
    Campaign.objects.filter(pk=campaign.pk).update(
        grades=[{"name": "Bad", "key": "\u0007"}, {"name": "Fair", "key": "1"}, {"name": "Good", "key": "2"}]
    )
    client = Client()
    assert client.login(username=assessor.get_username(), password=PASSWORD)
    page = client.get(reverse("labeling:judge_campaign", args=[campaign.pk]))
    assert page.status_code == 200
