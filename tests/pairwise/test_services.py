"""Services: persistence after every answer, leases, overlap, refusals, undo, the bad shortcut."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta

import pytest
from django.contrib.auth.models import AbstractBaseUser
from django.utils import timezone

from estimation.topk.state import AnswerEvent, TopKState, answer, next_pair, result
from labeling.models import Campaign, Document
from labeling.services.campaigns import (
    campaign_assessors_assign,
    campaign_create,
    campaign_start,
)
from operations.accounts import user_create
from pairwise import services
from pairwise.models import Comparison, PairTask, TopKHeap
from tests.conftest import PASSWORD, upload
from tests.pairwise.conftest import true_relevance
from tests.pairwise.helpers import answer_pending, oracle
from uploads.run_imports import runs_import

# Database-specific: `make test` runs this module again on PostgreSQL (tests/test_database_specific.py).
pytestmark = [pytest.mark.django_db, pytest.mark.postgresql]


def canonical(events: tuple[object, ...]) -> list[tuple[str, ...]]:
    """Events with each answered pair in docno order (the page may show it either way round)."""
    flipped = {"left": "right", "tie": "tie", "right": "left"}
    rows = []
    for event in events:
        if isinstance(event, AnswerEvent):
            if event.left < event.right:
                rows.append((event.left, event.right, event.outcome))
            else:
                rows.append((event.right, event.left, flipped[event.outcome]))
        else:
            rows.append(("bad", event.document))
    return rows


def test_it_persists_every_answer_and_resumes_like_an_uninterrupted_run(
    topk_campaign: Campaign, assessor: AbstractBaseUser
) -> None:
    first = services.pair_next(campaign=topk_campaign, assessor=assessor)
    assert first is not None and first.heap is not None
    heap_id = first.heap_id
    uninterrupted = TopKState.from_json(TopKHeap.objects.get(pk=heap_id).state)
    while True:
        # Everything the next request knows comes from the database: a restarted server.
        task = services.pair_next(campaign=topk_campaign, assessor=assessor)
        if task is None or task.heap_id != heap_id:
            break
        pending = next_pair(uninterrupted)
        assert pending is not None
        assert {task.left.docno, task.right.docno} == {pending.left, pending.right}
        outcome = oracle(pending.left, pending.right)
        uninterrupted = answer(uninterrupted, pending, outcome)
        services.pair_answer(
            task=task,
            assessor=assessor,
            outcome=oracle(task.left.docno, task.right.docno),
            seconds=2.0,
        )
        stored = TopKState.from_json(TopKHeap.objects.get(pk=heap_id).state)
        assert result(stored) == result(uninterrupted)
        assert canonical(stored.events) == canonical(uninterrupted.events)
    heap = TopKHeap.objects.get(pk=heap_id)
    assert heap.done and next_pair(uninterrupted) is None
    documents = heap.state["documents"]
    truth = sorted(documents, key=true_relevance, reverse=True)[:3]
    assert heap.order == truth == list(result(uninterrupted).order)
    assert heap.judgments == Comparison.objects.filter(heap=heap).count()


def test_it_never_leases_one_heap_to_two_assessors(
    make_campaign: Callable[..., Campaign], assessor: AbstractBaseUser, second_assessor: AbstractBaseUser
) -> None:
    campaign = make_campaign()
    alice_task = services.pair_next(campaign=campaign, assessor=assessor)
    bob_task = services.pair_next(campaign=campaign, assessor=second_assessor)
    assert alice_task is not None and bob_task is not None
    assert alice_task.heap_id != bob_task.heap_id
    assert alice_task.topic_id != bob_task.topic_id, "overlap 1: one heap per topic"
    # Asking again returns the same pending pair, not another heap.
    again = services.pair_next(campaign=campaign, assessor=assessor)
    assert again is not None and again.pk == alice_task.pk
    # A third assessor finds nothing: both heaps are taken.
    carol = user_create(creator=None, username="carol", password=PASSWORD, role="assessor")
    campaign_assessors_assign(campaign=campaign, usernames=["carol"])
    assert services.pair_next(campaign=campaign, assessor=carol) is None
    # Bob cannot answer Alice's pair.
    with pytest.raises(services.LeaseConflict):
        services.pair_answer(task=alice_task, assessor=second_assessor, outcome="left", seconds=1.0)


def test_it_gives_each_assessor_a_separate_heap_when_overlap_asks(
    make_campaign: Callable[..., Campaign], assessor: AbstractBaseUser, second_assessor: AbstractBaseUser
) -> None:
    campaign = make_campaign(overlap=2)
    assert TopKHeap.objects.filter(campaign=campaign).count() == 0, "heaps are made on demand"
    alice_done = bob_done = False
    while not (alice_done and bob_done):
        alice_done = alice_done or answer_pending(campaign, assessor) is None
        bob_done = bob_done or answer_pending(campaign, second_assessor) is None
    heaps = list(TopKHeap.objects.filter(campaign=campaign))
    assert len(heaps) == 4 and all(heap.done for heap in heaps)
    for topic_id in {heap.topic_id for heap in heaps}:
        owners = {heap.assessor_id for heap in heaps if heap.topic_id == topic_id}
        assert owners == {assessor.pk, second_assessor.pk}, "one heap of each topic per assessor"
    for heap in heaps:
        answered_by = set(Comparison.objects.filter(heap=heap).values_list("assessor_id", flat=True))
        assert answered_by == {heap.assessor_id}, "nobody else's answers drive a heap"
        truth = sorted(heap.state["documents"], key=true_relevance, reverse=True)[:3]
        assert heap.order == truth


def test_it_refuses_an_answer_to_a_pair_that_is_not_pending(
    topk_campaign: Campaign, assessor: AbstractBaseUser
) -> None:
    task = answer_pending(topk_campaign, assessor)
    assert task is not None
    with pytest.raises(services.PairNotPending):
        services.pair_answer(task=task, assessor=assessor, outcome="left", seconds=1.0)
    pending = services.pair_next(campaign=topk_campaign, assessor=assessor)
    assert pending is not None
    # A forged task on the same heap with another pair is refused and changes nothing.
    heap = TopKHeap.objects.get(pk=pending.heap_id)
    steps = heap.steps
    other = next(
        docno for docno in heap.state["documents"] if docno not in {pending.left.docno, pending.right.docno}
    )
    forged = PairTask.objects.create(
        campaign=topk_campaign,
        topic_id=pending.topic_id,
        heap=heap,
        step=heap.steps,
        left=pending.left,
        right=Document.objects.get(campaign=topk_campaign, docno=other),
        assessor=assessor,
    )
    with pytest.raises(services.PairNotPending):
        services.pair_answer(task=forged, assessor=assessor, outcome="tie", seconds=1.0)
    assert TopKHeap.objects.get(pk=heap.pk).steps == steps


def test_it_undoes_the_last_answer_and_shows_the_pair_again(
    topk_campaign: Campaign, assessor: AbstractBaseUser
) -> None:
    first = answer_pending(topk_campaign, assessor)
    assert first is not None
    heap = TopKHeap.objects.get(pk=first.heap_id)
    assert heap.steps == 1
    again = services.pair_undo(campaign=topk_campaign, assessor=assessor)
    assert again.pk == first.pk and again.answered_at is None
    heap.refresh_from_db()
    assert heap.steps == 0 and heap.judgments == 0
    assert not Comparison.objects.filter(heap=heap).exists()
    assert services.pair_next(campaign=topk_campaign, assessor=assessor).pk == first.pk
    with pytest.raises(services.UndoNotAllowed):
        services.pair_undo(campaign=topk_campaign, assessor=assessor)


def test_it_puts_a_clearly_irrelevant_document_in_the_rest(
    topk_campaign: Campaign, assessor: AbstractBaseUser
) -> None:
    task = services.pair_next(campaign=topk_campaign, assessor=assessor)
    assert task is not None
    bad = task.left.docno
    services.pair_answer(task=task, assessor=assessor, outcome="left_bad", seconds=0.5)
    heap_id = task.heap_id
    while True:
        current = services.pair_next(campaign=topk_campaign, assessor=assessor)
        if current is None or current.heap_id != heap_id:
            break
        assert bad not in {current.left.docno, current.right.docno}, "a bad document is never shown again"
        services.pair_answer(
            task=current,
            assessor=assessor,
            outcome=oracle(current.left.docno, current.right.docno),
            seconds=1,
        )
    heap = TopKHeap.objects.get(pk=heap_id)
    assert heap.done and bad not in heap.order and len(heap.order) == 3
    others = [docno for docno in heap.state["documents"] if docno != bad]
    assert heap.order == sorted(others, key=true_relevance, reverse=True)[:3]


def test_it_refuses_the_shortcut_when_the_campaign_turns_it_off(
    make_campaign: Callable[..., Campaign], assessor: AbstractBaseUser
) -> None:
    campaign = make_campaign(allow_bad_shortcut=False)
    task = services.pair_next(campaign=campaign, assessor=assessor)
    assert task is not None
    with pytest.raises(ValueError, match="shortcut"):
        services.pair_answer(task=task, assessor=assessor, outcome="right_bad", seconds=1.0)
    assert not Comparison.objects.exists()


def test_it_asks_no_more_with_reuse_and_transitivity_for_the_same_top_k(
    make_campaign: Callable[..., Campaign], assessor: AbstractBaseUser
) -> None:
    # Both insert in the fused runs' order, so a consistent assessor meets the same comparisons;
    # the improvements only skip the ones already known.
    improved = make_campaign()
    while answer_pending(improved, assessor) is not None:
        pass
    plain = make_campaign(reuse_answers=False, use_transitivity=False)
    while answer_pending(plain, assessor) is not None:
        pass
    by_topic: dict[str, list[tuple[list[str], int]]] = {}
    for campaign in (improved, plain):
        for heap in TopKHeap.objects.filter(campaign=campaign).select_related("topic"):
            assert heap.done
            by_topic.setdefault(heap.topic.qid, []).append((heap.order, heap.judgments))
    for (improved_order, improved_count), (plain_order, plain_count) in by_topic.values():
        assert improved_order == plain_order
        assert improved_count <= plain_count


def test_it_refuses_settings_changes_once_pairs_were_answered(
    topk_campaign: Campaign, assessor: AbstractBaseUser
) -> None:
    services.pairwise_configure(campaign=topk_campaign, k=2)  # nothing answered yet: allowed
    answer_pending(topk_campaign, assessor)
    with pytest.raises(ValueError, match="cannot change"):
        services.pairwise_configure(campaign=topk_campaign, k=4)
    with pytest.raises(ValueError, match="unknown"):
        services.pairwise_configure(campaign=topk_campaign, colour="red")


def test_it_leases_pre_drawn_pairs_in_pairwise_mode(
    make_campaign: Callable[..., Campaign], assessor: AbstractBaseUser, second_assessor: AbstractBaseUser
) -> None:
    campaign = make_campaign(mode="pairwise", pairs_per_topic=3, overlap=2)
    alice = services.pair_next(campaign=campaign, assessor=assessor)
    bob = services.pair_next(campaign=campaign, assessor=second_assessor)
    assert alice is not None and bob is not None and alice.pk != bob.pk
    assert PairTask.objects.filter(campaign=campaign).count() == 2 * 3 * 2
    assert (alice.left_id, alice.right_id) == (bob.left_id, bob.right_id), "overlap: the same pair twice"
    services.pair_answer(task=alice, assessor=assessor, outcome="tie", seconds=3.0)
    with pytest.raises(services.PairNotPending):
        services.pair_answer(task=alice, assessor=assessor, outcome="left", seconds=3.0)
    answered = 1
    while answer_pending(campaign, assessor) is not None:
        answered += 1
    assert answered == 6, "one slot of every pair, never both slots of a pair"


# ---------------------------------------------------------------------------------------------
# Leases over time: who may take a pair or a top-k list once its lease ran out


def _one_list_campaign(coordinator: AbstractBaseUser) -> Campaign:
    """A running top-k campaign of one topic (four documents, k = 2): a single heap."""
    campaign = campaign_create(
        creator=coordinator,
        name="one list",
        metric="DCG@4",
        budget=5,
        judging_mode="topk",
        mode_settings={"k": 2},
    )
    run = "".join(f"7 Q0 R-{number} {number} {10 - number}.0 only\n" for number in range(1, 5))
    runs_import(campaign=campaign, files=[upload("only.run", run)])
    campaign_assessors_assign(campaign=campaign, usernames=["alice", "bob"])
    return campaign_start(campaign=campaign)


def test_it_never_offers_an_answered_pair_to_another_assessor_once_its_lease_ran_out(
    make_campaign: Callable[..., Campaign], assessor: AbstractBaseUser, second_assessor: AbstractBaseUser
) -> None:
    campaign = make_campaign(mode="pairwise", pairs_per_topic=3)
    now = timezone.now()
    answered = services.pair_next(campaign=campaign, assessor=assessor, now=now)
    assert answered is not None
    services.pair_answer(task=answered, assessor=assessor, outcome="left", seconds=1.0, now=now)
    later = now + timedelta(seconds=campaign.lease_seconds + 1)
    taken = services.pair_next(campaign=campaign, assessor=second_assessor, now=later)
    assert taken is not None and taken.pk != answered.pk
    stored = PairTask.objects.get(pk=answered.pk)
    assert (stored.assessor_id, stored.answered_at) == (assessor.pk, now)
    assert list(Comparison.objects.values_list("task_id", "assessor_id")) == [(answered.pk, assessor.pk)]


def test_it_keeps_a_top_k_list_with_answers_with_its_assessor_once_its_lease_ran_out(
    coordinator: AbstractBaseUser, assessor: AbstractBaseUser, second_assessor: AbstractBaseUser
) -> None:
    campaign = _one_list_campaign(coordinator)
    now = timezone.now()
    first = services.pair_next(campaign=campaign, assessor=assessor, now=now)
    assert first is not None
    outcome = oracle(first.left.docno, first.right.docno)
    services.pair_answer(task=first, assessor=assessor, outcome=outcome, seconds=1.0, now=now)
    # A stale page skipping the answered pair would hand the list, answers and all, to the next
    # assessor (as a skip of the pending pair does).
    with pytest.raises(services.LeaseConflict):
        services.pair_skip(task=first, assessor=assessor, reason="not_sure")
    later = now + timedelta(seconds=campaign.lease_seconds + 1)
    assert services.pair_next(campaign=campaign, assessor=second_assessor, now=later) is None
    heap = TopKHeap.objects.get(campaign=campaign)
    assert (heap.assessor_id, heap.steps) == (assessor.pk, 1)
    resumed = services.pair_next(campaign=campaign, assessor=assessor, now=later)
    assert resumed is not None and (resumed.heap_id, resumed.step) == (heap.pk, 1), "resumed where it stopped"


# As for graded tasks: a lease runs out strictly after `lease_expires_at`.
TICK = timedelta(microseconds=1)


def test_a_pair_lease_keeps_others_off_until_just_after_it_expires(
    make_campaign: Callable[..., Campaign], assessor: AbstractBaseUser, second_assessor: AbstractBaseUser
) -> None:
    campaign = make_campaign(mode="pairwise", pairs_per_topic=3)
    held = services.pair_next(campaign=campaign, assessor=assessor, now=timezone.now())
    assert held is not None
    expiry = PairTask.objects.get(pk=held.pk).lease_expires_at
    other = services.pair_next(campaign=campaign, assessor=second_assessor, now=expiry)
    assert other is not None and other.pk != held.pk, "at its expiry instant the lease still holds"
    services.pair_answer(task=other, assessor=second_assessor, outcome="tie", seconds=1.0, now=expiry)
    taken = services.pair_next(campaign=campaign, assessor=second_assessor, now=expiry + TICK)
    assert taken is not None and taken.pk == held.pk, "a microsecond later it is free"


def test_a_pair_holder_may_answer_at_the_expiry_instant_and_not_a_microsecond_later(
    make_campaign: Callable[..., Campaign], assessor: AbstractBaseUser
) -> None:
    campaign = make_campaign(mode="pairwise", pairs_per_topic=3)
    first = services.pair_next(campaign=campaign, assessor=assessor, now=timezone.now())
    assert first is not None
    expiry = PairTask.objects.get(pk=first.pk).lease_expires_at
    services.pair_answer(task=first, assessor=assessor, outcome="left", seconds=1.0, now=expiry)
    second = services.pair_next(campaign=campaign, assessor=assessor, now=expiry)
    assert second is not None and second.pk != first.pk
    second_expiry = PairTask.objects.get(pk=second.pk).lease_expires_at
    with pytest.raises(services.LeaseConflict, match="expired"):
        services.pair_answer(
            task=second, assessor=assessor, outcome="left", seconds=1.0, now=second_expiry + TICK
        )
    assert list(Comparison.objects.values_list("task_id", flat=True)) == [first.pk]
    assert PairTask.objects.get(pk=second.pk).answered_at is None


def test_an_untouched_top_k_list_is_held_until_just_after_its_lease_expires(
    coordinator: AbstractBaseUser, assessor: AbstractBaseUser, second_assessor: AbstractBaseUser
) -> None:
    campaign = _one_list_campaign(coordinator)
    assert services.pair_next(campaign=campaign, assessor=assessor, now=timezone.now()) is not None
    expiry = TopKHeap.objects.get(campaign=campaign).lease_expires_at
    assert services.pair_next(campaign=campaign, assessor=second_assessor, now=expiry) is None
    taken = services.pair_next(campaign=campaign, assessor=second_assessor, now=expiry + TICK)
    assert taken is not None and TopKHeap.objects.get(campaign=campaign).assessor_id == second_assessor.pk
