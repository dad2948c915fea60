"""Writes: lease pairs to assessors, record their answers, undo the last one.

A top-k heap is claimed atomically with a conditional UPDATE that only one claimant can win
(``filter(...).update(...) == 1``), like graded tasks. The heap then belongs to its assessor:
the state machine (`estimation.topk.state`) holds that assessor's answers, so another assessor
never drives it; only an untouched heap whose lease expired goes back to the queue, one a
coordinator releases (`heap_release`, when its assessor has left), or one its assessor hands
on by skipping a comparison (`pair_skip`). With
overlap > 1 every topic has one heap per slot and nobody holds two slots of one topic, so
each assessor builds a separate top-k of the topic (for agreement).

The heap's state is written after every answer in the same transaction as the answer, so a
closed browser or a restarted server resumes exactly where the assessor stopped.
"""

from __future__ import annotations

import math
from datetime import datetime

import numpy as np
from django.conf import settings as django_settings
from django.contrib.auth.models import User
from django.db import IntegrityError, transaction
from django.db.models import Q
from django.utils import timezone

from estimation.topk.state import Pair, TopKState, answer, mark_bad, next_pair, result, undo
from labeling.leases import (
    LeaseConflict,
    UndoNotAllowed,
    lease_claim,
    lease_expiry,
    lease_renew,
    lease_reopen,
    lease_return,
    unanswered_claimable,
)
from labeling.models import Campaign, Document, Skip
from labeling.recompute import recompute_soon
from labeling.services.skips import skip_checked
from pairwise.models import Comparison, PairTask, PairwiseSettings, TopKHeap
from pairwise.selectors import heap_active_for_assessor, is_topk, pairwise_settings_get
from pairwise.services.setup import pairwise_prepare, seed_for

MAX_SECONDS = 24 * 3600.0
OUTCOMES = ("left", "tie", "right", "left_bad", "right_bad")
SKIP_KIND = "pair"  # the `Skip.kind` of both pair modes


class PairNotPending(Exception):
    """The answer is for a pair that is not the one pending (HTTP 409)."""


# ---------------------------------------------------------------------------------------------
# Leasing


def _held_by(assessor: User) -> Q:
    """A pair task this assessor holds and has not answered (a renewal never extends another's)."""
    return Q(assessor_id=assessor.pk, answered_at__isnull=True)


def _claimable_heap(now: datetime) -> Q:
    # An untouched heap whose lease ran out goes back to the queue; one with answers stays.
    return Q(done=False) & (Q(assessor__isnull=True) | Q(lease_expires_at__lt=now, steps=0))


def _heap_claim(campaign: Campaign, assessor: User, now: datetime) -> TopKHeap | None:
    held_topics = TopKHeap.objects.filter(campaign=campaign, assessor_id=assessor.pk).values("topic_id")
    # A topic whose top-k list this assessor handed on by a skip never comes back to them.
    skipped_topics = Skip.objects.filter(campaign=campaign, assessor_id=assessor.pk, kind=SKIP_KIND).values(
        "topic_id"
    )
    candidates = (
        TopKHeap.objects.filter(campaign=campaign)
        .filter(_claimable_heap(now))
        .exclude(topic_id__in=held_topics)
        .exclude(topic_id__in=skipped_topics)
        .order_by("slot", "topic__qid", "id")
        .values_list("pk", flat=True)[:20]
    )
    for heap_id in list(candidates):
        try:
            with transaction.atomic():
                claimed = lease_claim(
                    TopKHeap,
                    heap_id,
                    assessor,
                    now,
                    campaign.lease_seconds,
                    _claimable_heap(now),
                    started_at=now,
                )
        except IntegrityError:
            continue  # our own concurrent request took another slot of this topic
        if claimed:
            return TopKHeap.objects.get(pk=heap_id)
    return None


