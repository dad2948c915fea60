"""The draw queue: draw topics or items from the stored sampling distribution, with replacement.

`draws_top_up` draws from the campaign's stored q (`sampling.state`; it is
computed inline when none is stored, so judging goes on without a worker) until enough tasks
are open. A query draw creates one task per pool item of the topic that has neither a
judgment nor an open task (times the overlap); an item draw, one for its item if needed. A
draw of a unit already judged or queued creates nothing and costs nothing, but is recorded: it
counts in the estimator. Each draw stores the propensity in force when it was drawn. The
seeded inverse-CDF loop is `estimation.sampling.draws.draw_batch`; the strategy's level says what a unit
is (a topic or an item); this module reads coverage and costs and stores draws and tasks.

Budget (Sawade et al. 2013, Algorithm 1): drawing stops when the next draw's predicted cost
would exceed what is left (the budget minus what was spent minus the predicted cost of the
open tasks); `Campaign.blocked` then says "budget" until the budget is raised.
"""

from __future__ import annotations

import threading
import time
from datetime import datetime, timedelta
from typing import Any

import numpy as np
from django.conf import settings
from django.db import transaction
from django.db.models import Max, Q
from django.utils import timezone

from estimation.sampling.costs import fits_budget
from estimation.sampling.draws import STOP_EXHAUSTED, draw_batch
from labeling.models import Campaign, Draw, PoolItem, Task
from labeling.modes import mode_of
from labeling.selectors import campaign_spent, seconds_per_judgment
from sampling.arrival_design import arrival_open_room
from sampling.label_model import item_cost_units, item_seconds
from sampling.pool_arrays import PoolArrays, pool_arrays_for
from sampling.served import engine_serves
from sampling.state import (
    LoadedState,
    sampling_state_current,
    sampling_state_fresh,
    sampling_state_ready,
    stored_cost_model,
)
from sampling.strategies import strategy_for
from webhooks.events import event_emit, register_event

# Repeated draws of labelled units cost nothing; this bounds one top-up's loop.
MAX_DRAWS_PER_TOP_UP = 5000
STALE_RETRIES = 3
"""Refits outside the lock a top-up makes when runs keep being pooled while it waits for it."""
register_event(
    "campaign.budget_spent", "the campaign's budget is spent (judging stops)", emitted_for=engine_serves
)
BLOCKED_EXHAUSTED = STOP_EXHAUSTED


def tasks_open_count(campaign: Campaign, now: datetime | None = None) -> int:
    """Unanswered tasks nobody holds a live lease on."""
    now = now or timezone.now()
    return (
        Task.objects.filter(campaign=campaign, answered_at__isnull=True)
        .filter(Q(assessor__isnull=True) | Q(lease_expires_at__lt=now))
        .count()
    )


# campaign id -> (monotonic time counted, active assessors): the number of active assessors
# changes slowly, and counting them on every item served would cost more than the claim.
_active: dict[int, tuple[float, int]] = {}
_active_lock = threading.Lock()
ACTIVE_CACHE_SECONDS = 5.0


def assessors_active_count(campaign_id: int, now: datetime | None = None) -> int:
    """Assessors who leased a task of the campaign in the last LABELING_ACTIVE_MINUTES (kept per
    process for a few seconds)."""
    clock = time.monotonic()
    with _active_lock:
        cached = _active.get(campaign_id)
    if cached is not None and clock - cached[0] < ACTIVE_CACHE_SECONDS:
        return cached[1]
    now = now or timezone.now()
    since = now - timedelta(minutes=settings.LABELING_ACTIVE_MINUTES)
    leases = Task.objects.filter(campaign_id=campaign_id, leased_at__gte=since)
    active = leases.values("assessor_id").distinct().count()
    with _active_lock:
        _active[campaign_id] = (clock, active)
    return active


def assessors_active_forget() -> None:
    """Drop the counts kept per process (tests: campaign ids come back after a rollback)."""
    with _active_lock:
        _active.clear()


