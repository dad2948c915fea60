"""/progress/ of a pair campaign counts comparisons and says done once every list (or pair) is."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from django.contrib.auth.models import AbstractBaseUser
from rest_framework.test import APIClient

from labeling.models import Campaign
from pairwise.models import Comparison, PairTask, TopKHeap
from tests.pairwise.helpers import answer_pending, finish_all

pytestmark = pytest.mark.django_db


def _progress(campaign: Campaign, user: AbstractBaseUser) -> dict[str, object]:
    client = APIClient()
    client.force_authenticate(user)
    return client.get(f"/api/campaigns/{campaign.pk}/progress/").json()


def test_it_counts_comparisons_and_heaps_of_a_top_k_campaign(
    topk_campaign: Campaign, assessor: AbstractBaseUser, second_assessor: AbstractBaseUser
) -> None:
    before = _progress(topk_campaign, assessor)
    assert before["judgments"] == 0 and before["state"] == "running"
    for _ in range(4):
        answer_pending(topk_campaign, assessor)
    during = _progress(topk_campaign, assessor)
    assert during["judgments"] == during["spent"] == 4 == Comparison.objects.count()
    assert during["pool_size"] == TopKHeap.objects.count() == 2
    assert during["drawn"] == 1 and during["open_tasks"] == 2 and during["state"] == "running"
    assert during["remaining"] == during["budget"] - 4
    finish_all(topk_campaign, assessor)
    finish_all(topk_campaign, second_assessor)
    after = _progress(topk_campaign, assessor)
    assert after["state"] == "done" and after["open_tasks"] == 0 and after["drawn"] == 2
    assert after["judgments"] == Comparison.objects.count() and "done" in after["message"]


def test_it_counts_pre_drawn_pairs_in_pairwise_mode(
    make_campaign: Callable[..., Campaign], assessor: AbstractBaseUser
) -> None:
    campaign = make_campaign(mode="pairwise")
    answer_pending(campaign, assessor)
    progress = _progress(campaign, assessor)
    pairs = PairTask.objects.filter(campaign=campaign, heap__isnull=True)
    assert progress["judgments"] == 1 and progress["pool_size"] == pairs.count() > 1
    assert progress["open_tasks"] == pairs.filter(answered_at__isnull=True).count() == pairs.count() - 1
    finish_all(campaign, assessor)
    assert _progress(campaign, assessor)["state"] == "done"
