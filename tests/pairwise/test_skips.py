"""Skipping in the pair modes: a pairwise pair goes to someone else and never back, in no slot;
a skipped top-k comparison hands the query's whole list on, to be continued where it stopped."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from django.contrib.auth.models import AbstractBaseUser

from labeling.models import Campaign, Skip
from pairwise import services
from pairwise.models import PairTask, TopKHeap


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


def test_a_top_k_skip_hands_the_list_on_to_be_continued_where_it_stopped(
    topk_campaign: Campaign,
    assessor: AbstractBaseUser,
    second_assessor: AbstractBaseUser,
    api: Callable,
) -> None:
    client = api(assessor)
    first = client.get(f"/api/campaigns/{topk_campaign.pk}/next/").json()
    services.pair_answer(
        task=PairTask.objects.get(pk=first["task"]), assessor=assessor, outcome="left", seconds=1.0
    )
    pending = client.get(f"/api/campaigns/{topk_campaign.pk}/next/").json()
    heap = TopKHeap.objects.get(pk=PairTask.objects.get(pk=pending["task"]).heap_id)
    body = {"reason": "cannot_judge", "note": "both pages are in Dutch", "kind": "pair"}
    assert (
        api(second_assessor).post(f"/api/tasks/{pending['task']}/skip/", body, format="json").status_code
        == 409
    ), "only the holder can skip"
    assert client.post(f"/api/tasks/{pending['task']}/skip/", body, format="json").status_code == 200
    heap.refresh_from_db()
    assert heap.assessor_id is None and heap.judgments == 1 and not heap.done
    skip = Skip.objects.get()
    assert (skip.kind, skip.topic_id, skip.note) == ("pair", heap.topic_id, "both pages are in Dutch")
    # A late answer to the skipped pair is refused: the pair was superseded.
    with pytest.raises((services.PairNotPending, services.LeaseConflict)):
        services.pair_answer(
            task=PairTask.objects.get(pk=pending["task"]), assessor=assessor, outcome="tie", seconds=1.0
        )
    # The first assessor moves on to the other topic and never gets this one back.
    while (task := services.pair_next(campaign=topk_campaign, assessor=assessor)) is not None:
        assert task.topic_id != heap.topic_id
        services.pair_answer(task=task, assessor=assessor, outcome="left", seconds=1.0)
    # The second assessor continues the same sort from its one answer.
    continued = services.pair_next(campaign=topk_campaign, assessor=second_assessor)
    assert continued.heap_id == heap.pk and continued.step == heap.steps
    assert {continued.left_id, continued.right_id} == {
        PairTask.objects.get(pk=pending["task"]).left_id,
        PairTask.objects.get(pk=pending["task"]).right_id,
    }, "the pending comparison of the sort, not a fresh start"


def test_an_outsider_skipping_a_pair_gets_404_as_for_an_answer(
    make_campaign: Callable[..., Campaign],
    assessor: AbstractBaseUser,
    outsider: AbstractBaseUser,
    api: Callable,
) -> None:
    campaign = make_campaign(mode="pairwise", pairs_per_topic=3)
    task = api(assessor).get(f"/api/campaigns/{campaign.pk}/next/").json()["task"]
    answer = api(outsider).post(f"/api/tasks/{task}/answer/", {"outcome": "left"}, format="json")
    skip = api(outsider).post(f"/api/tasks/{task}/skip/", {"reason": "other", "kind": "pair"}, format="json")
    assert (answer.status_code, skip.status_code) == (404, 404)
    assert PairTask.objects.get(pk=task).assessor_id == assessor.pk