def queue_target(campaign_id: int, now: datetime | None = None) -> int:
    """How many open tasks to keep drawn ahead: LABELING_QUEUE_PER_ASSESSOR for each active
    assessor, and at least LABELING_QUEUE_TARGET.

    A fixed queue ran dry with many assessors: fifty of them emptied it faster than one request
    refilled it, and `next` answered 204 while work remained. Growing it with the team keeps
    every assessor a few items ahead."""
    active = assessors_active_count(campaign_id, now)
    return max(settings.LABELING_QUEUE_TARGET, settings.LABELING_QUEUE_PER_ASSESSOR * active)


def draw_cost(campaign: Campaign, state: LoadedState, lengths: np.ndarray) -> float:
    """Predicted cost, in the budget's unit, of judging documents of these lengths `overlap` times."""
    return documents_cost(campaign, state.record.cost_model, lengths)


def documents_cost(campaign: Campaign, cost_model: dict[str, Any], lengths: np.ndarray) -> float:
    """`draw_cost` under a stored cost model (empty: one unit per document)."""
    count = int(np.size(lengths))
    if count == 0:
        return 0.0
    if campaign.budget_unit == Campaign.BudgetUnit.JUDGMENTS:
        per_item = float(count)
    elif campaign.budget_unit == Campaign.BudgetUnit.COST:
        per_item = float(item_cost_units(cost_model, lengths).sum())
    else:
        seconds = item_seconds(cost_model, lengths, seconds_per_judgment(campaign))
        per_item = float(seconds.sum()) / 3600.0
    return per_item * campaign.overlap


def outstanding_cost(campaign: Campaign, state: LoadedState) -> float:
    """Predicted cost of the tasks drawn but not answered yet."""
    lengths = np.array(
        [
            np.nan if length is None else float(length)
            for length in Task.objects.filter(campaign=campaign, answered_at__isnull=True).values_list(
                "document__length", flat=True
            )
        ]
    )
    return draw_cost(campaign, state, lengths) / campaign.overlap


class _Coverage:
    """Which pool slots are covered (drawn: they have tasks, open or answered; or judged by
    imported qrels), read one topic at a time as draws reach it. Reading the whole campaign per
    top-up would cost a row per judgment so far, again every few hundred items served."""

    def __init__(self, campaign: Campaign, arrays: PoolArrays) -> None:
        self.campaign, self.arrays = campaign, arrays
        self.rows: dict[int, np.ndarray] = {}
        self.uncovered = PoolItem.objects.filter(campaign=campaign, drawn=False, prejudged=False).count()

    def row(self, topic: int) -> np.ndarray:
        """Covered slots of one topic (by topic index), shape (n,)."""
        if topic not in self.rows:
            topic_id = int(self.arrays.topic_ids[topic])
            documents = (
                PoolItem.objects.filter(campaign=self.campaign, topic_id=topic_id)
                .filter(Q(drawn=True) | Q(prejudged=True))
                .values_list("document_id", flat=True)
            )
            document_ids = np.fromiter(documents, dtype=np.int64)
            _, slots = self.arrays.locate(np.full(document_ids.size, topic_id), document_ids)
            row = np.zeros(self.arrays.n_slots, dtype=bool)
            row[slots[slots >= 0]] = True
            self.rows[topic] = row
        return self.rows[topic]


def draws_top_up(
    *, campaign_id: int, target: int | None = None, at_least: int = 0, refit: bool = True
) -> int:
    """Draw until `target` tasks are open (and `at_least` new items however many are open), the
    budget stops it or every item is covered; returns the number of draws made (including free
    repeats).

    Nothing is built while the campaign's row is locked (on SQLite, the database's write lock,
    which every assessor's answer waits for): after a run is pooled, the pool arrays and the
    label model's fit are made again (seconds on a big campaign), here before the lock; a pool
    that changed while this waited for the lock sends it back out to refit. With `refit` False
    (a request that has its task already and only tops the queue up ahead) a stale state is
    left to the worker's recompute, queued with the run: nothing is drawn."""
    for _ in range(STALE_RETRIES):
        campaign = Campaign.objects.filter(pk=campaign_id).first()
        if (
            campaign is None
            or campaign.status != Campaign.Status.RUNNING
            or not mode_of(campaign).uses_sampling
        ):
            return 0
        if not refit and campaign.blocked:
            # The claim's own check, on the stored row: the budget or the pool stopped the last
            # draw, and only a budget change or an arriving run (which clear `blocked`) lets the
            # next one draw. A caller holding an older copy of the campaign would otherwise redo
            # the whole draw for nothing at every claim.
            return 0
        if not sampling_state_ready(campaign, refit=refit):
            return 0  # stale, and not this request's to refit: not even the pool arrays
        pool_arrays_for(campaign)
        made = _draws_top_up_locked(campaign_id, target, at_least)
        if made is not None:
            return made
        if not refit:
            return 0
    return 0


