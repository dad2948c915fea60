"""What the app's estimates average over: every topic of the campaign (issue 10, repro 5).

The core's rule (`estimation.sampling.pool_build.ESTIMAND_RULE`): a topic no run ranks counts 0 for every
run, as `evaluate` counts a qrels topic no run ranks. The app does not draw those known zeros; it
scales the pooled topics' estimates by their share, so every number follows the rule exactly.
"""

from __future__ import annotations

import json
from collections.abc import Callable

import pytest
from django.contrib.auth.models import AbstractBaseUser
from rest_framework.test import APIClient

from estimation.sampling.pool_build import ESTIMAND_RULE
from labeling.models import Campaign, PoolItem, System
from labeling.services.campaigns import campaign_assessors_assign, campaign_start, campaign_update
from sampling.evaluation import run_evaluate
from tests.conftest import upload
from tests.labeling.helpers import judge_everything
from uploads.imports import topics_import

pytestmark = pytest.mark.django_db

Api = Callable[[AbstractBaseUser | None], APIClient]
SCALED = ("value", "se", "low", "high", "any_n_low", "any_n_high")


def _add_unranked_topic(campaign: Campaign) -> None:
    extra = json.dumps({"id": "999", "title": "nobody ranks this"}) + "\n"
    topics_import(campaign=campaign, files=[upload("more.jsonl", extra)], file_format="jsonl")


def test_it_says_which_topics_the_estimates_average_over(
    campaign: Campaign, coordinator: AbstractBaseUser, api: Api
) -> None:
    pooled = PoolItem.objects.filter(campaign=campaign).values("topic_id").distinct().count()
    estimand = api(coordinator).get(f"/api/campaigns/{campaign.pk}/estimates/").json()["estimand"]
    assert (estimand["topics"], estimand["ranked_topics"], estimand["left_out"]) == (pooled, pooled, 0)
    assert f"the mean over the campaign's {pooled} topics" in estimand["rule"]
    assert estimand["core_rule"] == ESTIMAND_RULE

    _add_unranked_topic(campaign)
    estimand = api(coordinator).get(f"/api/campaigns/{campaign.pk}/estimates/").json()["estimand"]
    assert (estimand["topics"], estimand["ranked_topics"], estimand["left_out"]) == (pooled + 1, pooled, 1)
    assert "1 of them no run ranks: they count 0 for every run" in estimand["rule"]
    assert (
        f"every number is {pooled}/{pooled + 1} of the mean over the {pooled} ranked topics"
        in estimand["rule"]
    )


@pytest.mark.parametrize("strategy", ["passive", "items"])
def test_a_topic_no_run_ranks_counts_zero_in_every_number(
    draft_campaign: Campaign,
    assessor: AbstractBaseUser,
    coordinator: AbstractBaseUser,
    api: Api,
    strategy: str,
) -> None:
    """The same draws and labels, one more topic that no run ranks: every estimate, SE and bound
    (and a new run's estimate) becomes pooled / all of what it was; nothing else changes."""
    campaign_update(campaign=draft_campaign, strategy=strategy, budget=12)
    campaign_assessors_assign(campaign=draft_campaign, usernames=["alice"])
    campaign = campaign_start(campaign=draft_campaign)
    judge_everything(campaign, assessor)
    client = api(coordinator)
    url = f"/api/campaigns/{campaign.pk}/estimates/"
    system = System.objects.filter(campaign=campaign).first()
    assert system is not None
    before = client.get(url).json()
    run_before = run_evaluate(campaign, system)
    pooled = before["estimand"]["topics"]

    _add_unranked_topic(campaign)
    after = client.get(url).json()
    run_after = run_evaluate(campaign, system)
    share = pooled / (pooled + 1)

    assert after["draws"] == before["draws"] > 0
    checked = 0
    for old, new in zip(before["systems"], after["systems"], strict=True):
        assert (old["name"], old["metric"], old["n"]) == (new["name"], new["metric"], new["n"])
        for field in SCALED:
            if old.get(field) is None:
                assert new.get(field) is None
                continue
            assert new[field] == pytest.approx(old[field] * share, rel=1e-12, abs=1e-12)
            checked += 1
        for kind, bounds in (old.get("intervals") or {}).items():
            if bounds is not None:
                assert new["intervals"][kind] == pytest.approx([b * share for b in bounds])
                checked += 1
    assert checked >= 2 * len(SCALED)
    assert run_before["value"] is not None and run_before["value"] > 0
    for field in SCALED:
        if run_before[field] is None:
            assert run_after[field] is None
        else:
            assert run_after[field] == pytest.approx(run_before[field] * share)
