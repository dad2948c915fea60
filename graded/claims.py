"""Claiming the next graded task for an assessor: the lease engine behind `task_next`.

A lease is claimed atomically: on PostgreSQL with SELECT ... FOR UPDATE SKIP LOCKED (one
prepared statement that also reads the task's topic and document), on SQLite with one
UPDATE ... WHERE id = (SELECT ... LIMIT 1) RETURNING (a write statement holds SQLite's single
write lock from its start), elsewhere with a conditional UPDATE that only one claimant can win
(``filter(...).update(...) == 1``). Expired leases are claimable again; an assessor's own open
task comes back first; gold questions are mixed in (`graded.gold`); the draw queue is topped
up when it runs low. The answers, undo and skips are `graded.judging`'s.
"""

from __future__ import annotations

import functools
import threading
from datetime import datetime
from typing import Any

from django.contrib.auth.models import User
from django.db import connection, models, transaction
from django.db.models import Exists, OuterRef, Q, QuerySet
from django.utils import timezone

from graded.gold import gold_task_for
from graded.selectors import task_active_for_assessor
from infrastructure.compiled_queries import CompiledQuery
from infrastructure.db import prepared_cursor
from labeling.leases import lease_claim, lease_expiry, lease_renew, unanswered_claimable
from labeling.models import Campaign, Document, Skip, Task, Topic
from labeling.services.skips import skipped_by
from sampling import draws_top_up, queue_target


def _not_held(campaign: Campaign, assessor: User) -> Q:
    """With overlap > 1, items this assessor already holds (or judged) go to others."""
    if campaign.overlap <= 1:
        return Q()
    held = Task.objects.filter(
        campaign_id=campaign.pk,
        assessor_id=assessor.pk,
        topic_id=OuterRef("topic_id"),
        document_id=OuterRef("document_id"),
    )
    return ~Q(Exists(held))


def _candidates(campaign: Campaign, assessor: User, now: datetime) -> QuerySet[Task]:
    candidates = Task.objects.filter(campaign_id=campaign.pk).filter(unanswered_claimable(now))
    candidates = candidates.filter(_not_held(campaign, assessor)).exclude(skipped_by(campaign.pk, assessor))
    return candidates.order_by("order", "slot", "id")


def _not_skipped_sql() -> str:
    """The claim statements' test that the assessor did not skip the item (labeling.services.skips)."""
    return f"""AND NOT EXISTS (SELECT 1 FROM {connection.ops.quote_name(Skip._meta.db_table)} AS s
        WHERE s.campaign_id = %(campaign)s AND s.assessor_id = %(me)s AND s.topic_id = c.topic_id
        AND s.document_id = c.document_id)"""


@functools.cache
def _field_names(model: type[models.Model]) -> list[str]:
    return [str(field.attname) for field in model._meta.concrete_fields]


def _columns(model: type[models.Model], alias: str) -> str:
    quote = connection.ops.quote_name
    return ", ".join(f"{alias}.{quote(str(field.column))}" for field in model._meta.concrete_fields)


def _claim_condition(running: bool, overlap: bool) -> str:
    """Which task rows `c` a claim may take: the assessor's own unanswered one, and while the
    campaign runs any unanswered one nobody holds (or whose lease ran out) that the assessor
    neither holds another copy of (overlap asks for different assessors per item) nor skipped."""
    if not running:
        return "c.answered_at IS NULL AND c.assessor_id = %(me)s"
    not_held = ""
    if overlap:
        task_table = connection.ops.quote_name(Task._meta.db_table)
        not_held = f"""AND NOT EXISTS (SELECT 1 FROM {task_table} AS h WHERE h.campaign_id = %(campaign)s
            AND h.assessor_id = %(me)s AND h.topic_id = c.topic_id AND h.document_id = c.document_id)"""
    return f"""c.answered_at IS NULL AND (c.assessor_id = %(me)s
        OR ((c.assessor_id IS NULL OR c.lease_expires_at < %(now)s) {not_held} {_not_skipped_sql()}))"""


def _unleased_count(task_table: str) -> str:
    """The claim statements' count of the campaign's tasks nobody has leased, up to
    %(low_water)s: the queue's low-water check, in the claim's own statement."""
    return f"""(SELECT count(*) FROM (
        SELECT 1 FROM {task_table} AS o
        WHERE o.campaign_id = %(campaign)s AND o.answered_at IS NULL AND o.assessor_id IS NULL
        LIMIT %(low_water)s) AS unleased_rows)"""


