"""Judging a graded task: record an answer, undo the last one, skip, hold a lease while the
page is hidden. The next task is claimed by `graded.claims` (`task_next`).

A judgment is unique per task, so a double submit stores one; on PostgreSQL the lease is closed
and the judgment inserted in one statement. After each judgment commits, the campaign's
recompute is requested (`labeling.recompute`): a background thread queues it, so the request
never waits on the cache or the broker.
"""

from __future__ import annotations

import functools
import math
from datetime import datetime

import numpy as np
from django.conf import settings
from django.contrib.auth.models import User
from django.db import connection, transaction
from django.db.models import Field
from django.utils import timezone

from graded.models import GoldAnswer
from infrastructure.db import prepared_cursor
from labeling.fields import NOTE_MAX_CHARS
from labeling.leases import (
    LeaseConflict,
    UndoNotAllowed,
    lease_close,
    lease_hold,
    lease_reopen,
    lease_return,
)
from labeling.models import Campaign, Document, Judgment, Skip, Task
from labeling.recompute import recompute_soon
from labeling.services.skips import skip_checked

# Seconds above which a judgment time is rejected as a client error (a tab left open a day).
MAX_SECONDS = 24 * 3600.0


def _grade_and_seconds(campaign: Campaign, grade: int, seconds: float | None) -> tuple[int, float | None]:
    if isinstance(grade, bool) or not isinstance(grade, int) or not 0 <= grade < campaign.grade_count:
        raise ValueError(f"grade must be an integer from 0 to {campaign.grade_count - 1}, got {grade!r}")
    if seconds is not None:
        seconds = float(seconds)
        if not math.isfinite(seconds) or not 0 <= seconds <= MAX_SECONDS:
            raise ValueError(f"seconds must be between 0 and {MAX_SECONDS:.0f}, got {seconds!r}")
    return grade, seconds


def task_answer(
    *,
    task: Task,
    assessor: User,
    grade: int,
    seconds: float | None,
    now: datetime | None = None,
    note: str = "",
) -> tuple[Judgment, bool]:
    """Record the assessor's grade for a leased task: (judgment, created). A repeat returns the
    stored judgment with created=False; an expired or foreign lease raises LeaseConflict."""
    if task.kind == Task.Kind.GOLD:
        # A gold answer measures the assessor and must never become a judgment the estimates read.
        raise ValueError("a gold question is answered through services.gold.gold_answer")
    now = now or timezone.now()
    campaign = task.campaign
    grade, seconds = _grade_and_seconds(campaign, grade, seconds)
    note = (note or "").strip()
    if len(note) > NOTE_MAX_CHARS:
        raise ValueError(f"the note is longer than {NOTE_MAX_CHARS} characters")
    judgment = Judgment(
        note=note,
        task=task,
        campaign=campaign,
        topic_id=task.topic_id,
        document_id=task.document_id,
        assessor=assessor,
        grade=grade,
        seconds=seconds,
        cost=_judgment_cost(task),
        draw_id=task.draw_id,
        source=Judgment.Source.ASSESSOR,
    )
    # Closing the lease first is what stops a double submit: the second close waits for the
    # first transaction and then matches no row.
    if connection.vendor == "postgresql":
        stored = _judgment_store_if_leased(judgment, now)
    else:
        with transaction.atomic():
            stored = lease_close(Task, task.pk, assessor, now)
            if stored:
                _judgment_insert(judgment)
    if not stored:
        existing = Judgment.objects.filter(task_id=task.pk).first()
        if existing is None:
            raise LeaseConflict("this task's lease expired or belongs to another assessor")
        if existing.assessor_id != assessor.pk:
            raise LeaseConflict("this task was answered by another assessor")
        return existing, False
    campaign_id = campaign.pk
    transaction.on_commit(lambda: recompute_soon(campaign_id))
    return judgment, True


# The judgment's columns the answer statement writes.
_JUDGMENT_COLUMNS: tuple[str, ...] = ("campaign_id", "topic_id", "document_id", "assessor_id", "grade")
_JUDGMENT_COLUMNS += ("seconds", "cost", "source", "task_id", "draw_id", "note", "created_at")


@functools.cache
def _judgment_store_sql() -> str:
    quote, columns = connection.ops.quote_name, _JUDGMENT_COLUMNS
    return f"""
        WITH closed AS (
            UPDATE {quote(Task._meta.db_table)}
            SET answered_at = %(now)s
            WHERE id = %(task)s AND assessor_id = %(assessor)s AND answered_at IS NULL
                AND lease_expires_at >= %(now)s
            RETURNING id
        )
        INSERT INTO {quote(Judgment._meta.db_table)} ({", ".join(quote(column) for column in columns)})
        SELECT {", ".join(f"%({column})s::{_cast_type(column)}" for column in columns)} FROM closed
        RETURNING id
    """


def _judgment_store_if_leased(judgment: Judgment, now: datetime) -> bool:
    """PostgreSQL: close the lease and insert the judgment in one statement (one round trip,
    atomic by itself, synchronous commit); False when the lease was not the assessor's to close."""
    judgment.created_at = timezone.now()
    values = {column: getattr(judgment, column) for column in _JUDGMENT_COLUMNS}
    with prepared_cursor() as cursor:
        cursor.execute(
            _judgment_store_sql(),
            {**values, "now": now, "task": judgment.task_id, "assessor": judgment.assessor_id},
        )
        row = cursor.fetchone()
    if row is None:
        return False
    judgment.pk = row[0]
    judgment._state.adding, judgment._state.db = False, connection.alias
    return True


