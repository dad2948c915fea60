"""The operator's bounds on a side-by-side refit: fit settings whose count of fits is above
SXS_REFIT_MAX_FITS are refused when saved (API, settings page, clone, configuration import) and
by the worker, and SXS_REFIT_SECONDS stops the bootstrap, said on the dashboard."""

from __future__ import annotations

import itertools
import json
from collections.abc import Callable

import pytest
from django.contrib.auth.models import AbstractBaseUser
from django.test import Client
from rest_framework.test import APIClient

from estimation.learned_dcg.fit import DEFAULT_BOOTSTRAP
from labeling.models import Campaign
from labeling.services.campaigns import campaign_create
from sxs import services
from sxs.models import SxsFit, SxsSettings
from sxs.services import learning
from tests.sxs.oracle import answer_by_oracle, make_learning_campaign

pytestmark = pytest.mark.django_db

Api = Callable[[AbstractBaseUser | None], APIClient]

# The outside test's settings: 12 values of C, the paper's QP with C_t chosen on its own over
# them, 20 folds, monotone discounts (3 bootstrap replicates took over 180 s; a refit makes 100).
COSTLY = {
    "fit_method": "qp",
    "c_grid": ",".join(f"{10.0**power:g}" for power in range(-5, 7)),
    "c_tie": "separate",
    "folds": 20,
    "monotone_discounts": True,
}


@pytest.fixture
def full_bootstrap(monkeypatch: pytest.MonkeyPatch) -> None:
    """The replicates a worker makes (the conftest lowers them for speed)."""
    monkeypatch.setattr(learning, "BOOTSTRAP", DEFAULT_BOOTSTRAP)


def client_for(user: AbstractBaseUser) -> Client:
    client = Client()
    client.force_login(user)
    return client


@pytest.mark.usefixtures("full_bootstrap")
def test_it_refuses_the_costly_settings_with_a_400_naming_the_ceiling_and_the_product(
    sxs_campaign: Campaign, coordinator: AbstractBaseUser, api: Api
) -> None:
    url = f"/api/campaigns/{sxs_campaign.pk}/sxs/settings/"
    response = api(coordinator).put(url, COSTLY, format="json")
    assert response.status_code == 400, response.content
    text = json.dumps(response.json())
    # (12 + 1) x (12 + 1) grid points after the widening x 20 folds x (100 + 2).
    assert "344,760 fits" in text and "SXS_REFIT_MAX_FITS = 20,000" in text
    assert "169 values of (C, C_t)" in text and "20 folds" in text and "100 bootstrap replicates" in text
    stored = SxsSettings.objects.get(campaign=sxs_campaign)
    assert (stored.fit_method, stored.c_grid, stored.folds) == ("likelihood", "0.1,1,10,100", 5)


@pytest.mark.usefixtures("full_bootstrap")
def test_it_accepts_settings_under_the_ceiling_and_the_defaults_are_well_under_it(
    sxs_campaign: Campaign, coordinator: AbstractBaseUser, api: Api, settings: object
) -> None:
    defaults = SxsSettings.objects.get(campaign=sxs_campaign)
    fits, product = learning.refit_work(defaults)
    assert fits == 5 * 5 * 102 and product.startswith("5 values of C")
    url = f"/api/campaigns/{sxs_campaign.pk}/sxs/settings/"
    # The paper's QP with C_t on its own over the default values: 25 x 5 x 102 = 12,750 fits.
    response = api(coordinator).put(url, {"fit_method": "qp", "c_tie": "separate"}, format="json")
    assert response.status_code == 200, response.content
    # C_t = C: one axis, so 12 values and 20 folds fit: 13 x 20 x 102 = 26,520 > 20,000 ...
    response = api(coordinator).put(url, {**COSTLY, "c_tie": "same"}, format="json")
    assert response.status_code == 400 and "26,520 fits" in json.dumps(response.json())
    # ... and 10 folds do (13,260).
    response = api(coordinator).put(url, {**COSTLY, "c_tie": "same", "folds": 10}, format="json")
    assert response.status_code == 200, response.content
    assert SxsSettings.objects.get(campaign=sxs_campaign).folds == 10