def _heap_pending_task(heap: TopKHeap, assessor: User, now: datetime) -> PairTask | None:
    """The heap's pending pair as a task leased to the assessor (made once, then reused)."""
    state = TopKState.from_json(heap.state)
    pair = next_pair(state)
    if pair is None:
        return None
    seconds = heap.campaign.lease_seconds
    open_tasks = PairTask.objects.filter(heap=heap, answered_at__isnull=True, superseded=False)
    current = (
        open_tasks.filter(assessor_id=assessor.pk, step=heap.steps).select_related("left", "right").first()
    )
    if current is not None and {current.left.docno, current.right.docno} == {pair.left, pair.right}:
        if lease_renew(PairTask, current.pk, now, seconds, _held_by(assessor)):
            return current
    # Kept, not deleted, so a late answer to one of them is refused as not pending (409).
    open_tasks.update(superseded=True)
    documents = {
        document.docno: document
        for document in Document.objects.filter(
            campaign_id=heap.campaign_id, docno__in=[pair.left, pair.right]
        )
    }
    # Sides are random but replayable: the same heap step always shows the same sides.
    swapped = bool(np.random.default_rng(seed_for(heap.campaign, heap.pk, heap.steps)).random() < 0.5)
    left, right = (pair.right, pair.left) if swapped else (pair.left, pair.right)
    return PairTask.objects.create(
        campaign_id=heap.campaign_id,
        topic_id=heap.topic_id,
        heap=heap,
        step=heap.steps,
        slot=heap.slot,
        left=documents[left],
        right=documents[right],
        swapped=swapped,
        assessor=assessor,
        leased_at=now,
        lease_expires_at=lease_expiry(now, seconds),
    )


def _topk_next(campaign: Campaign, assessor: User, now: datetime) -> PairTask | None:
    for _ in range(5):
        heap = heap_active_for_assessor(campaign, assessor)
        held = Q(assessor_id=assessor.pk)
        if heap is not None and not lease_renew(TopKHeap, heap.pk, now, campaign.lease_seconds, held):
            continue  # claimed by someone else since it was read (an untouched, expired heap)
        if heap is None:
            if campaign.status != Campaign.Status.RUNNING:
                return None
            pairwise_prepare(campaign=campaign, now=now)
            heap = _heap_claim(campaign, assessor, now)
            if heap is None:
                return None
        task = _heap_pending_task(heap, assessor, now)
        if task is not None:
            return task
        TopKHeap.objects.filter(pk=heap.pk).update(done=True)  # finished: look for the next heap
    return None


@transaction.atomic
def heap_release(*, campaign: Campaign, heap_id: int) -> TopKHeap:
    """Take an unfinished top-k heap back from its assessor (who left the campaign, say): the
    next assessor who asks for a pair continues it where it stopped, with the answers given so
    far (each comparison keeps who made it). The pair on the old assessor's screen is
    superseded, so a late answer to it is refused as not pending (409).

    ValueError when the heap is finished or nobody holds it.
    """
    heap = TopKHeap.objects.select_for_update().filter(pk=heap_id, campaign=campaign).first()
    if heap is None:
        raise TopKHeap.DoesNotExist(f"no top-k heap {heap_id} in this campaign")
    if heap.done:
        raise ValueError("this top-k list is finished: there is nothing to release")
    if heap.assessor_id is None:
        raise ValueError("nobody holds this top-k list")
    _heap_hand_back(heap.pk)
    heap.refresh_from_db()
    return heap


def _heap_hand_back(heap_id: int) -> None:
    """The heap back in the queue with its answers so far; its open pair is superseded."""
    PairTask.objects.filter(heap_id=heap_id, answered_at__isnull=True, superseded=False).update(
        superseded=True
    )
    lease_return(TopKHeap, heap_id, updated_at=timezone.now())


def _pairwise_next(campaign: Campaign, assessor: User, now: datetime) -> PairTask | None:
    seconds = campaign.lease_seconds
    current = PairTask.objects.filter(
        campaign=campaign, heap__isnull=True, assessor_id=assessor.pk, answered_at__isnull=True
    ).first()
    if current is not None and lease_renew(PairTask, current.pk, now, seconds, _held_by(assessor)):
        return current
    if campaign.status != Campaign.Status.RUNNING:
        return None
    pairwise_prepare(campaign=campaign, now=now)
    claimable = unanswered_claimable(now)
    # Overlap asks for different assessors per pair: skip pairs this assessor holds in another slot.
    held = PairTask.objects.filter(campaign=campaign, assessor_id=assessor.pk).values("order")
    # A pair this assessor skipped never comes back to them, in any slot.
    skipped = PairTask.objects.filter(
        pk__in=Skip.objects.filter(campaign=campaign, assessor_id=assessor.pk, kind=SKIP_KIND).values("unit")
    ).values("order")
    candidates = (
        PairTask.objects.filter(campaign=campaign, heap__isnull=True)
        .filter(claimable)
        .exclude(order__in=held)
        .exclude(order__in=skipped)
        .order_by("order", "slot", "id")
        .values_list("pk", flat=True)[:20]
    )
    for task_id in list(candidates):
        if lease_claim(PairTask, task_id, assessor, now, seconds, claimable):
            return PairTask.objects.get(pk=task_id)
    return None