@functools.cache
def _claim_sql(running: bool, overlap: bool, standalone: bool) -> str:
    """The claim statement of `_task_claim_locking` (built once per shape)."""
    quote = connection.ops.quote_name
    task_table, topic_table = quote(Task._meta.db_table), quote(Topic._meta.db_table)
    document_table = quote(Document._meta.db_table)
    task_columns, topic_columns = _columns(Task, "claimed"), _columns(Topic, "topic")
    document_columns = _columns(Document, "document")
    condition = _claim_condition(running, overlap)
    # Standalone, set_config(..., true) makes only this statement's commit asynchronous: losing
    # a lease in a crash just returns the item to the pool. Inside a caller's transaction the
    # setting would also relax the caller's writes (a judgment), so it is left alone there.
    relaxed_cte = (
        "relaxed AS (SELECT set_config('synchronous_commit', 'off', true) AS value)," if standalone else ""
    )
    relaxed_join = "CROSS JOIN relaxed" if standalone else ""
    sql = f"""
        WITH {relaxed_cte} claimed AS (
            UPDATE {task_table} AS t
            SET assessor_id = %(me)s, leased_at = %(now)s, lease_expires_at = %(expires)s
            WHERE t.id = (
                SELECT c.id FROM {task_table} AS c
                WHERE c.campaign_id = %(campaign)s AND {condition}
                ORDER BY (c.assessor_id IS NOT DISTINCT FROM %(me)s) DESC, c.{quote("order")}, c.slot, c.id
                LIMIT 1
                FOR UPDATE SKIP LOCKED
            )
            RETURNING t.*
        )
        SELECT {task_columns}, {topic_columns}, {document_columns},
            {_unleased_count(task_table)} AS unleased
        FROM claimed {relaxed_join}
        JOIN {topic_table} AS topic ON topic.id = claimed.topic_id
        JOIN {document_table} AS document ON document.id = claimed.document_id
    """
    return sql


def _task_claim_locking(campaign: Campaign, assessor: User, now: datetime, running: bool) -> Task | None:
    """PostgreSQL: one statement picks the assessor's own unanswered task first (renewing it),
    else the first claimable one (SELECT ... FOR UPDATE SKIP LOCKED), leases it and returns it
    with its topic and document. Hand-written because this runs for every item served and the
    ORM's query compilation cost more than the query itself."""
    # Outside a transaction the statement is its own transaction (one round trip), and its
    # commit may be asynchronous (see _claim_sql); inside a caller's transaction it may not.
    sql = _claim_sql(running, campaign.overlap > 1, standalone=not connection.in_atomic_block)
    task_names, topic_names, document_names = (_field_names(model) for model in (Task, Topic, Document))
    expires = lease_expiry(now, campaign.lease_seconds)
    low_water = queue_target(campaign.pk, now)
    parameters: dict[str, Any] = {
        "me": assessor.pk,
        "now": now,
        "expires": expires,
        "campaign": campaign.pk,
        "low_water": low_water,
    }
    with prepared_cursor() as cursor:
        cursor.execute(sql, parameters)
        row = cursor.fetchone()
    if row is None:
        return None
    split, end = len(task_names), len(task_names) + len(topic_names)
    task = Task.from_db(connection.alias, task_names, row[:split])
    task.topic = Topic.from_db(connection.alias, topic_names, row[split:end])
    task.document = Document.from_db(connection.alias, document_names, row[end:-1])
    if running and not campaign.blocked and row[-1] < low_water:
        _queue_top_up_unless_busy(campaign)
    return task


# Campaigns a thread of this process is topping up right now (SQLite, which cannot skip a
# locked row: the process-local check keeps the threads of one process from queueing up on the
# write lock only to find the queue full).
_topping_up: set[int] = set()
_topping_up_lock = threading.Lock()


def _queue_top_up_unless_busy(campaign: Campaign) -> None:
    """Draw more before the queue runs dry, unless another request is drawing right now: then
    its draws are on their way and waiting for them would only stall this request. Never a
    refit here (a new run was pooled): this request has its task, and the worker's recompute,
    queued with the run, refits the label model and draws."""
    if not connection.features.has_select_for_update_skip_locked:
        with _topping_up_lock:
            if campaign.pk in _topping_up:
                return
            _topping_up.add(campaign.pk)
        try:
            draws_top_up(campaign_id=campaign.pk, refit=False)
        finally:
            with _topping_up_lock:
                _topping_up.discard(campaign.pk)
        return
    with transaction.atomic():
        idle = (
            Campaign.objects.select_for_update(no_key=True, skip_locked=True)
            .filter(pk=campaign.pk)
            .values_list("pk", flat=True)
            .first()
        )
        if idle is not None:
            draws_top_up(campaign_id=campaign.pk, refit=False)


@functools.cache
def _claim_sql_sqlite(running: bool, overlap: bool) -> str:
    """The claim statement of `_task_claim_single` (built once per shape)."""
    quote = connection.ops.quote_name
    task_table = quote(Task._meta.db_table)
    condition = _claim_condition(running, overlap)
    return f"""
        UPDATE {task_table}
        SET assessor_id = %(me)s, leased_at = %(now)s, lease_expires_at = %(expires)s
        WHERE id = (
            SELECT c.id FROM {task_table} AS c
            WHERE c.campaign_id = %(campaign)s AND {condition}
            ORDER BY (c.assessor_id IS %(me)s) DESC, c.{quote("order")}, c.slot, c.id
            LIMIT 1
        )
        RETURNING id, {_unleased_count(task_table)}
    """