@transaction.atomic
def _draws_top_up_locked(campaign_id: int, target: int | None, at_least: int) -> int | None:
    """The draws, under the campaign's row lock; None when the stored state no longer fits the
    pool (the caller refits outside the lock)."""
    campaign = Campaign.objects.select_for_update(no_key=True).get(pk=campaign_id)
    # Only modes that sample (graded) draw; the others choose their units themselves.
    if campaign.status != Campaign.Status.RUNNING or not mode_of(campaign).uses_sampling:
        return 0
    target = queue_target(campaign.pk) if target is None else target
    wanted = max(target - tasks_open_count(campaign), at_least)
    if wanted <= 0:
        return 0
    state = sampling_state_fresh(campaign)
    if state is None:
        return None
    strategy = strategy_for(campaign)
    room = strategy.items_drawable(campaign)
    if room is not None:
        wanted = min(wanted, room)
        if wanted <= 0:
            return 0
    # A top-up's draws are its own: they count towards it, not any other arrival's, and stop at
    # what it pays for (the next top-up, or the campaign's own design, draws on from there).
    open_room = arrival_open_room(campaign) if campaign.arrivals.exists() else None
    topup = None
    if open_room is not None:
        topup, room = open_room
        wanted = min(wanted, room)
    arrays = pool_arrays_for(campaign)
    _, spent = campaign_spent(campaign)
    left = campaign.budget - spent - outstanding_cost(campaign, state)
    coverage = _Coverage(campaign, arrays)
    level = strategy.level
    next_order = (Draw.objects.filter(campaign=campaign).aggregate(top=Max("order"))["top"] or 0) + 1
    # Seeded by the campaign and the draw's order: the same q gives the same draws however the
    # top-ups are split between the worker and inline requests.
    batch = draw_batch(
        state.q,
        arrays.slot_used,
        level.unit_items,
        seed=campaign.seed,
        first_order=next_order,
        covered_row=coverage.row,
        uncovered=coverage.uncovered,
        cost=lambda topic, slots: draw_cost(campaign, state, arrays.lengths[topic, slots]),
        budget_left=left,
        items_wanted=wanted,
        copies=campaign.overlap,
        max_draws=MAX_DRAWS_PER_TOP_UP,
    )
    draws: list[Draw] = []
    for index, (unit, topic) in enumerate(zip(batch.units.tolist(), batch.topics.tolist(), strict=True)):
        item_slot = level.item_slot(unit, arrays.n_slots)
        draws.append(
            Draw(
                campaign=campaign,
                kind=level.draw_kind,
                topic_id=int(arrays.topic_ids[topic]),
                pool_item_id=None if item_slot is None else int(arrays.item_ids[topic, item_slot]),
                document_id=None if item_slot is None else int(arrays.document_ids[topic, item_slot]),
                order=next_order + index,
                propensity=float(batch.propensities[index]),
                strategy=strategy.name,
                cost=float(batch.costs[index]),
                sampling_version=state.record.version,
            )
        )
    new_slots = [
        [(topic, int(slot)) for slot in slots]
        for topic, slots in zip(batch.topics.tolist(), batch.new_slots, strict=True)
    ]
    blocked = batch.stopped
    if draws:
        Draw.objects.bulk_create(draws)
        tasks = [
            Task(
                campaign=campaign,
                arrival=topup,
                draw=draw,
                pool_item_id=int(arrays.item_ids[topic, slot]),
                slot=copy,
                order=draw.order,
                topic_id=draw.topic_id,
                document_id=int(arrays.document_ids[topic, slot]),
            )
            for draw, slots in zip(draws, new_slots, strict=True)
            for topic, slot in slots
            for copy in range(campaign.overlap)
        ]
        Task.objects.bulk_create(tasks, batch_size=2000)
        drawn_items = [int(arrays.item_ids[topic, slot]) for slots in new_slots for topic, slot in slots]
        PoolItem.objects.filter(pk__in=drawn_items).update(drawn=True)
    if campaign.blocked != blocked:
        Campaign.objects.filter(pk=campaign.pk).update(blocked=blocked)
    return len(draws)


