"""SxS pages: the judge page, the campaign page's section, the dashboard and the settings form."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from django.contrib.auth.models import AbstractBaseUser
from django.test import Client

from labeling.models import Campaign
from sxs import services
from sxs.models import SxsFit
from tests.sxs.helpers import answer_grades_first
from tests.sxs.oracle import answer_by_oracle, make_learning_campaign

pytestmark = pytest.mark.django_db


def client_for(user: AbstractBaseUser) -> Client:
    client = Client()
    client.force_login(user)
    return client


def test_it_shows_the_side_by_side_judge_page(sxs_campaign: Campaign, assessor: AbstractBaseUser) -> None:
    html = client_for(assessor).get(f"/judge/{sxs_campaign.pk}/").content.decode()
    assert 'id="left-results"' in html and 'id="right-results"' in html and "sxs/sxs.js" in html
    for label in ("Left much better", "Left better", "About the same", "Right better", "Right much better"):
        assert label in html
    assert "<kbd>Shift</kbd>+<kbd>←</kbd>" in html, "the help names the arrow keys"


@pytest.mark.parametrize(("persona", "code"), [("outsider", 404), ("assessor", 403), ("coordinator", 200)])
def test_it_shows_the_dashboard_to_result_viewers(
    sxs_campaign: Campaign, persona: str, code: int, request: pytest.FixtureRequest
) -> None:
    response = client_for(request.getfixturevalue(persona)).get(f"/campaigns/{sxs_campaign.pk}/dashboard/")
    assert response.status_code == code


def test_it_shows_distribution_bias_and_no_fake_fit_on_the_dashboard(
    sxs_campaign: Campaign, assessor: AbstractBaseUser, coordinator: AbstractBaseUser
) -> None:
    for preference in (-1, -1, 0):
        item = answer_grades_first(sxs_campaign, assessor)
        services.sxs_answer(task=item.sxs, assessor=assessor, preference=preference, seconds=1.0)
    html = client_for(coordinator).get(f"/campaigns/{sxs_campaign.pk}/dashboard/").content.decode()
    assert '<section class="panel" id="learned-dcg">' in html and "No fit yet" in html
    assert '<tr data-value="-1"><td>Left better</td><td class="num">2</td>' in html
    assert "Left preferred in 2 of 2 answers" in html and "p = 0.5000" in html
    assert "sxs/export/answers.tsv" in html
    SxsFit.objects.create(
        campaign=sxs_campaign, answers=3, result={"status": "insufficient", "reason": "7 more needed"}
    )
    html = client_for(coordinator).get(f"/campaigns/{sxs_campaign.pk}/dashboard/").content.decode()
    assert "No fit yet: 7 more needed." in html
    SxsFit.objects.create(campaign=sxs_campaign, answers=3, result={"status": "fitted", "weights": []})
    html = client_for(coordinator).get(f"/campaigns/{sxs_campaign.pk}/dashboard/").content.decode()
    assert "No fit yet" not in html and "Loading the fit from 3 answers" in html
    # The charts are drawn by a static script from a JSON block: no inline script.
    assert 'id="learned-dcg-config" type="application/json"' in html and "sxs/learned-dcg.js" in html
    assert "<script>" not in html


def test_it_names_both_leaderboard_metrics_and_shows_the_diagnostics(
    coordinator: AbstractBaseUser, assessor: AbstractBaseUser
) -> None:
    campaign = make_learning_campaign(coordinator, ["alice"])
    answer_by_oracle(campaign, assessor)
    services.sxs_refit(campaign=campaign)
    client = client_for(coordinator)
    html = client.get(f"/campaigns/{campaign.pk}/dashboard/").content.decode()
    head = html[html.index('<table class="compact" id="learned-leaderboard">') :]
    head = head[: head.index("</thead>")]
    assert '<th class="num">Learned DCG</th>' in head and '<th class="num">Standard DCG</th>' in head
    assert "Learned utility (full W, not a DCG)</th>" in head
    assert 'exactly as a campaign measures it after "Use these gains and discounts"' in html
    for part in ('id="learned-diagnostics"', 'id="learned-by-difference-chart"', 'id="learned-by-difference"',
                 'id="learned-by-strength"', 'id="learned-tie-curve"', "the paper's Figs. 4-5"):  # fmt: skip
        assert part in html, part
    # What the dashboard's script draws them from (the URL in its config).
    body = client.get(f"/api/campaigns/{campaign.pk}/learned-dcg/").json()
    assert f"/api/campaigns/{campaign.pk}/learned-dcg/" in html
    assert body["diagnostics"]["by_difference"] and len(body["diagnostics"]["by_strength"]) == 2
    assert all(row["learned_dcg"] is not None and row["utility"] is not None for row in body["leaderboard"])


def test_the_dashboard_and_its_api_read_a_fit_stored_before_the_new_keys(
    sxs_campaign: Campaign, coordinator: AbstractBaseUser
) -> None:
    old_board = {
        "rows": [{"system": "a", "learned": 1.5, "standard": 2.0, "rank_learned": 1, "rank_standard": 1}],
        "kendall_tau": None,
        "disagreements": [],
        "disagreeing_answers": {"count": 0, "learned_right": 0, "standard_right": 0},
        "ungraded": 0,
        "unjudged": "judge",
    }
    result = {"status": "fitted", "weights": [[0.0, 1.0]], "gains": [0.0, 1.0], "discounts": [1.0]}
    SxsFit.objects.create(campaign=sxs_campaign, answers=12, result={**result, "leaderboard": old_board})
    client = client_for(coordinator)
    assert client.get(f"/campaigns/{sxs_campaign.pk}/dashboard/").status_code == 200
    response = client.get(f"/api/campaigns/{sxs_campaign.pk}/learned-dcg/")
    assert response.status_code == 200, response.content
    body = response.json()
    assert body["leaderboard"] == [
        {"system": "a", "learned_dcg": None, "rank_learned_dcg": None, "standard": 2.0, "rank_standard": 1,
         "utility": 1.5, "rank_utility": 1}
    ]  # fmt: skip
    assert body["diagnostics"] is None and body["tie_curve"] == [] and body["kendall_tau"] is None


def test_it_shows_the_mode_section_on_the_campaign_page(
    make_sxs: Callable[..., Campaign], coordinator: AbstractBaseUser
) -> None:
    campaign = make_sxs(unjudged="zero")
    html = client_for(coordinator).get(f"/campaigns/{campaign.pk}/").content.decode()
    assert 'id="sxs-section"' in html and "Side-by-side result lists" in html
    assert "documents without a grade count as not relevant (grade 0)" in html
    assert f'href="/sxs/{campaign.pk}/settings/"' in html and 'data-upload="qrels"' in html
    assert f"/api/campaigns/{campaign.pk}/sxs/export/answers.tsv" in html


def test_it_changes_settings_through_the_form(
    make_sxs: Callable[..., Campaign], coordinator: AbstractBaseUser
) -> None:
    campaign = make_sxs(start=False)
    url = f"/sxs/{campaign.pk}/settings/"
    assert client_for(coordinator).get(url).status_code == 200
    fit = {"fit_method": "likelihood", "c_grid": "0.1,1,10,100", "c_tie": "separate", "folds": 5}
    fit |= {"ties": "on", "much_better_margin": 1}
    form = {"k": 5, "unjudged": "zero", "selection": "margin", "random_start": 12, **fit}
    response = client_for(coordinator).post(url, form)
    assert response.status_code == 302
    assert campaign.sxs_settings.__class__.objects.get(campaign=campaign).selection == "margin"