# The task a claim returns, with what the item shows: every `next` reads it (compiled once).
_CLAIMED_TASK: CompiledQuery[Task] = CompiledQuery(
    lambda task_id: Task.objects.select_related("topic", "document").filter(pk=task_id)[:1], (int,)
)


def _task_claim_single(campaign: Campaign, assessor: User, now: datetime, running: bool) -> Task | None:
    """SQLite: one UPDATE ... WHERE id = (SELECT ... LIMIT 1) RETURNING picks the assessor's own
    unanswered task first (renewing it), else the first claimable one, and leases it.

    A single write statement is its own short transaction: SQLite takes the write lock when
    the statement starts (waiting on the busy timeout while another writer holds it), so two
    claimants never pick the same task and a claim never fails for a lost race, which the
    select-then-update loop did under many concurrent assessors (it gave up, and `next`
    answered 204 while work remained). The statement also counts the unleased tasks left (up to
    the queue's target), as the PostgreSQL claim does: the low-water check costs no statement of
    its own."""
    ops = connection.ops
    topping_up = running and not campaign.blocked
    low_water = queue_target(campaign.pk, now) if topping_up else 0
    parameters = {
        "me": assessor.pk,
        "now": ops.adapt_datetimefield_value(now),
        "expires": ops.adapt_datetimefield_value(lease_expiry(now, campaign.lease_seconds)),
        "campaign": campaign.pk,
        "low_water": low_water,
    }
    with connection.cursor() as cursor:
        cursor.execute(_claim_sql_sqlite(running, campaign.overlap > 1), parameters)
        row = cursor.fetchone()
    if row is None:
        return None
    task = _CLAIMED_TASK.first(row[0])
    assert task is not None, "the claim's own statement returned it"
    if topping_up and row[1] < low_water:
        _queue_top_up_unless_busy(campaign)
    return task


def _task_claim_conditional(campaign: Campaign, assessor: User, now: datetime, running: bool) -> Task | None:
    """Other databases: renew the assessor's own task, else win a conditional UPDATE."""
    current = task_active_for_assessor(campaign, assessor)
    seconds = campaign.lease_seconds
    if current is not None:
        held = Q(assessor_id=assessor.pk, answered_at__isnull=True)
        if lease_renew(Task, current.pk, now, seconds, held):
            current.leased_at, current.lease_expires_at = now, lease_expiry(now, seconds)
            return current
    if not running:
        return None
    for candidate_id in _candidates(campaign, assessor, now).values_list("pk", flat=True)[:20]:
        if lease_claim(Task, candidate_id, assessor, now, seconds, unanswered_claimable(now)):
            return Task.objects.select_related("topic", "document").get(pk=candidate_id)
    return None


def _task_claim(campaign: Campaign, assessor: User, now: datetime) -> Task | None:
    """Lease the assessor's own unanswered task, else the first claimable task; None if none."""
    running = campaign.status == Campaign.Status.RUNNING
    if connection.features.has_select_for_update_skip_locked:
        return _task_claim_locking(campaign, assessor, now, running)
    if connection.vendor == "sqlite":
        return _task_claim_single(campaign, assessor, now, running)
    return _task_claim_conditional(campaign, assessor, now, running)


# Claims retried when other claimants took every claimable task first (each retry draws more).
CLAIM_ATTEMPTS = 10


def task_next(*, campaign: Campaign, assessor: User, now: datetime | None = None) -> Task | None:
    """Lease the assessor's next task (their current one first); None when nothing is left."""
    now = now or timezone.now()
    if campaign.status == Campaign.Status.RUNNING:
        gold = gold_task_for(campaign, assessor, now)  # GoldPaused when the assessor is paused
        if gold is not None:
            return gold
    for _ in range(CLAIM_ATTEMPTS):
        task = _task_claim(campaign, assessor, now)
        if task is not None:
            return task
        if campaign.status != Campaign.Status.RUNNING:
            return None
        # The queue is empty (or all of it leased): draw more here, so judging goes on without a
        # worker. At least one new item, even when a concurrent top-up has just filled the queue
        # to its target: other claimants may take those first, and this request must not end
        # in "nothing left" while work and budget remain.
        if draws_top_up(campaign_id=campaign.pk, at_least=1) > 0:
            continue
        # No draws: either nothing is left, or the open tasks were locked by concurrent claims
        # (SKIP LOCKED passed them over). Only the first case means "nothing for you".
        if not _candidates(campaign, assessor, now).exists():
            return None
    return None