def _lock_heap_then_task(task_id: int) -> tuple[TopKHeap | None, PairTask]:
    """Lock a pair's heap (top-k), then the pair: the order `pair_undo` takes them too, so an
    answer, a skip and an undo of the same heap never deadlock."""
    heap_id = PairTask.objects.filter(pk=task_id).values_list("heap_id", flat=True).first()
    heap = (
        None
        if heap_id is None
        else TopKHeap.objects.select_for_update(of=("self",)).select_related("campaign").get(pk=heap_id)
    )
    task = (
        PairTask.objects.select_for_update(of=("self",))
        .select_related("campaign", "left", "right")
        .get(pk=task_id)
    )
    return heap, task


@transaction.atomic
def pair_skip(*, task: PairTask, assessor: User, reason: str, note: str = "") -> Skip:
    """Give back a held pair with a reason; this assessor never sees it again.

    Pairwise: someone else compares the pair. Top-k: a comparison is a step of one sort, so the
    whole top-k list of the topic goes on: the next assessor continues the sort where it
    stopped, with the answers given so far (as after `heap_release`), and this assessor gets no
    list of that topic again.
    """
    reason, note = skip_checked(reason, note)
    heap, locked = _lock_heap_then_task(task.pk)
    if locked.assessor_id != assessor.pk or locked.answered_at is not None or locked.superseded:
        raise LeaseConflict("you do not hold this pair (answered, or its lease went to someone else)")
    if heap is not None:
        if heap.assessor_id != assessor.pk or heap.done:
            raise LeaseConflict("you do not hold this top-k list")
        _heap_hand_back(heap.pk)
    else:
        lease_return(PairTask, locked.pk)
    return Skip.objects.create(
        campaign_id=locked.campaign_id,
        assessor=assessor,
        kind=SKIP_KIND,
        unit=locked.pk,
        topic_id=locked.topic_id,
        reason=reason,
        note=note,
    )


def pair_next(*, campaign: Campaign, assessor: User, now: datetime | None = None) -> PairTask | None:
    """Lease the assessor's next pair (their pending one first); None when nothing is left."""
    now = now or timezone.now()
    if pairwise_settings_get(campaign) is None:
        raise ValueError("this campaign does not judge in pairs")
    if is_topk(campaign):
        task = _topk_next(campaign, assessor, now)
    else:
        task = _pairwise_next(campaign, assessor, now)
    if task is None:
        return None
    return PairTask.objects.select_related("campaign", "topic", "left", "right", "heap").get(pk=task.pk)


# ---------------------------------------------------------------------------------------------
# Answers


def _checked(outcome: str, seconds: float | None) -> float | None:
    if outcome not in OUTCOMES:
        raise ValueError(f"outcome must be one of {', '.join(OUTCOMES)}, got {outcome!r}")
    if seconds is not None:
        seconds = float(seconds)
        if not math.isfinite(seconds) or not 0 <= seconds <= MAX_SECONDS:
            raise ValueError(f"seconds must be between 0 and {MAX_SECONDS:.0f}, got {seconds!r}")
    return seconds


def _heap_save(heap: TopKHeap, state: TopKState, now: datetime) -> None:
    summary = result(state)
    heap.state = state.to_json()
    heap.steps = len(state.events)
    heap.judgments = summary.judgments
    heap.done = summary.done
    heap.order = list(summary.order)
    heap.finished_at = now if summary.done else None
    heap.leased_at = now
    heap.lease_expires_at = lease_expiry(now, heap.campaign.lease_seconds)
    heap.save()


