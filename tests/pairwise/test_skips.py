"""Skipping in the pair modes: a pairwise pair goes to someone else and never back, in no slot;
a top-k comparison cannot be skipped (it is a step of one assessor's sort)."""

from __future__ import annotations

from collections.abc import Callable

from django.contrib.auth.models import AbstractBaseUser

from labeling.models import Campaign, Skip
from pairwise import services
from pairwise.models import PairTask


def test_a_skipped_pair_goes_to_someone_else_and_never_back(
    make_campaign: Callable[..., Campaign],
    assessor: AbstractBaseUser,
    second_assessor: AbstractBaseUser,
    api: Callable,
) -> None:
    campaign = make_campaign(mode="pairwise", pairs_per_topic=3, overlap=2)
    client = api(assessor)
    first = client.get(f"/api/campaigns/{campaign.pk}/next/").json()
    body = {"reason": "not_sure", "note": "both off topic", "kind": "pair"}
    assert (
        api(second_assessor).post(f"/api/tasks/{first['task']}/skip/", body, format="json").status_code == 409
    )
    assert client.post(f"/api/tasks/{first['task']}/skip/", body, format="json").status_code == 200
    skipped = PairTask.objects.get(pk=first["task"])
    assert skipped.assessor_id is None and Skip.objects.get().kind == "pair"
    seen_orders = []
    while (task := services.pair_next(campaign=campaign, assessor=assessor)) is not None:
        seen_orders.append(task.order)
        services.pair_answer(task=task, assessor=assessor, outcome="left", seconds=1.0)
    assert skipped.order not in seen_orders and seen_orders, "neither slot of the skipped pair"
    assert services.pair_next(campaign=campaign, assessor=second_assessor).order == skipped.order


def test_a_top_k_comparison_cannot_be_skipped(
    topk_campaign: Campaign, assessor: AbstractBaseUser, api: Callable
) -> None:
    client = api(assessor)
    pair = client.get(f"/api/campaigns/{topk_campaign.pk}/next/").json()
    refused = client.post(
        f"/api/tasks/{pair['task']}/skip/", {"reason": "other", "kind": "pair"}, format="json"
    )
    assert refused.status_code == 400 and "top-k comparison cannot be skipped" in refused.json()["detail"]
    assert not Skip.objects.exists()
    assert PairTask.objects.get(pk=pair["task"]).assessor_id == assessor.pk
