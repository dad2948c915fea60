"""The learned-DCG endpoint and "use these gains and discounts in campaign ...": personas, other
modes, no fit yet, and apply's 400 / 403 / 404 / 200."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from django.contrib.auth.models import AbstractBaseUser
from rest_framework.test import APIClient

from labeling.models import Campaign
from labeling.services.campaigns import campaign_assessors_assign, campaign_create
from sxs import services
from sxs.selectors import apply_targets
from tests.sxs.oracle import LEARN_SYSTEMS, answer_by_oracle, make_learning_campaign

pytestmark = pytest.mark.django_db

Api = Callable[[AbstractBaseUser | None], APIClient]


def graded(
    creator: AbstractBaseUser, *, metric: str = "DCG@3", grades: int = 3, name: str = "graded"
) -> Campaign:
    return campaign_create(
        creator=creator, name=name, metric=metric, grades=["Bad", "Fair", "Good", "Great"][:grades], budget=10
    )


@pytest.fixture
def fitted(coordinator: AbstractBaseUser, assessor: AbstractBaseUser) -> Campaign:
    campaign = make_learning_campaign(coordinator, ["alice"], name="lists")
    answer_by_oracle(campaign, assessor)
    services.sxs_refit(campaign=campaign)
    return campaign


def test_it_serves_the_fit_to_coordinators_and_admins_only(
    fitted: Campaign,
    coordinator: AbstractBaseUser,
    admin: AbstractBaseUser,
    assessor: AbstractBaseUser,
    outsider: AbstractBaseUser,
    api: Api,
) -> None:
    url = f"/api/campaigns/{fitted.pk}/learned-dcg/"
    for user in (coordinator, admin):
        body = api(user).get(url).json()
        assert body["status"] == "fitted" and body["answers"] == 40
        assert len(body["gains"]) == 3 and len(body["discounts"]) == 3 == len(body["discounts_low"])
        accuracies = {"learned", "learned_full_w", "learned_best_of_grid", "exp", "linear"}
        assert set(body["accuracy"]) == accuracies and body["accuracy_curve"]
        assert len(body["transformed"]) == 3 and body["sigma_ratio"] is not None
        assert {row["system"] for row in body["leaderboard"]} == set(LEARN_SYSTEMS)
        assert sorted(row["rank_learned_dcg"] for row in body["leaderboard"])[0] == 1
        for row in body["leaderboard"]:
            assert set(row) >= {"learned_dcg", "utility", "standard", "rank_utility"}
        assert body["kendall_tau"] is not None and body["kendall_tau_utility"] is not None
        assert body["disagreeing_answers"]["count"] >= 0
        diagnostics = body["diagnostics"]
        assert diagnostics["in_sample"] is False and diagnostics["scored"] > 0
        assert sum(row["answers"] for row in diagnostics["by_difference"]) == diagnostics["scored"]
        assert set(diagnostics["by_difference"][0]["accuracy"]) == {"learned_dcg", "exp", "linear", "utility"}
        assert isinstance(body["tie_curve"], list)
        assert body["pairs"] > 0 and body["fitted_at"]
    assert api(assessor).get(url).status_code == 403
    assert api(outsider).get(url).status_code == 404
    assert api(None).get(url).status_code in (401, 403)


def test_it_answers_404_for_a_campaign_of_another_mode(coordinator: AbstractBaseUser, api: Api) -> None:
    other = graded(coordinator)
    assert api(coordinator).get(f"/api/campaigns/{other.pk}/learned-dcg/").status_code == 404
    response = api(coordinator).post(f"/api/campaigns/{other.pk}/learned-dcg/apply/", {"campaign": other.pk})
    assert response.status_code == 404


def test_it_says_why_there_is_no_fit_and_how_many_answers_are_needed(
    coordinator: AbstractBaseUser, assessor: AbstractBaseUser, api: Api
) -> None:
    campaign = make_learning_campaign(coordinator, ["alice"])
    url = f"/api/campaigns/{campaign.pk}/learned-dcg/"
    body = api(coordinator).get(url).json()
    assert body["status"] == "waiting" and body["needed"] == 10 and body["gains"] is None
    answer_by_oracle(campaign, assessor, 4)
    services.sxs_refit(campaign=campaign)
    body = api(coordinator).get(url).json()
    assert body["status"] == "insufficient" and body["answers"] == 4
    assert body["needed"] >= 6 and "more needed" in body["reason"]
    target = graded(coordinator)
    response = api(coordinator).post(url + "apply/", {"campaign": target.pk}, format="json")
    assert response.status_code == 400 and "no learned gains" in response.json()["detail"]


def test_it_applies_the_learned_gains_and_discounts_to_a_campaign_the_user_manages(
    fitted: Campaign, coordinator: AbstractBaseUser, api: Api
) -> None:
    target = graded(coordinator)
    response = api(coordinator).post(
        f"/api/campaigns/{fitted.pk}/learned-dcg/apply/", {"campaign": target.pk}, format="json"
    )
    assert response.status_code == 200, response.content
    target.refresh_from_db()
    fit = fitted.sxs_fits.first()
    assert target.custom_dcg["gains"] == [round(g, 4) + 0.0 for g in fit.result["gains"]]
    assert len(target.custom_dcg["discounts"]) == 3
    source = target.custom_dcg["source"]
    assert source.startswith("learned from side-by-side campaign 'lists' (40 answers, ")
    assert response.json()["metric_label"].startswith("DCG@3 with custom gains")
    assert response.json()["custom_dcg"] == target.custom_dcg


def test_it_refuses_a_target_that_does_not_fit_with_the_reason(
    fitted: Campaign, coordinator: AbstractBaseUser, api: Api
) -> None:
    url = f"/api/campaigns/{fitted.pk}/learned-dcg/apply/"
    deeper, wider = (
        graded(coordinator, metric="DCG@5", name="deeper"),
        graded(coordinator, grades=4, name="wider"),
    )
    for target, reason in ((deeper, "3 discounts for a cutoff of 5"), (wider, "3 gains for 4 grades")):
        response = api(coordinator).post(url, {"campaign": target.pk}, format="json")
        assert response.status_code == 400, response.content
        assert reason in response.json()["detail"]
        target.refresh_from_db()
        assert target.custom_dcg is None
    assert [c.name for c in apply_targets(coordinator, fitted)] == [], "neither is offered"
    fits = graded(coordinator, name="fits")
    assert [c.name for c in apply_targets(coordinator, fitted)] == ["fits"]
    assert fits.custom_dcg is None


def test_it_needs_the_user_to_manage_the_target(
    fitted: Campaign, coordinator: AbstractBaseUser, make_user: Callable[..., AbstractBaseUser], api: Api
) -> None:
    dora = make_user("dora", "coordinator")
    hidden = graded(dora, name="dora's")
    judged = graded(dora, name="carl judges it")
    campaign_assessors_assign(campaign=judged, usernames=["carl"])
    url = f"/api/campaigns/{fitted.pk}/learned-dcg/apply/"
    assert api(coordinator).post(url, {"campaign": hidden.pk}, format="json").status_code == 404
    assert api(coordinator).post(url, {"campaign": judged.pk}, format="json").status_code == 403
    assert api(coordinator).post(url, {"campaign": "x"}, format="json").status_code == 400
    for target in (hidden, judged):
        target.refresh_from_db()
        assert target.custom_dcg is None