@transaction.atomic
def pair_answer(
    *,
    task: PairTask,
    assessor: User,
    outcome: str,
    seconds: float | None,
    now: datetime | None = None,
) -> Comparison:
    """Record the assessor's answer to a leased pair ("left", "tie", "right" as displayed, or
    "left_bad" / "right_bad"); a top-k heap advances and is stored in the same transaction.

    Raises PairNotPending for a pair already answered or no longer the heap's pending pair,
    LeaseConflict for a pair or heap leased to someone else (or expired), ValueError for bad input.
    """
    now = now or timezone.now()
    seconds = _checked(outcome, seconds)
    heap, task = _lock_heap_then_task(task.pk)
    if task.answered_at is not None:
        raise PairNotPending("this pair was answered already; fetch the next pair")
    if task.superseded:
        raise PairNotPending("this pair is no longer pending (an answer was undone); fetch the next pair")
    if task.assessor_id != assessor.pk:
        raise LeaseConflict("this pair is leased to another assessor")
    bad = {"left_bad": task.left.docno, "right_bad": task.right.docno}.get(outcome)
    if heap is None:
        if task.lease_expires_at is None or task.lease_expires_at < now:
            raise LeaseConflict("this pair's lease expired")
        pairwise = PairwiseSettings.objects.get(campaign_id=task.campaign_id)
        if bad is not None and not pairwise.allow_bad_shortcut:
            raise ValueError("the clearly-irrelevant shortcut is off in this campaign")
    else:
        if heap.assessor_id != assessor.pk:
            raise LeaseConflict("this top-k heap belongs to another assessor")
        state = TopKState.from_json(heap.state)
        pending = next_pair(state)
        shown = {task.left.docno, task.right.docno}
        if pending is None or task.step != len(state.events) or shown != {pending.left, pending.right}:
            raise PairNotPending("this is not the pending pair of the heap; fetch the next pair")
        if bad is not None:
            state = mark_bad(state, bad)
        else:
            state = answer(state, Pair(task.left.docno, task.right.docno), outcome)  # type: ignore[arg-type]  # the answer's outcome was checked against the literal outcomes
        _heap_save(heap, state, now)
    task.answered_at = now
    task.save(update_fields=["answered_at"])
    _progress_refresh_after_commit(task.campaign_id)
    return Comparison.objects.create(
        campaign_id=task.campaign_id,
        topic_id=task.topic_id,
        task=task,
        heap_id=task.heap_id,
        step=task.step,
        assessor=assessor,
        left_id=task.left_id,
        right_id=task.right_id,
        swapped=task.swapped,
        outcome=outcome,
        seconds=seconds,
    )


def _progress_refresh_after_commit(campaign_id: int) -> None:
    # The coalesced worker recompute records the campaign's progress (the campaign list reads it).
    transaction.on_commit(lambda: recompute_soon(campaign_id))


@transaction.atomic
def pair_undo(*, campaign: Campaign, assessor: User, now: datetime | None = None) -> PairTask:
    """Take back the assessor's last answer within the undo window; its pair is shown again."""
    now = now or timezone.now()
    comparison = (
        Comparison.objects.select_for_update()
        .filter(campaign=campaign, assessor_id=assessor.pk, task__isnull=False)
        .order_by("-created_at", "-id")
        .first()
    )
    if comparison is None:
        raise UndoNotAllowed("there is no answer of yours to undo")
    window = django_settings.LABELING_UNDO_SECONDS
    if (now - comparison.created_at).total_seconds() > window:
        raise UndoNotAllowed(f"answers can only be undone within {window} seconds")
    if comparison.heap_id is not None:
        heap = (
            TopKHeap.objects.select_for_update(of=("self",))
            .select_related("campaign")
            .get(pk=comparison.heap_id)
        )
        if heap.assessor_id != assessor.pk or heap.steps != comparison.step + 1:
            raise UndoNotAllowed("this answer is no longer the last one of its heap")
        _heap_save(heap, undo(TopKState.from_json(heap.state)), now)
        PairTask.objects.filter(heap=heap, answered_at__isnull=True).update(superseded=True)
    task_id = comparison.task_id
    if task_id is None:  # a comparison whose pair a coordinator deleted
        raise UndoNotAllowed("this answer's pair is gone: it cannot be undone")
    comparison.delete()
    lease_reopen(PairTask, task_id, assessor, now, campaign.lease_seconds, superseded=False)
    _progress_refresh_after_commit(campaign.pk)
    return PairTask.objects.select_related("campaign", "topic", "left", "right", "heap").get(pk=task_id)
