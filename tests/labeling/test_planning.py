"""The campaign page's budget planner (labeling.services.planning, POST .../plan/)."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from django.contrib.auth.models import AbstractBaseUser
from rest_framework.test import APIClient

from labeling import services
from labeling.models import Campaign
from labeling.services.planning import _oracle, campaign_plan
from labeling.services.pool_arrays import pool_arrays_for

pytestmark = pytest.mark.django_db

Api = Callable[[AbstractBaseUser | None], APIClient]


def test_it_plans_every_strategy_at_four_budgets_and_recommends_one_in_plain_words(
    campaign: Campaign, coordinator: AbstractBaseUser, api: Api
) -> None:
    response = api(coordinator).post(
        f"/api/campaigns/{campaign.pk}/plan/", {"repetitions": 50}, format="json"
    )
    assert response.status_code == 200, response.content
    plan = response.json()
    budgets = sorted({row["budget"] for row in plan["rows"]})
    assert budgets == [campaign.budget / 4, campaign.budget / 2, campaign.budget, 2 * campaign.budget]
    assert {row["strategy"] for row in plan["rows"]} == {"passive", "active", "items"}
    assert all(0.0 <= row["coverage"] <= 1.0 and row["rmse"] >= 0 for row in plan["rows"])
    advice = plan["recommendation"]
    assert advice["strategy"] in {"passive", "active", "items"}
    assert "Sawade" not in advice["text"] and "Schnabel" not in advice["text"]
    assert "et al." in advice["paper"]
    assert set(plan["budget_for_width"]["budgets"]) == {"passive", "active", "items"}


def test_it_plans_only_for_coordinators_of_sampling_campaigns(
    campaign: Campaign,
    draft_campaign: Campaign,
    assessor: AbstractBaseUser,
    coordinator: AbstractBaseUser,
    api: Api,
) -> None:
    assert api(assessor).post(f"/api/campaigns/{campaign.pk}/plan/", {}, format="json").status_code == 403
    empty = services.campaign_create(creator=coordinator, name="empty", budget=10)
    response = api(coordinator).post(f"/api/campaigns/{empty.pk}/plan/", {}, format="json")
    assert response.status_code == 400 and "pool is empty" in response.json()["detail"]


def test_it_keeps_judged_grades_in_the_truth_and_draws_the_rest_from_the_label_model(
    campaign: Campaign, assessor: AbstractBaseUser
) -> None:
    import numpy as np

    arrays = pool_arrays_for(campaign)
    grades = np.full(arrays.slot_used.shape, -1)
    grades[0, 0] = 2
    certain = np.zeros(arrays.slot_used.shape + (3,))
    certain[..., 1] = 1.0  # the label model is sure every other document is a 1
    qrels = _oracle(grades, certain, arrays, seed=7)
    first_qid, first_docno = arrays.topic_qids[0], arrays.docnos[0][0]
    assert qrels[first_qid][first_docno] == 2
    others = [
        g
        for qid, docs in qrels.items()
        for docno, g in docs.items()
        if (qid, docno) != (first_qid, first_docno)
    ]
    assert set(others) == {1}


def test_it_is_the_same_plan_for_the_same_campaign(campaign: Campaign) -> None:
    assert campaign_plan(campaign, repetitions=30) == campaign_plan(campaign, repetitions=30)


def test_it_offers_the_planner_on_the_graded_campaign_page(
    campaign: Campaign, coordinator: AbstractBaseUser
) -> None:
    from django.test import Client

    client = Client()
    client.force_login(coordinator)
    html = client.get(f"/campaigns/{campaign.pk}/").content.decode()
    assert f'data-url="/api/campaigns/{campaign.pk}/plan/"' in html and "Plan the budget" in html
