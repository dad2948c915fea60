"""DCG with custom gains and discounts (e.g. learned from a side-by-side campaign) as a
campaign's metric: validated, used by every DCG and nDCG number, shown beside the metric."""

from __future__ import annotations

import math
from collections.abc import Callable

import pytest
from django.contrib.auth.models import AbstractBaseUser
from rest_framework.test import APIClient

from labeling.metric import campaign_metric
from labeling.models import Campaign
from labeling.services.campaigns import campaign_update
from tests.labeling.helpers import judge_everything

pytestmark = pytest.mark.django_db

Api = Callable[[AbstractBaseUser | None], APIClient]
STANDARD_DISCOUNTS = [1 / math.log2(k + 1) for k in range(1, 6)]


def _rows(client: APIClient, campaign: Campaign) -> dict[str, dict]:
    body = client.get(f"/api/campaigns/{campaign.pk}/estimates/").json()
    return {f"{row['name']}|{row['metric']}": row for row in body["systems"]}


def test_it_refuses_gains_and_discounts_that_do_not_fit_the_campaign(
    draft_campaign: Campaign, coordinator: AbstractBaseUser, api: Api
) -> None:
    client = api(coordinator)
    url = f"/api/campaigns/{draft_campaign.pk}/"
    cases = {
        "2 gains for 3 grades": {"gains": [0, 1], "discounts": STANDARD_DISCOUNTS},
        "non-decreasing": {"gains": [0, 2, 1], "discounts": STANDARD_DISCOUNTS},
        "4 discounts for a cutoff of 5": {"gains": [0, 1, 3], "discounts": [1, 0.6, 0.5, 0.4]},
        "discounts must be > 0": {"gains": [0, 1, 3], "discounts": [1, 0.6, 0.5, 0.4, 0]},
    }
    for reason, custom in cases.items():
        response = client.patch(url, {"custom_dcg": custom}, format="json")
        assert response.status_code == 400, (reason, response.content)
        assert reason in response.content.decode(), (reason, response.content)
    draft_campaign.refresh_from_db()
    assert draft_campaign.custom_dcg is None, "nothing half-stored"

    custom = {"gains": [0, 0.4, 1], "discounts": [1, 0.5, 0.4, 0.3, 0.2], "source": "learned in SxS #7"}
    response = client.patch(url, {"custom_dcg": custom}, format="json")
    assert response.status_code == 200, response.content
    assert response.json()["custom_dcg"] == custom
    label = "DCG@5 with custom gains [0.00, 0.40, 1.00] and discounts; learned in SxS #7"
    for page in (f"/campaigns/{draft_campaign.pk}/", f"/campaigns/{draft_campaign.pk}/dashboard/"):
        response = client.get(page)
        assert response.status_code == 200, page
        assert label in response.content.decode(), page


def test_every_dcg_and_ndcg_number_uses_the_custom_gains_and_discounts(
    campaign: Campaign, assessor: AbstractBaseUser, coordinator: AbstractBaseUser, api: Api
) -> None:
    judge_everything(campaign, assessor)
    client = api(coordinator)
    standard = _rows(client, campaign)
    assert standard["alpha|DCG@5"]["value"] > 0

    # The standard vectors written out: the same numbers.
    campaign_update(campaign=campaign, custom_dcg={"gains": [0, 1, 3], "discounts": STANDARD_DISCOUNTS})
    same = _rows(client, campaign)
    for key, row in standard.items():
        assert same[key]["value"] == pytest.approx(row["value"], rel=1e-12), key

    # Twice the gains: DCG doubles, nDCG and ERR do not move.
    campaign_update(campaign=campaign, custom_dcg={"gains": [0, 2, 6], "discounts": STANDARD_DISCOUNTS})
    doubled = _rows(client, campaign)
    for key, row in standard.items():
        factor = 2.0 if key.endswith("|DCG@5") else 1.0
        assert doubled[key]["value"] == pytest.approx(row["value"] * factor, rel=1e-12), key

    # Another discount curve changes DCG in the direction the curve says: flat discounts
    # weigh the lower ranks more, so no system's DCG can drop.
    campaign_update(campaign=campaign, custom_dcg={"gains": [0, 1, 3], "discounts": [1.0] * 5})
    flat = _rows(client, campaign)
    assert all(flat[k]["value"] >= standard[k]["value"] - 1e-12 for k in standard if k.endswith("|DCG@5"))
    assert any(flat[k]["value"] > standard[k]["value"] + 1e-9 for k in standard if k.endswith("|DCG@5"))
    metric = campaign_metric(Campaign.objects.get(pk=campaign.pk), "ERR@5")
    assert metric.gain_values is None, "ERR keeps its own definition"
