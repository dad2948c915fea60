"""The learned-DCG fit's choices as campaign settings: validation, the round trip through the
configuration export and a clone, each choice reaching `learn_dcg`, a change refitting, and the
dashboard's API, downloads and page with fits of today and of earlier versions."""

from __future__ import annotations

import hashlib
import importlib.util
import json
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser
from django.test import Client
from rest_framework.test import APIClient

from estimation.learned_dcg.fit import DEFAULT_BOOTSTRAP
from labeling.models import Campaign
from labeling.services.campaign_copies import campaign_clone
from labeling.services.campaigns import campaign_create
from sxs import services
from sxs.models import SxsFit, SxsSettings
from sxs.modes import SxsMode
from sxs.selectors import preference_data
from sxs.services import learning
from tests.sxs.oracle import answer_by_oracle, make_learning_campaign

pytestmark = pytest.mark.django_db

Api = Callable[[AbstractBaseUser | None], APIClient]

# Every fit choice away from its default.
CHOSEN = {
    "fit_method": "qp",
    "c_grid": "0.5,5",
    "c_tie": "custom",
    "c_tie_grid": "1,100",
    "folds": 3,
    "ties": False,
    "monotone_discounts": True,
    "much_better_margin": 2.0,
}


def client_for(user: AbstractBaseUser) -> Client:
    client = Client()
    client.force_login(user)
    return client


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"c_grid": "1, ten"}, r"c_grid \(the values of C\): 'ten' is not a number"),
        ({"c_grid": "0, 1"}, "every value must be a number above 0"),
        ({"c_grid": "1,,10"}, "an empty value"),
        ({"c_grid": " "}, "at least one number"),
        ({"c_grid": ",".join(str(n) for n in range(1, 14))}, "at most 12 values"),
        ({"fit_method": "svm"}, "fit_method must be 'likelihood' or 'qp'"),
        ({"c_tie": "custom"}, "needs the values of C_t"),
        ({"c_tie": "custom", "c_tie_grid": "1, -1"}, r"c_tie_grid \(the values of C_t\)"),
        ({"folds": 1}, "folds must be a whole number from 2 to 20"),
        ({"folds": 21}, "folds must be a whole number from 2 to 20"),
        ({"folds": "5"}, "folds must be a whole number"),
        ({"ties": "yes"}, "ties must be true or false"),
        ({"much_better_margin": 0.5}, "much_better_margin must be a number from 1 to 10"),
        ({"much_better_margin": float("nan")}, "much_better_margin must be a number from 1 to 10"),
    ],
)
def test_it_refuses_fit_settings_with_a_clear_error(
    sxs_campaign: Campaign, fields: dict[str, Any], message: str
) -> None:
    with pytest.raises(ValueError, match=message):
        services.sxs_configure(campaign=sxs_campaign, **fields)
    stored = SxsSettings.objects.get(campaign=sxs_campaign)
    assert (stored.fit_method, stored.c_grid, stored.folds) == ("likelihood", "0.1,1,10,100", 5)


def test_it_stores_a_grid_in_one_form(sxs_campaign: Campaign) -> None:
    settings = services.sxs_configure(campaign=sxs_campaign, c_grid=" 10, 1,1e-1 ,10", c_tie_grid="2")
    assert settings.c_grid == "0.1,1,10" and settings.c_tie_grid == "2"
    assert learning.fit_options(settings)["c_grid"] == (0.1, 1.0, 10.0)


def test_fit_settings_round_trip_through_the_configuration_export_and_a_clone(
    make_sxs: Callable[..., Campaign], coordinator: AbstractBaseUser, api: Api
) -> None:
    campaign = make_sxs(start=False, **CHOSEN)
    exported = api(coordinator).get(f"/api/campaigns/{campaign.pk}/export/config.json")
    assert exported.status_code == 200
    mode_settings = json.loads(exported.content)["mode_settings"]
    assert {name: mode_settings[name] for name in CHOSEN} == CHOSEN
    assert mode_settings["k"] == 3

    clone = campaign_clone(campaign=campaign, creator=coordinator)
    assert SxsMode().settings_of(clone) == SxsMode().settings_of(campaign)
    # What the export holds configures a new campaign the same way.
    again = campaign_create(
        creator=coordinator,
        name="from the export",
        metric="DCG@3",
        budget=10,
        judging_mode="sxs",
        mode_settings=mode_settings,
    )
    assert SxsMode().settings_of(again) == mode_settings


