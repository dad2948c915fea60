"""Writes: lease the next item to an assessor, record an answer, skip, undo.

An assessor holds at most one SxS task at a time. While it has documents without a grade (the
"judge" policy), its topic's grade tasks for those documents are served first, one by one
(labeling's Task, answered through the graded flow); once none is left to claim the SxS task
itself is served. Tasks are leased with `labeling.leases`, so two assessors never hold one
task and a double submit stores one answer.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import datetime

import numpy as np
from django.conf import settings as django_settings
from django.contrib.auth.models import User
from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from graded.judging import judgment_undo
from graded.selectors import task_active_for_assessor
from labeling.leases import (
    LeaseConflict,
    UndoNotAllowed,
    lease_claim,
    lease_close,
    lease_hold,
    lease_renew,
    lease_reopen,
    lease_return,
    unanswered_claimable,
)
from labeling.models import Campaign, Judgment, Skip, Task
from labeling.recompute import recompute_soon
from labeling.services.skips import skip_checked, skipped_by
from sxs.models import SxsAnswer, SxsSettings, SxsTask
from sxs.selectors import GRADE_DRAW_STRATEGY, ITEM_KIND, sxs_settings_get
from sxs.services.selection import Candidate, choose
from sxs.services.setup import seed_for, sxs_prepare

MAX_SECONDS = 24 * 3600.0
MAX_COMMENT = 2000
PREFERENCES = (-2, -1, 0, 1, 2)
# Claims retried when a concurrent assessor won the chosen task first.
CLAIM_ATTEMPTS = 5


@dataclass(frozen=True)
class Item:
    """What /next/ serves: an SxS task (`kind` "sxs") or a grade task mixed in (`kind` "grade")."""

    kind: str
    sxs: SxsTask | None = None
    grade: Task | None = None


def _held_by(assessor: User) -> Q:
    return Q(assessor_id=assessor.pk, answered_at__isnull=True)


def _held_sxs_task(campaign: Campaign, assessor: User, now: datetime) -> SxsTask | None:
    current = SxsTask.objects.filter(
        campaign=campaign, assessor_id=assessor.pk, answered_at__isnull=True
    ).first()
    if current is not None and lease_renew(
        SxsTask, current.pk, now, campaign.lease_seconds, _held_by(assessor)
    ):
        return current
    return None


def _held_grade_task(campaign: Campaign, assessor: User, now: datetime) -> Task | None:
    current = task_active_for_assessor(campaign, assessor)
    if current is not None and lease_renew(Task, current.pk, now, campaign.lease_seconds, _held_by(assessor)):
        return current
    return None


def _grade_task_for(task: SxsTask, assessor: User, now: datetime) -> Task | None:
    """Claim an open grade task for a document of this task's lists, if one is left (never one
    the assessor skipped: the comparison then comes without that grade, which someone else gives)."""
    documents = {*task.documents_a, *task.documents_b}
    claimable = unanswered_claimable(now)
    candidates = (
        Task.objects.filter(
            campaign_id=task.campaign_id,
            topic_id=task.topic_id,
            document_id__in=documents,
            draw__strategy=GRADE_DRAW_STRATEGY,
        )
        .filter(claimable)
        .exclude(skipped_by(task.campaign_id, assessor))
        .order_by("order", "id")
        .values_list("pk", flat=True)[:20]
    )
    seconds = task.campaign.lease_seconds
    for task_id in list(candidates):
        if lease_claim(Task, task_id, assessor, now, seconds, claimable):
            return Task.objects.select_related("topic", "document", "draw").get(pk=task_id)
    return None


def _candidates(campaign: Campaign, assessor: User, now: datetime) -> list[Candidate]:
    """Open units the assessor may be given (never one they hold, answered or skipped), each as
    its lowest claimable slot."""
    skipped = Skip.objects.filter(campaign=campaign, kind=ITEM_KIND, assessor_id=assessor.pk).values("unit")
    mine = SxsTask.objects.filter(campaign=campaign).filter(Q(assessor_id=assessor.pk) | Q(pk__in=skipped))
    rows = (
        SxsTask.objects.filter(campaign=campaign)
        .filter(unanswered_claimable(now))
        .exclude(unit__in=mine.values("unit"))
        .order_by("unit", "slot")
        .values_list("pk", "unit", "topic_id", "documents_a", "documents_b")
    )
    seen: set[int] = set()
    candidates = []
    for task_id, unit, topic_id, documents_a, documents_b in rows:
        if unit not in seen:
            seen.add(unit)
            candidates.append(Candidate(task_id, topic_id, documents_a, documents_b))
    return candidates


def _claim_new(campaign: Campaign, settings: SxsSettings, assessor: User, now: datetime) -> SxsTask | None:
    for attempt in range(CLAIM_ATTEMPTS):
        candidates = _candidates(campaign, assessor, now)
        if not candidates:
            return None
        done = SxsAnswer.objects.filter(campaign=campaign).count()
        rng = np.random.default_rng(
            seed_for(campaign, assessor.pk, done, attempt, int(now.timestamp() * 1e6))
        )
        choice = choose(campaign, settings, candidates, rng)
        if lease_claim(
            SxsTask,
            choice.task_id,
            assessor,
            now,
            campaign.lease_seconds,
            unanswered_claimable(now),
            selection_rule=choice.rule,
            propensity=choice.propensity,
            margin=choice.margin,
        ):
            return SxsTask.objects.get(pk=choice.task_id)
    return None


def sxs_next(*, campaign: Campaign, assessor: User, now: datetime | None = None) -> Item | None:
    """Lease the assessor's next item: their held grade task, else a grade task their SxS task
    still needs, else that SxS task (a new one chosen by the campaign's rule when they hold
    none); None when nothing is left for them."""
    now = now or timezone.now()
    settings = sxs_settings_get(campaign)
    if settings is None:
        raise ValueError("this campaign does not judge side by side")
    grade_task = _held_grade_task(campaign, assessor, now)
    if grade_task is not None:
        return Item("grade", grade=grade_task)
    task = _held_sxs_task(campaign, assessor, now)
    if task is None:
        if campaign.status != Campaign.Status.RUNNING:
            return None
        sxs_prepare(campaign=campaign, now=now)
        task = _claim_new(campaign, settings, assessor, now)
        if task is None:
            return None
    grade_task = _grade_task_for(task, assessor, now)
    if grade_task is not None:
        return Item("grade", grade=grade_task)
    return Item("sxs", sxs=SxsTask.objects.select_related("campaign", "topic").get(pk=task.pk))


def _checked(preference: int, seconds: float | None, comment: str) -> float | None:
    if isinstance(preference, bool) or preference not in PREFERENCES:
        raise ValueError(f"preference must be one of -2, -1, 0, 1, 2, got {preference!r}")
    if seconds is not None:
        seconds = float(seconds)
        if not math.isfinite(seconds) or not 0 <= seconds <= MAX_SECONDS:
            raise ValueError(f"seconds must be between 0 and {MAX_SECONDS:.0f}, got {seconds!r}")
    if len(comment) > MAX_COMMENT:
        raise ValueError(f"a comment holds at most {MAX_COMMENT} characters")
    return seconds


def sxs_answer(
    *,
    task: SxsTask,
    assessor: User,
    preference: int,
    seconds: float | None,
    comment: str = "",
    now: datetime | None = None,
) -> tuple[SxsAnswer, bool]:
    """Record the assessor's answer as displayed (-2 left much better .. 2 right much better):
    (answer, created). A repeat returns the stored answer with created=False; an expired or
    foreign lease raises LeaseConflict; bad input ValueError."""
    now = now or timezone.now()
    seconds = _checked(preference, seconds, comment)
    with transaction.atomic():
        # Closing the lease first is what stops a double submit: the second close matches no row.
        if lease_close(SxsTask, task.pk, assessor, now):
            task = SxsTask.objects.get(pk=task.pk)
            answer = SxsAnswer.objects.create(
                campaign_id=task.campaign_id,
                task=task,
                topic_id=task.topic_id,
                system_a_id=task.system_a_id,
                system_b_id=task.system_b_id,
                a_on_left=task.a_on_left,
                assessor=assessor,
                shown=preference,
                # As displayed, negative = left better; about the systems, negative = A better.
                preference=preference if task.a_on_left else -preference,
                seconds=seconds,
                comment=comment.strip(),
                selection_rule=task.selection_rule,
                propensity=task.propensity,
                margin=task.margin,
            )
            campaign_id = task.campaign_id
            # As for a graded judgment: the worker refits (learned DCG) once the answer commits.
            transaction.on_commit(lambda: recompute_soon(campaign_id))
            return answer, True
    existing = SxsAnswer.objects.filter(task_id=task.pk).first()
    if existing is None:
        raise LeaseConflict("this task's lease expired or belongs to another assessor")
    if existing.assessor_id != assessor.pk:
        raise LeaseConflict("this task was answered by another assessor")
    return existing, False


@transaction.atomic
def sxs_skip(
    *, task: SxsTask, assessor: User, reason: str, note: str = "", now: datetime | None = None
) -> Skip:
    """Pass a held task on with a reason (one of `labeling.models.Skip.Reason`) and a note: it goes
    back to the pool for someone else (never to this assessor again). Recorded as the core's
    `Skip` of kind "sxs" (the skip counts, the skips export)."""
    reason, note = skip_checked(reason, note)
    now = now or timezone.now()
    locked = SxsTask.objects.select_for_update().get(pk=task.pk)
    held = locked.assessor_id == assessor.pk and locked.answered_at is None
    if not held or locked.lease_expires_at is None or locked.lease_expires_at < now:
        raise LeaseConflict("you do not hold this task (answered, expired or someone else's)")
    lease_return(SxsTask, locked.pk, selection_rule="", propensity=None, margin=None)
    return Skip.objects.create(
        campaign_id=locked.campaign_id,
        assessor=assessor,
        kind=ITEM_KIND,
        unit=locked.pk,
        topic_id=locked.topic_id,
        reason=reason,
        note=note,
    )


def sxs_lease_hold(*, task: SxsTask, assessor: User, state: str, stamp: datetime | None = None) -> bool:
    """The holder's page is active, idle or left (`labeling.leases.lease_hold`); a left task goes
    back to the pool as a skipped one does, with its selection cleared."""
    return lease_hold(
        SxsTask,
        task.pk,
        assessor,
        state,
        task.campaign.lease_seconds,
        timezone.now(),
        stamp,
        selection_rule="",
        propensity=None,
        margin=None,
    )


@transaction.atomic
def sxs_undo(*, campaign: Campaign, assessor: User, now: datetime | None = None) -> Item:
    """Take back the assessor's last answer (SxS or grade) within the undo window; its item is
    leased to them again."""
    now = now or timezone.now()
    answer = (
        SxsAnswer.objects.select_for_update()
        .filter(campaign=campaign, assessor_id=assessor.pk, task__isnull=False)
        .order_by("-created_at", "-id")
        .first()
    )
    grade = (
        Judgment.objects.filter(
            campaign=campaign, assessor_id=assessor.pk, source=Judgment.Source.ASSESSOR, task__isnull=False
        )
        .order_by("-created_at", "-id")
        .values_list("created_at", flat=True)
        .first()
    )
    campaign_id = campaign.pk
    if grade is not None and (answer is None or grade > answer.created_at):
        # A grade taken back changes the lists the answers are learned from: refit too.
        undone = judgment_undo(campaign=campaign, assessor=assessor, now=now)
        transaction.on_commit(lambda: recompute_soon(campaign_id))
        return Item("grade", grade=undone)
    if answer is None:
        raise UndoNotAllowed("there is no answer of yours to undo")
    window = django_settings.LABELING_UNDO_SECONDS
    if (now - answer.created_at).total_seconds() > window:
        raise UndoNotAllowed(f"answers can only be undone within {window} seconds")
    task_id = answer.task_id
    if task_id is None:  # an answer whose task a coordinator deleted
        raise UndoNotAllowed("this answer's comparison is gone: it cannot be undone")
    answer.delete()
    # The assessor holds one SxS task at a time: the one they were given after this answer
    # goes back to the pool (its grades stay).
    held = SxsTask.objects.filter(campaign=campaign, assessor_id=assessor.pk, answered_at__isnull=True)
    for other in held.exclude(pk=task_id).values_list("pk", flat=True):
        lease_return(SxsTask, other, selection_rule="", propensity=None, margin=None)
    lease_reopen(SxsTask, task_id, assessor, now, campaign.lease_seconds)
    transaction.on_commit(lambda: recompute_soon(campaign_id))
    return Item("sxs", sxs=SxsTask.objects.select_related("campaign", "topic").get(pk=task_id))


__all__ = [
    "MAX_SECONDS",
    "PREFERENCES",
    "Item",
    "LeaseConflict",
    "UndoNotAllowed",
    "sxs_answer",
    "sxs_next",
    "sxs_skip",
    "sxs_undo",
]