@functools.cache
def _judgment_insert_sql() -> str:
    quote = connection.ops.quote_name
    columns = ", ".join(quote(column) for column in _JUDGMENT_COLUMNS)
    marks = ", ".join(["%s"] * len(_JUDGMENT_COLUMNS))
    return f"INSERT INTO {quote(Judgment._meta.db_table)} ({columns}) VALUES ({marks}) RETURNING id"


@functools.cache
def _judgment_fields() -> tuple[Field, ...]:
    by_attname = {field.attname: field for field in Judgment._meta.concrete_fields}
    return tuple(by_attname[column] for column in _JUDGMENT_COLUMNS)


def _judgment_insert(judgment: Judgment) -> None:
    """Other databases: the judgment's INSERT, written once (the ORM compiled it again for every
    answer: 464 against 302 us per stored judgment, commit included), each value prepared by its
    field as a save prepares it."""
    judgment.created_at = timezone.now()
    values = [
        field.get_db_prep_save(getattr(judgment, field.attname), connection) for field in _judgment_fields()
    ]
    with connection.cursor() as cursor:
        cursor.execute(_judgment_insert_sql(), values)
        (judgment.pk,) = cursor.fetchone()
    judgment._state.adding, judgment._state.db = False, connection.alias


def _cast_type(attname: str) -> str:
    """The SQL type of a Judgment column, for parameters whose type PostgreSQL cannot infer."""
    field = next(field for field in Judgment._meta.concrete_fields if field.attname == attname)
    return str(field.cast_db_type(connection))


def _judgment_cost(task: Task) -> float:
    """The judged document's cost under the campaign's current cost model (cost units)."""
    from sampling import SamplingState, item_cost_units

    if hasattr(task, "sampling_cost_model"):  # read with the task (see task_get_for_assessor)
        cost_model, length = task.sampling_cost_model, getattr(task, "document_length", None)
    else:
        cost_model = (
            SamplingState.objects.filter(campaign_id=task.campaign_id)
            .values_list("cost_model", flat=True)
            .first()
        )
        length = Document.objects.filter(pk=task.document_id).values_list("length", flat=True).first()
    if not cost_model:
        return 1.0
    lengths = np.array([float("nan") if length is None else float(length)])
    return float(item_cost_units(cost_model, lengths)[0])


@transaction.atomic
def judgment_undo(*, campaign: Campaign, assessor: User, now: datetime | None = None) -> Task:
    """Take back the assessor's last judgment within the undo window; its task is leased to them again."""
    now = now or timezone.now()
    judgment = (
        Judgment.objects.select_for_update()
        .filter(
            campaign=campaign, assessor_id=assessor.pk, source=Judgment.Source.ASSESSOR, task__isnull=False
        )
        .order_by("-created_at", "-id")
        .first()
    )
    if judgment is None:
        raise UndoNotAllowed("there is no judgment of yours to undo")
    latest_gold = (
        GoldAnswer.objects.filter(gold__campaign=campaign, assessor_id=assessor.pk)
        .order_by("-created_at")
        .values_list("created_at", flat=True)
        .first()
    )
    if latest_gold is not None and latest_gold > judgment.created_at:
        raise UndoNotAllowed("your last answer cannot be undone")
    if (now - judgment.created_at).total_seconds() > settings.LABELING_UNDO_SECONDS:
        raise UndoNotAllowed(f"judgments can only be undone within {settings.LABELING_UNDO_SECONDS} seconds")
    task_id = judgment.task_id
    if task_id is None:  # imported qrels are no one's answer
        raise UndoNotAllowed("this judgment was imported, not answered: it cannot be undone")
    judgment.delete()
    lease_reopen(Task, task_id, assessor, now, campaign.lease_seconds)
    return Task.objects.select_related("topic", "document", "draw").get(pk=task_id)


def task_lease_hold(*, task_id: int, assessor: User, state: str, stamp: datetime | None = None) -> bool:
    """The holder's judging page is active, idle (hidden) or left (closed): see
    `labeling.leases.lease_hold`. False when the assessor does not hold the task (that lease)."""
    task = Task.objects.filter(pk=task_id).select_related("campaign").first()
    if task is None:
        return False
    return lease_hold(Task, task.pk, assessor, state, task.campaign.lease_seconds, timezone.now(), stamp)


@transaction.atomic
def task_skip(
    *, task: Task, assessor: User, reason: str, note: str = "", now: datetime | None = None
) -> Skip:
    """The assessor gives back the graded task they hold; LeaseConflict if they do not hold it
    (answered, expired and taken by someone else, or never theirs)."""
    reason, note = skip_checked(reason, note)
    now = now or timezone.now()
    held = Task.objects.select_for_update().filter(
        pk=task.pk, assessor_id=assessor.pk, answered_at__isnull=True
    )
    if not held.exists():
        raise LeaseConflict("you do not hold this item (answered, or its lease went to someone else)")
    lease_return(Task, task.pk)
    return Skip.objects.create(
        campaign_id=task.campaign_id,
        assessor=assessor,
        kind="grade",
        unit=task.pk,
        topic_id=task.topic_id,
        document_id=task.document_id,
        reason=reason,
        note=note,
    )