def test_the_settings_api_takes_fit_settings_and_says_what_is_wrong(
    sxs_campaign: Campaign, coordinator: AbstractBaseUser, api: Api
) -> None:
    url = f"/api/campaigns/{sxs_campaign.pk}/sxs/settings/"
    refused = api(coordinator).put(url, {"folds": 30}, format="json")
    assert refused.status_code == 400 and "folds" in refused.json()
    refused = api(coordinator).put(url, {"c_grid": "1, x"}, format="json")
    assert refused.status_code == 400 and "'x' is not a number" in json.dumps(refused.json())
    done = api(coordinator).put(url, {"fit_method": "qp", "much_better_margin": 1.5}, format="json")
    assert done.status_code == 200, done.content
    assert done.json()["fit_method"] == "qp" and done.json()["much_better_margin"] == 1.5
    assert api(coordinator).get(url).json()["c_grid"] == "0.1,1,10,100"


def test_the_settings_page_shows_the_fit_settings_in_plain_words_and_validates_them(
    make_sxs: Callable[..., Campaign], coordinator: AbstractBaseUser
) -> None:
    campaign = make_sxs(start=False)
    url = f"/sxs/{campaign.pk}/settings/"
    html = client_for(coordinator).get(url).content.decode()
    assert 'id="sxs-fit-settings"' in html and "The paper&#x27;s QP (DCGLearn, Zhou et al. 2014)" in html
    for name in services.FIT_FIELDS:
        assert f'name="{name}"' in html, name
    # The QP-only settings say so.
    assert html.count("(paper's QP only)") == 3
    form = {
        "k": 3,
        "unjudged": "judge",
        "selection": "random",
        "random_start": 30,
        "fit_method": "qp",
        "c_grid": "1, ten",
        "c_tie": "same",
        "folds": 4,
        "much_better_margin": 1,
    }
    response = client_for(coordinator).post(url, form)
    assert response.status_code == 200 and "&#x27;ten&#x27; is not a number" in response.content.decode()
    response = client_for(coordinator).post(url, {**form, "c_grid": "1, 10"})
    assert response.status_code == 302
    stored = SxsSettings.objects.get(campaign=campaign)
    assert (stored.fit_method, stored.c_grid, stored.c_tie, stored.folds) == ("qp", "1,10", "same", 4)
    assert stored.ties is False, "an unticked box"


def test_each_fit_setting_reaches_learn_dcg(
    coordinator: AbstractBaseUser, assessor: AbstractBaseUser, monkeypatch: pytest.MonkeyPatch
) -> None:
    campaign = make_learning_campaign(coordinator, ["alice"], **CHOSEN)
    answer_by_oracle(campaign, assessor)
    calls: list[dict[str, Any]] = []
    real = learning.learn_dcg

    def spy(*args: Any, **kwargs: Any) -> Any:
        calls.append(kwargs)
        return real(*args, **kwargs)

    monkeypatch.setattr(learning, "learn_dcg", spy)
    fit = services.sxs_refit(campaign=campaign)
    assert len(calls) == 1
    left_out = ("bootstrap", "seed", "time_budget")
    assert {name: value for name, value in calls[0].items() if name not in left_out} == {
        "method": "qp",
        "c_grid": (0.5, 5.0),
        "c_tie_grid": (1.0, 100.0),
        "folds": 3,
        "ties": False,
        "monotone_discounts": True,
        "much_better_margin": 2.0,
    }
    assert calls[0]["bootstrap"] == learning.BOOTSTRAP
    # The operator's wall-time budget of a refit (SXS_REFIT_SECONDS) reaches the fit too.
    assert calls[0]["time_budget"].seconds == settings.SXS_REFIT_SECONDS
    result = fit.result
    assert result["status"] == "fitted" and result["method"] == "qp"
    assert result["c_tie"] in result["c_tie_grid"] and result["c"] in result["c_grid"]
    assert result["options"] == {
        "method": "qp",
        "c_tie": "grid",
        "folds": 3,
        "ties": False,
        "monotone_discounts": True,
        "much_better_margin": 2.0,
    }
    assert result["ties"] == 0, "'about the same' answers left out"
    assert np.all(np.diff(result["discounts"]) <= 1e-6), "monotone discounts never grow"


