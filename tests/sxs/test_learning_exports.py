"""The learned-DCG downloads: learned_dcg.json and the gains for other tools, registered as the
mode's exports (404 for campaigns of other modes)."""

from __future__ import annotations

import json
from collections.abc import Callable

import numpy as np
import pytest
from django.contrib.auth.models import AbstractBaseUser
from rest_framework.test import APIClient

from estimation.metrics.tool_forms import other_tools_text
from labeling.services.campaigns import campaign_create
from sxs import services
from sxs.models import SxsFit
from tests.sxs.oracle import answer_by_oracle, make_learning_campaign

pytestmark = pytest.mark.django_db

Api = Callable[[AbstractBaseUser | None], APIClient]


def test_it_downloads_the_fit_as_json_and_as_the_gains_other_tools_take(
    coordinator: AbstractBaseUser, assessor: AbstractBaseUser, api: Api
) -> None:
    campaign = make_learning_campaign(coordinator, ["alice"], name="lists")
    client = api(coordinator)
    base = f"/api/campaigns/{campaign.pk}/sxs/export/"
    waiting = client.get(base + "learned_dcg_gains.txt")
    assert waiting.status_code == 200 and "# no fit yet: learning needs at least" in waiting.content.decode()

    answer_by_oracle(campaign, assessor)
    fit = services.sxs_refit(campaign=campaign)
    response = client.get(base + "learned_dcg.json")
    assert response.status_code == 200 and response["Content-Type"].startswith("application/json")
    assert f"campaign-{campaign.pk}-learned_dcg.json" in response["Content-Disposition"]
    body = json.loads(response.content)
    assert body["status"] == "fitted" and body["answers"] == 40
    assert body["gains"] == fit.result["gains"] and body["discounts"] == fit.result["discounts"]
    assert np.asarray(body["weights"]).shape == (3, 3) and np.asarray(body["transformed"]).shape == (3, 3)
    for name in ("sigma_ratio", "sigma_ratio_low", "c", "pairs", "ties", "gains_low", "discounts_high"):
        assert body[name] is not None, name
    assert set(body["accuracy"]) == {"learned", "learned_full_w", "learned_best_of_grid", "exp", "linear"}
    assert "T(W) = W - W[:, :1]" in body["conventions"]["transformed"]

    text = client.get(base + "learned_dcg_gains.txt").content.decode()
    assert "trec_eval: -M 3 -m ndcg.0=0," in text and "ir_measures: nDCG(gains={0: 0, " in text
    # The very text of the learn-dcg command's report (one function writes both).
    assert other_tools_text(fit.result["gains"], fit.result["discounts"], 3) in text
    assert "g1 Fair\t" in text and "c3\t" in text


def test_a_campaign_of_another_mode_has_no_such_download(coordinator: AbstractBaseUser, api: Api) -> None:
    other = campaign_create(creator=coordinator, name="g", metric="DCG@3", budget=5)
    for name in ("learned_dcg.json", "learned_dcg_gains.txt"):
        assert api(coordinator).get(f"/api/campaigns/{other.pk}/sxs/export/{name}").status_code == 404


def test_learned_dcg_json_names_both_leaderboard_metrics_and_holds_the_diagnostics(
    coordinator: AbstractBaseUser, assessor: AbstractBaseUser, api: Api
) -> None:
    campaign = make_learning_campaign(coordinator, ["alice"], name="lists")
    answer_by_oracle(campaign, assessor)
    fit = services.sxs_refit(campaign=campaign)
    curve = [{"c_tie": 1.0, "ties_predicted": 0.5, "strict_accuracy": 0.875}]
    SxsFit.objects.filter(pk=fit.pk).update(result={**fit.result, "tie_curve": curve})
    url = f"/api/campaigns/{campaign.pk}/sxs/export/learned_dcg.json"
    body = json.loads(api(coordinator).get(url).content)
    stored = fit.result["leaderboard"]
    assert body["leaderboard"] == stored["rows"]
    assert {"learned_dcg", "rank_learned_dcg", "utility", "rank_utility"} <= set(body["leaderboard"][0])
    assert body["kendall_tau"] == stored["kendall_tau"]
    assert body["kendall_tau_utility"] == stored["kendall_tau_utility"]
    assert body["utility_disagreements"] == stored["utility_disagreements"]
    assert body["diagnostics"] == fit.result["diagnostics"] and body["diagnostics"]["by_difference"]
    assert body["tie_curve"] == curve
    conventions = body["conventions"]
    assert "exactly what a campaign measures" in conventions["leaderboard"]
    assert "not a DCG" in conventions["leaderboard"]
    assert conventions["diagnostics"].startswith("held out") and "C_t" in conventions["tie_curve"]
