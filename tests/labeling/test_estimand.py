"""What the app's estimates average over, said in the estimates API (issue 10, repro 5)."""

from __future__ import annotations

import json
from collections.abc import Callable

import pytest
from django.contrib.auth.models import AbstractBaseUser
from rest_framework.test import APIClient

from labeling import services
from labeling.models import Campaign, PoolItem
from tests.labeling.conftest import upload

pytestmark = pytest.mark.django_db

Api = Callable[[AbstractBaseUser | None], APIClient]


def test_it_says_which_topics_the_estimates_average_over(
    campaign: Campaign, coordinator: AbstractBaseUser, api: Api
) -> None:
    pooled = PoolItem.objects.filter(campaign=campaign).values("topic_id").distinct().count()
    estimand = api(coordinator).get(f"/api/campaigns/{campaign.pk}/estimates/").json()["estimand"]
    assert estimand["topics"] == pooled and estimand["left_out"] == 0
    assert f"the mean over the {pooled} topics some run ranks" in estimand["rule"]

    # A topic that no run ranks joins the campaign: it is named as left out of the mean.
    extra = json.dumps({"id": "999", "title": "nobody ranks this"}) + "\n"
    services.topics_import(campaign=campaign, files=[upload("more.jsonl", extra)], file_format="jsonl")
    estimand = api(coordinator).get(f"/api/campaigns/{campaign.pk}/estimates/").json()["estimand"]
    assert (estimand["topics"], estimand["left_out"]) == (pooled, 1)
    assert estimand["campaign_topics"] == pooled + 1
    assert f"the mean is {pooled}/{pooled + 1} of this" in estimand["rule"]
