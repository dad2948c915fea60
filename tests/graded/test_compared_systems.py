"""The system evaluated or the pair compared is chosen on the campaign page: the page names
what the sampling aims at and whether anyone chose it, the pre-flight says when nobody did,
Start stores what was taken, and config.json exports it."""

from __future__ import annotations

import json

import pytest
from django.contrib.auth.models import AbstractBaseUser
from django.test import Client
from django.urls import reverse

from labeling.models import Campaign
from labeling.modes import campaign_preflight
from labeling.services.campaigns import campaign_assessors_assign, campaign_start, campaign_update
from tests.conftest import PASSWORD, RUN_A, upload
from uploads.run_imports import runs_import

RUN_C = RUN_A.replace(" alpha\n", " gamma\n")


@pytest.fixture
def three_runs(draft_campaign: Campaign) -> Campaign:
    """The toy campaign with a third run, uploaded after alpha and beta; goal: a difference."""
    runs_import(campaign=draft_campaign, files=[upload("c.run", RUN_C)])
    campaign_update(campaign=draft_campaign, goal="difference")
    return Campaign.objects.get(pk=draft_campaign.pk)


def _client(user: AbstractBaseUser) -> Client:
    client = Client()
    assert client.login(username=user.get_username(), password=PASSWORD)
    return client


def test_the_page_names_the_pair_taken_and_that_nobody_chose_it(
    three_runs: Campaign, coordinator: AbstractBaseUser
) -> None:
    url = reverse("labeling:campaign_detail", args=[three_runs.pk])
    page = _client(coordinator).get(url).content.decode()
    assert 'id="compared"' in page and 'data-compared="alpha|beta"' in page
    assert "not chosen yet" in page
    problems = {problem.kind: problem for problem in campaign_preflight(three_runs)}
    assert problems["compared_not_chosen"].examples == ("alpha", "beta")
    assert "alpha minus beta" in problems["compared_not_chosen"].message


def test_a_coordinator_chooses_the_pair_in_the_browser_form(
    three_runs: Campaign, coordinator: AbstractBaseUser
) -> None:
    client = _client(coordinator)
    url = reverse("graded:campaign_compared", args=[three_runs.pk])
    response = client.post(url, {"first": "gamma", "second": "alpha"}, follow=True)
    assert response.status_code == 200
    three_runs.refresh_from_db()
    assert three_runs.focus_systems == ["gamma", "alpha"]
    page = response.content.decode()
    assert 'data-compared="gamma|alpha"' in page and "as chosen" in page
    assert "compared_not_chosen" not in {problem.kind for problem in campaign_preflight(three_runs)}


@pytest.mark.parametrize(
    ("data", "reason"),
    [
        ({"first": "beta", "second": "beta"}, "two different systems"),
        ({"first": "beta"}, "both systems"),
        ({"first": "beta", "second": "nope"}, "Select a valid choice"),
    ],
)
def test_a_bad_pair_is_refused_and_changes_nothing(
    three_runs: Campaign, coordinator: AbstractBaseUser, data: dict[str, str], reason: str
) -> None:
    response = _client(coordinator).post(
        reverse("graded:campaign_compared", args=[three_runs.pk]), data, follow=True
    )
    assert reason in response.content.decode()
    three_runs.refresh_from_db()
    assert three_runs.focus_systems in (None, [])


def test_assessors_cannot_choose_and_outsiders_do_not_see_the_campaign(
    three_runs: Campaign, assessor: AbstractBaseUser, outsider: AbstractBaseUser
) -> None:
    campaign_assessors_assign(campaign=three_runs, usernames=["alice"])
    url = reverse("graded:campaign_compared", args=[three_runs.pk])
    assert _client(assessor).post(url, {"first": "gamma", "second": "alpha"}).status_code == 403
    assert _client(outsider).post(url, {"first": "gamma", "second": "alpha"}).status_code == 404
    three_runs.refresh_from_db()
    assert not three_runs.focus_systems


def test_start_stores_the_pair_taken_and_config_exports_it(
    three_runs: Campaign, coordinator: AbstractBaseUser
) -> None:
    campaign_assessors_assign(campaign=three_runs, usernames=[])
    campaign_start(campaign=three_runs)
    three_runs.refresh_from_db()
    assert three_runs.focus_systems == ["alpha", "beta"]
    config = _client(coordinator).get(f"/api/campaigns/{three_runs.pk}/export/config.json")
    assert json.loads(config.content)["focus_systems"] == ["alpha", "beta"]


def test_a_leaderboard_with_no_choice_says_every_pooled_run_is_aimed_at(
    three_runs: Campaign, coordinator: AbstractBaseUser
) -> None:
    campaign_update(campaign=three_runs, goal="leaderboard", goal_k=2)
    page = (
        _client(coordinator).get(reverse("labeling:campaign_detail", args=[three_runs.pk])).content.decode()
    )
    assert 'data-compared="alpha|beta|gamma"' in page
    assert "not chosen yet, so every pooled run is" in page and "first runs uploaded" not in page


def test_the_summary_line_counts_the_systems_a_leaderboard_ranks(
    three_runs: Campaign, coordinator: AbstractBaseUser
) -> None:
    def summary() -> str:
        url = reverse("labeling:campaign_detail", args=[three_runs.pk])
        page = _client(coordinator).get(url).content.decode()
        return page.split('id="mode-summary">', 1)[1].split("</div>", 1)[0]

    # k with no systems chosen ranks every pooled run: the line names three, not k.
    campaign_update(campaign=three_runs, goal="leaderboard", goal_k=2)
    assert "leaderboard of 3 systems" in summary()
    dashboard = _client(coordinator).get(reverse("labeling:campaign_dashboard", args=[three_runs.pk]))
    assert '<span id="meta-goal">leaderboard of 3 systems</span>' in dashboard.content.decode()
    campaign_update(campaign=three_runs, focus_systems=["gamma", "alpha", "beta"])
    assert "leaderboard of 2 systems" in summary()