def test_the_service_default_is_the_core_s_bootstrap() -> None:
    # The module's own value, as a worker imports it (the conftest lowers the loaded one's): a
    # second copy run from its file and never put in sys.modules, so no other test sees it.
    spec = importlib.util.spec_from_file_location("fresh_learning", learning.__file__)
    assert spec is not None and spec.loader is not None
    fresh = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(fresh)
    assert fresh.BOOTSTRAP == DEFAULT_BOOTSTRAP


def test_changing_a_fit_setting_after_answers_refits_and_asks_for_the_recompute(
    coordinator: AbstractBaseUser,
    assessor: AbstractBaseUser,
    monkeypatch: pytest.MonkeyPatch,
    django_capture_on_commit_callbacks: Callable,
) -> None:
    campaign = make_learning_campaign(coordinator, ["alice"])
    answer_by_oracle(campaign, assessor, 30)
    first = services.sxs_refit(campaign=campaign)
    assert first.result["method"] == "likelihood" and first.result["c_tie"] is None
    assert services.sxs_refit(campaign=campaign).pk == first.pk, "nothing changed: no refit"

    requested: list[int] = []
    monkeypatch.setattr("sxs.services.setup.recompute_soon", requested.append)
    with django_capture_on_commit_callbacks(execute=True):
        services.sxs_configure(campaign=campaign, fit_method="likelihood")  # unchanged
    assert requested == []
    with django_capture_on_commit_callbacks(execute=True):
        services.sxs_configure(campaign=campaign, fit_method="qp")
    assert requested == [campaign.pk]
    with pytest.raises(ValueError, match="cannot change once lists were compared; the fit's settings can"):
        services.sxs_configure(campaign=campaign, k=4)

    again = services.sxs_refit(campaign=campaign)
    assert again.pk != first.pk and again.answers == 30
    assert again.result["status"] == "fitted", again.result.get("reason")
    assert again.result["method"] == "qp" and again.result["c_tie"] in again.result["c_tie_grid"]
    assert again.result["options"]["c_tie"] == "separate"
    assert services.sxs_refit(campaign=campaign).pk == again.pk

    services.sxs_configure(campaign=campaign, folds=4)
    folds = services.sxs_refit(campaign=campaign)
    assert folds.pk != again.pk and folds.result["options"]["folds"] == 4


def _with(fit: SxsFit, **changes: Any) -> SxsFit:
    SxsFit.objects.filter(pk=fit.pk).update(result={**fit.result, **changes})
    fit.refresh_from_db()
    return fit


@pytest.fixture
def fitted(coordinator: AbstractBaseUser, assessor: AbstractBaseUser) -> tuple[Campaign, SxsFit]:
    campaign = make_learning_campaign(coordinator, ["alice"], name="lists")
    answer_by_oracle(campaign, assessor)
    return campaign, services.sxs_refit(campaign=campaign)


WARNING = (
    "C = 1000 sits at the high edge of its grid (0.1, 1, 10, 100, 1000) even after extending it once: "
    "a larger value might fit better; widen the grid"
)


def test_the_api_and_the_downloads_carry_which_fit_its_warnings_and_the_form_test(
    fitted: tuple[Campaign, SxsFit], coordinator: AbstractBaseUser, api: Api
) -> None:
    campaign, fit = fitted
    coverage = {"sentence": "The intervals covered 93 % of 200 simulated truths.", "shortfall": 0.02}
    fit = _with(fit, grid_warnings=[WARNING], widened=["g1"], coverage=coverage)
    body = api(coordinator).get(f"/api/campaigns/{campaign.pk}/learned-dcg/").json()
    assert body["method"] == "likelihood" and body["method_words"].startswith("the likelihood")
    assert body["grid_warnings"] == [WARNING] and body["grid_notes"] == fit.result["grid_notes"]
    assert body["form_test"]["sentence"] == fit.result["form_test"]["sentence"]
    assert "DCG form" in body["form_test"]["sentence"]
    assert body["interval_method"].startswith("BCa bootstrap over topics")
    assert body["widened"] == ["g1"] and body["coverage"] == coverage
    assert body["bootstrap"] == fit.result["bootstrap"] and body["bootstrap_failed"] is not None
    assert set(body["accuracy"]) == {"learned", "learned_full_w", "learned_best_of_grid", "exp", "linear"}
    assert body["options"]["method"] == "likelihood" and body["c_tie"] is None

    base = f"/api/campaigns/{campaign.pk}/sxs/export/"
    exported = json.loads(api(coordinator).get(base + "learned_dcg.json").content)
    assert exported["grid_warnings"] == [WARNING] and exported["form_test"] == body["form_test"]
    assert exported["interval_method"] == body["interval_method"] and exported["coverage"] == coverage
    conventions = exported["conventions"]
    assert "edge of its grid" in conventions["grid_warnings"] and "chi2(df)" in conventions["form_test"]
    assert "nested" in conventions["accuracy"] and "optimistic" in conventions["accuracy"]
    assert "BCa" in conventions["intervals"] and "widened" in conventions["intervals"]
    assert "near 0" not in conventions["sigma_ratio"]
    text = api(coordinator).get(base + "learned_dcg_gains.txt").content.decode()
    assert f"# WARNING: {WARNING}\n" in text
    assert f"# {body['form_test']['sentence']}\n" in text and "# fitted by the likelihood" in text