@pytest.mark.usefixtures("full_bootstrap")
def test_the_settings_page_clone_and_configuration_import_refuse_them_too(
    sxs_campaign: Campaign, coordinator: AbstractBaseUser, api: Api, settings: object
) -> None:
    form = {"k": 3, "unjudged": "judge", "selection": "random", "random_start": 30, "ties": "on"}
    form |= {"much_better_margin": 1, "c_tie_grid": "", **COSTLY, "monotone_discounts": "on"}
    page = client_for(coordinator).post(f"/sxs/{sxs_campaign.pk}/settings/", form)
    assert page.status_code == 200 and "SXS_REFIT_MAX_FITS" in page.content.decode()
    assert SxsSettings.objects.get(campaign=sxs_campaign).fit_method == "likelihood"

    # A configuration exported elsewhere, with these settings, imported as a new campaign.
    with pytest.raises(ValueError, match="SXS_REFIT_MAX_FITS"):
        campaign_create(
            creator=coordinator,
            name="imported",
            metric="DCG@3",
            grades=["Bad", "Fair", "Good"],
            budget=10,
            judging_mode="sxs",
            mode_settings={"k": 3, **COSTLY},
        )
    assert not Campaign.objects.filter(name="imported").exists()

    # Settings saved under a higher ceiling, cloned after the operator lowered it.
    services.sxs_configure(campaign=sxs_campaign, fit_method="qp", c_tie="separate")
    settings.SXS_REFIT_MAX_FITS = 10_000  # type: ignore[attr-defined]
    before = Campaign.objects.count()
    response = api(coordinator).post(f"/api/campaigns/{sxs_campaign.pk}/clone/", {}, format="json")
    assert response.status_code == 400 and "SXS_REFIT_MAX_FITS = 10,000" in json.dumps(response.json())
    page = client_for(coordinator).post(f"/campaigns/{sxs_campaign.pk}/clone/", {"name": "copy"})
    assert page.status_code == 400 and "SXS_REFIT_MAX_FITS" in page.content.decode()
    assert Campaign.objects.count() == before


@pytest.fixture
def answered(coordinator: AbstractBaseUser, assessor: AbstractBaseUser) -> Campaign:
    campaign = make_learning_campaign(coordinator, ["alice"], name="lists", fit_method="qp", c_tie="separate")
    answer_by_oracle(campaign, assessor)
    return campaign


def test_the_worker_refuses_a_refit_above_a_lowered_ceiling_visibly(
    answered: Campaign, coordinator: AbstractBaseUser, api: Api, settings: object
) -> None:
    # 25 grid points x 5 folds x (5 replicates + 2) = 875 fits (the tests' 5 replicates).
    settings.SXS_REFIT_MAX_FITS = 800  # type: ignore[attr-defined]
    record = services.sxs_refit(campaign=answered)
    assert record is not None and record.result["status"] == learning.REFUSED
    assert "875 fits" in record.result["reason"] and "SXS_REFIT_MAX_FITS = 800" in record.result["reason"]
    body = api(coordinator).get(f"/api/campaigns/{answered.pk}/learned-dcg/").json()
    assert body["status"] == "refused" and "SXS_REFIT_MAX_FITS = 800" in body["reason"]
    assert body["gains"] is None
    page = client_for(coordinator).get(f"/campaigns/{answered.pk}/dashboard/").content.decode()
    assert "SXS_REFIT_MAX_FITS = 800" in page
    # The same answers and settings: the refusal stands, nothing new is stored ...
    assert services.sxs_refit(campaign=answered).pk == record.pk
    # ... until the operator raises the ceiling again: then it fits.
    settings.SXS_REFIT_MAX_FITS = 875  # type: ignore[attr-defined]
    fitted = services.sxs_refit(campaign=answered)
    assert fitted is not None and fitted.result["status"] == learning.FITTED
    assert SxsFit.objects.filter(campaign=answered).count() == 2


def ticking(step: float) -> Callable[[], float]:
    """A clock that moves `step` seconds each time it is read."""
    counter = itertools.count()
    return lambda: next(counter) * step


def test_the_time_budget_stops_the_bootstrap_and_the_dashboard_says_how_many_replicates(
    answered: Campaign,
    coordinator: AbstractBaseUser,
    api: Api,
    settings: object,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(learning, "BOOTSTRAP", 40)
    # Each fit reads the clock once: a budget of 1,000 reads is past the cross-validation (at most
    # 2 x 36 x 5 = 360 fits) and inside the 40 replicates (up to 180 fits each).
    monkeypatch.setattr(learning, "clock", ticking(0.1))
    settings.SXS_REFIT_SECONDS = 100.0  # type: ignore[attr-defined]
    record = services.sxs_refit(campaign=answered)
    assert record is not None and record.result["status"] == learning.FITTED
    made = record.result["bootstrap"] + record.result["bootstrap_failed"]
    assert 0 < made < 40 and record.result["bootstrap_requested"] == 40
    body = api(coordinator).get(f"/api/campaigns/{answered.pk}/learned-dcg/").json()
    assert body["bootstrap_requested"] == 40
    method = body["interval_method"]
    assert f"stopped early: {body['bootstrap']} of the 40 replicates" in method
    assert "time budget of 100 s ran out" in method and "read them as rough" in method
    assert body["gains_low"] is not None


def test_a_budget_spent_before_cross_validation_ends_stores_why_and_no_fit(
    answered: Campaign,
    coordinator: AbstractBaseUser,
    api: Api,
    settings: object,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(learning, "clock", ticking(1.0))
    settings.SXS_REFIT_SECONDS = 10.0  # type: ignore[attr-defined]
    record = services.sxs_refit(campaign=answered)
    assert record is not None and record.result["status"] == learning.REFUSED
    body = api(coordinator).get(f"/api/campaigns/{answered.pk}/learned-dcg/").json()
    assert body["status"] == "refused" and "SXS_REFIT_SECONDS = 10 s" in body["reason"]
    assert "cross-validation" in body["reason"]
