"""A clone of a campaign that runs arrived in is the campaign as it was before any arrival (the
budget as set, the runs pooled before), unless the coordinator asks for the grown budget and the
arrived runs; the clone page lists both."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import AbstractBaseUser
from django.test import Client
from rest_framework.test import APIClient

from labeling.models import Campaign, PoolItem, Verdict
from labeling.services.campaign_copies import budget_before_arrivals, campaign_clone
from labeling.services.campaigns import campaign_assessors_assign, campaign_create, campaign_start
from sampling import arrival_add
from tests.conftest import RUN_A, RUN_B, upload
from tests.sampling.helpers import RUN_C, judge_some
from uploads.run_imports import runs_import

SET_BUDGET = 8
TOPUP = 10


@pytest.fixture
def arrived(coordinator: AbstractBaseUser, assessor: AbstractBaseUser) -> Campaign:
    """Alpha and beta judged to the budget of 8, then gamma arrived with a top-up of 10."""
    campaign = campaign_create(
        creator=coordinator, name="Release 1", metric="DCG@5", grades=["0", "1", "2"], strategy="items",
        budget=SET_BUDGET, goal="difference", focus_systems=["alpha", "beta"],
    )  # fmt: skip
    runs_import(campaign=campaign, files=[upload("a.run", RUN_A), upload("b.run", RUN_B)])
    campaign_assessors_assign(campaign=campaign, usernames=[assessor.get_username()])
    campaign = campaign_start(campaign=campaign)
    judge_some(campaign, assessor, 20)
    arrival_add(campaign=campaign, files=[upload("c.run", RUN_C)], budget=TOPUP, reference="beta")
    campaign.refresh_from_db()
    assert campaign.budget == SET_BUDGET + TOPUP
    return campaign


def _pooled_docnos(campaign: Campaign) -> set[str]:
    return set(PoolItem.objects.filter(campaign=campaign).values_list("document__docno", flat=True))


def test_a_clone_is_the_campaign_before_its_arrivals_unless_asked(
    arrived: Campaign, coordinator: AbstractBaseUser
) -> None:
    before = campaign_clone(campaign=arrived, creator=coordinator)
    assert before.budget == SET_BUDGET
    assert sorted(before.systems.values_list("name", flat=True)) == ["alpha", "beta"]
    assert before.focus_systems == ["alpha", "beta"]
    only_gamma = _pooled_docnos(arrived) - _pooled_docnos(before)
    assert only_gamma, "the arrived run pooled documents the others do not rank"
    grown = campaign_clone(campaign=arrived, creator=coordinator, with_arrivals=True)
    assert grown.budget == SET_BUDGET + TOPUP
    assert sorted(grown.systems.values_list("name", flat=True)) == ["alpha", "beta", "gamma"]
    assert _pooled_docnos(grown) == _pooled_docnos(arrived)
    assert not grown.arrivals.exists(), "the arrived run is an ordinary pooled run in the clone"


def test_the_budget_before_arrivals_gives_back_what_a_verdict_took_off(arrived: Campaign) -> None:
    # A verdict decided before its top-up was spent took 4 off the budget.
    Verdict.objects.filter(arrival__campaign=arrived).update(returned=4.0)
    Campaign.objects.filter(pk=arrived.pk).update(budget=arrived.budget - 4.0)
    arrived.refresh_from_db()
    assert budget_before_arrivals(arrived) == SET_BUDGET


def test_the_clone_page_and_the_api_say_and_take_the_choice(
    arrived: Campaign, coordinator: AbstractBaseUser
) -> None:
    client = Client()
    client.force_login(coordinator)
    page = client.get(f"/campaigns/{arrived.pk}/clone/").content.decode()
    assert "1 run arrived in this campaign with a human top-up" in page and "(gamma)" in page
    assert (
        f"budget <strong>{SET_BUDGET}</strong>, as it was set (now {SET_BUDGET + TOPUP} with the top-ups)"
        in page
    )
    assert 'name="with_arrivals"' in page
    client.post(f"/campaigns/{arrived.pk}/clone/", {"name": "grown", "with_arrivals": "1"})
    assert Campaign.objects.get(name="grown").budget == SET_BUDGET + TOPUP
    api = APIClient()
    api.force_authenticate(coordinator)
    answer = api.post(f"/api/campaigns/{arrived.pk}/clone/", {"name": "as set"}, format="json")
    assert answer.status_code == 201, answer.content
    assert answer.json()["budget"] == SET_BUDGET
    assert Campaign.objects.get(name="as set").systems.count() == 2