@transaction.atomic
def tasks_trim_to_budget(*, campaign_id: int) -> int:
    """After a budget cut, drop the latest draws whose tasks nobody has leased, until the open
    tasks fit the budget again; returns the number of tasks dropped."""
    campaign = Campaign.objects.select_for_update(no_key=True).get(pk=campaign_id)
    state = sampling_state_current(campaign)
    if state is None:
        return 0
    _, spent = campaign_spent(campaign)
    outstanding = outstanding_cost(campaign, state)
    dropped = 0
    for draw in Draw.objects.filter(campaign=campaign).order_by("-order").prefetch_related("tasks"):
        if fits_budget(spent + outstanding, campaign.budget):
            break
        tasks = list(draw.tasks.all())
        if any(task.assessor_id is not None or task.answered_at is not None for task in tasks):
            break
        outstanding -= draw.cost
        dropped += len(tasks)
        PoolItem.objects.filter(pk__in=[task.pool_item_id for task in tasks if task.pool_item_id]).update(
            drawn=False
        )
        draw.delete()
    # `blocked` stays as it is: a campaign whose budget stopped its draws is still stopped when
    # what it spent fits (a verdict's trim once showed it "running" until the next top-up). A
    # raised budget clears it (`campaign_update`), and the next top-up sets it from its own draws.
    return dropped


def draws_drop_idle(campaign: Campaign, arrival_id: int | None) -> int:
    """Drop the queued draws nobody has leased or answered a task of: the arrival's (its top-up
    stopped at a verdict), or every draw of the campaign for None (its verdict stopped it);
    returns the tasks dropped. Leased tasks stay, to be answered."""
    tasks = Task.objects.filter(campaign=campaign, answered_at__isnull=True, assessor__isnull=True)
    if arrival_id is not None:
        tasks = tasks.filter(arrival_id=arrival_id)
    dropped = 0
    for draw in Draw.objects.filter(pk__in=tasks.values("draw_id")).prefetch_related("tasks"):
        held = list(draw.tasks.all())
        if any(task.assessor_id is not None or task.answered_at is not None for task in held):
            continue
        PoolItem.objects.filter(pk__in=[task.pool_item_id for task in held if task.pool_item_id]).update(
            drawn=False
        )
        dropped += len(held)
        draw.delete()
    return dropped


def draw_price(campaign: Campaign, arrays: PoolArrays) -> float:
    """What one draw costs on average over the pool, in the budget's unit (overlap included),
    under the stored cost model (never a state computed here: it may predate a change)."""
    lengths = arrays.lengths[arrays.slot_used]
    if not lengths.size:
        return float(campaign.overlap)
    return max(documents_cost(campaign, stored_cost_model(campaign), lengths) / lengths.size, 1e-12)


def budget_spent_emit(campaign: Campaign) -> None:
    """The ``campaign.budget_spent`` webhook event, once per budget: the budget stopped the draws
    and no drawn task is left open."""
    if campaign.blocked != "budget" or tasks_open_count(campaign) > 0:
        return
    count, spent = campaign_spent(campaign)
    event_emit(
        campaign,
        "campaign.budget_spent",
        f"campaign.budget_spent:{campaign.budget:g}",
        {"budget": campaign.budget, "spent": spent, "judgments": count, "unit": campaign.budget_unit},
    )
