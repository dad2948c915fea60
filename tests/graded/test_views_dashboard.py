"""The coordinator's dashboard page: who may open it, what it links to, and its model summary."""

from __future__ import annotations

import json
import re

import pytest
from django.contrib.auth.models import AbstractBaseUser
from django.test import Client
from django.urls import reverse

from graded.claims import task_next
from graded.judging import task_answer
from labeling.models import Campaign, Judgment
from labeling.recompute import recompute
from sampling import dashboard
from sampling.models import SamplingState
from tests.conftest import PASSWORD


def client_for(user: AbstractBaseUser | None) -> Client:
    client = Client()
    if user is not None:
        assert client.login(username=user.get_username(), password=PASSWORD)
    return client


def dashboard_urls(campaign: Campaign) -> list[str]:
    return [
        reverse("labeling:campaign_dashboard", args=[campaign.pk]),
        reverse("graded:dashboard_model", args=[campaign.pk]),
    ]


def page_config(html: str) -> dict:
    found = re.search(r'<script id="dashboard-config" type="application/json">(.*?)</script>', html, re.S)
    assert found, "the page embeds its configuration"
    return json.loads(found.group(1))


def judge(campaign: Campaign, assessor: AbstractBaseUser, count: int) -> int:
    """Answer up to `count` items as `assessor`, grade 1 then 2 alternately; returns how many."""
    answered = 0
    while answered < count:
        task = task_next(campaign=campaign, assessor=assessor)
        if task is None:
            break
        task_answer(task=task, assessor=assessor, grade=1 + answered % 2, seconds=3.0)
        answered += 1
    return answered


# Assessors judge but never see estimates (403); outsiders do not learn the campaign exists.
EXPECTED = {"assessor": 403, "outsider": 404, "coordinator": 200, "admin": 200}


@pytest.mark.parametrize("persona", sorted(EXPECTED))
def test_it_shows_the_dashboard_only_to_coordinators_and_admins(
    persona: str, request: pytest.FixtureRequest, campaign: Campaign
) -> None:
    client = client_for(request.getfixturevalue(persona))
    statuses = {client.get(url).status_code for url in dashboard_urls(campaign)}
    assert statuses == {EXPECTED[persona]}


def test_it_sends_anonymous_visitors_to_the_login_page(campaign: Campaign) -> None:
    for url in dashboard_urls(campaign):
        response = Client().get(url)
        assert response.status_code == 302
        assert response["Location"].startswith(reverse("login"))


def test_it_refuses_to_change_anything_through_the_dashboard(
    coordinator: AbstractBaseUser, campaign: Campaign
) -> None:
    client = client_for(coordinator)
    assert {client.post(url).status_code for url in dashboard_urls(campaign)} == {405}


def test_it_points_the_page_at_api_endpoints_that_answer(
    coordinator: AbstractBaseUser, campaign: Campaign
) -> None:
    client = client_for(coordinator)
    response = client.get(reverse("labeling:campaign_dashboard", args=[campaign.pk]))
    config = page_config(response.content.decode())
    assert config["campaign"] == campaign.pk
    assert config["can_evaluate"] is True
    assert config["poll_seconds"] > 0
    expected = {
        "estimates",
        "estimates-history",
        "sampling",
        "throughput",
        "progress",
        "evaluate",
        "arrivals",
        "model",
    }
    assert set(config["urls"]) == expected
    for name, url in config["urls"].items():
        answer = client.get(url, HTTP_ACCEPT="application/json")
        assert answer.status_code == 200, name
        assert answer["Content-Type"].startswith("application/json"), name
    assert b"dashboard.js" in response.content


def test_it_links_the_dashboard_from_the_campaign_page_and_home(
    coordinator: AbstractBaseUser, assessor: AbstractBaseUser, campaign: Campaign
) -> None:
    dashboard = reverse("labeling:campaign_dashboard", args=[campaign.pk])
    coordinator_client = client_for(coordinator)
    detail = coordinator_client.get(reverse("labeling:campaign_detail", args=[campaign.pk]))
    assert f'href="{dashboard}"' in detail.content.decode()
    assert f'href="{dashboard}"' in coordinator_client.get(reverse("labeling:home")).content.decode()
    assert dashboard not in client_for(assessor).get(reverse("labeling:home")).content.decode()


def test_it_reports_the_label_model_after_each_refit(
    coordinator: AbstractBaseUser, assessor: AbstractBaseUser, campaign: Campaign
) -> None:
    client = client_for(coordinator)
    url = reverse("graded:dashboard_model", args=[campaign.pk])
    recompute(campaign.pk)
    first = client.get(url).json()
    assert first["strategy"] == campaign.strategy
    assert first["label_model"]["n_labels"] == 0
    assert first["refit_at"] is not None

    assert judge(campaign, assessor, 4) == 4
    recompute(campaign.pk)
    second = client.get(url).json()
    judged_items = Judgment.objects.filter(campaign=campaign).values("topic", "document").distinct().count()
    assert second["label_model"]["n_labels"] == judged_items
    assert second["version"] > first["version"]
    assert second["cost_model"]["kind"]


def test_it_says_no_model_is_fitted_before_the_first_recompute(
    coordinator: AbstractBaseUser, draft_campaign: Campaign
) -> None:
    summary = client_for(coordinator).get(reverse("graded:dashboard_model", args=[draft_campaign.pk])).json()
    assert summary["label_model"] is None
    assert summary["refit_at"] is None
    assert summary["level"] == "query"


@pytest.mark.parametrize(
    ("cost_model", "weak"),
    [
        ({"kind": "fitted", "r_squared": 0.006}, True),  # seen in a real campaign: length barely matters
        ({"kind": "fitted", "r_squared": 0.8}, False),
        ({"kind": "fitted", "r_squared": None}, False),  # no spread in the seconds: nothing to judge by
        ({"kind": "log_length"}, False),  # the default before enough timed judgments
    ],
)
def test_it_flags_a_cost_fit_that_explains_little(cost_model: dict[str, object], weak: bool) -> None:
    assert dashboard.cost_fit_is_weak(cost_model) is weak


def test_it_tells_the_dashboard_whether_the_cost_fit_is_weak(campaign: Campaign) -> None:
    recompute(campaign.pk)
    summary = dashboard.campaign_model_summary(campaign)
    assert summary["cost_model"]["kind"] in ("constant", "log_length")
    assert summary["cost_model"]["weak_fit"] is False
    state = SamplingState.objects.get(campaign=campaign)
    state.cost_model = {**state.cost_model, "kind": "fitted", "n_points": 40, "r_squared": 0.006}
    state.save()
    assert dashboard.campaign_model_summary(campaign)["cost_model"]["weak_fit"] is True