def test_the_dashboard_has_a_place_for_the_fit_s_warnings_test_and_intervals(
    fitted: tuple[Campaign, SxsFit], coordinator: AbstractBaseUser
) -> None:
    campaign, _ = fitted
    html = client_for(coordinator).get(f"/campaigns/{campaign.pk}/dashboard/").content.decode()
    assert 'id="learned-fit-warnings" role="alert"' in html
    for name in ("learned-fit-method", "learned-fit-notes", "learned-form-test", "learned-accuracy"):
        assert f'id="{name}"' in html, name
    for name in ("learned-interval-method", "learned-widened", "learned-coverage"):
        assert f'id="{name}"' in html, name


NEW_KEYS = (
    "method",
    "c_tie",
    "c_grid",
    "c_tie_grid",
    "grid_warnings",
    "grid_notes",
    "form_test",
    "interval_method",
    "bootstrap",
    "bootstrap_failed",
    "widened",
    "options",
    "coverage",
)


def test_a_fit_stored_before_the_fit_choices_still_reads_everywhere(
    fitted: tuple[Campaign, SxsFit], coordinator: AbstractBaseUser, api: Api
) -> None:
    campaign, fit = fitted
    old = {key: value for key, value in fit.result.items() if key not in NEW_KEYS}
    old["accuracy"] = {key: fit.result["accuracy"][key] for key in ("learned", "exp", "linear")}
    # Its signature, as an earlier version computed it: the answers alone, no fit choices.
    data = preference_data(campaign)
    digest = hashlib.sha256()
    for array in (data.answer_ids, data.preference, data.left, data.right):
        digest.update(np.ascontiguousarray(array, dtype=np.int64).tobytes())
    digest.update(f"{data.k}:{data.grade_levels}".encode())
    old["signature"] = digest.hexdigest()
    SxsFit.objects.filter(pk=fit.pk).update(result=old)

    response = api(coordinator).get(f"/api/campaigns/{campaign.pk}/learned-dcg/")
    assert response.status_code == 200, response.content
    body = response.json()
    assert body["method"] is None and body["method_words"] is None and body["form_test"] is None
    assert body["grid_warnings"] == [] and body["widened"] == [] and body["coverage"] is None
    assert body["accuracy"]["learned_full_w"] is None and body["accuracy"]["exp"] == old["accuracy"]["exp"]
    assert client_for(coordinator).get(f"/campaigns/{campaign.pk}/dashboard/").status_code == 200
    base = f"/api/campaigns/{campaign.pk}/sxs/export/"
    assert json.loads(api(coordinator).get(base + "learned_dcg.json").content)["form_test"] is None
    text = api(coordinator).get(base + "learned_dcg_gains.txt").content.decode()
    assert "gain per grade" in text and "fitted by" not in text
    # The next recompute refits: the stored signature did not cover the fit's choices.
    assert services.sxs_refit(campaign=campaign).result["method"] == "likelihood"


def test_the_paper_s_qp_with_c_t_the_same_as_c_fits(
    coordinator: AbstractBaseUser, assessor: AbstractBaseUser
) -> None:
    campaign = make_learning_campaign(coordinator, ["alice"], fit_method="qp", c_tie="same")
    answer_by_oracle(campaign, assessor, 30)
    fit = services.sxs_refit(campaign=campaign)
    assert fit.result["status"] == "fitted", fit.result.get("reason")
    assert fit.result["c_tie"] == fit.result["c"] and fit.result["options"]["c_tie"] == "same"
