"""Gold questions: items whose grade is known, mixed into each assessor's stream to measure them.

A coordinator marks gold items (from imported qrels, or items every assessor who judged them
graded alike) and sets the share of gold in a stream, an optional qualification (the first gold
questions, before any real item) and an accuracy threshold. An assessor sees a gold question as
an ordinary item; the answer becomes a `GoldAnswer` (never a `Judgment`, and the task's `Draw` is
of kind GOLD, which no estimator reads), so gold never enters the estimates. Below the threshold
(after `min_answers` gold answers) the assessor is paused until the coordinator resumes them.
"""

from __future__ import annotations

import math
from datetime import datetime
from typing import Any

import numpy as np
from django.contrib.auth.models import User
from django.db import transaction
from django.db.models import Count, F, Max, Min, Q
from django.utils import timezone

from graded.models import GoldAnswer, GoldItem, GoldSettings
from labeling.leases import LeaseConflict, lease_close, lease_expiry
from labeling.models import Campaign, Draw, Judgment, Task
from labeling.services.campaign_copies import clone_items_join, rows_copy, table_name

GOLD_STRATEGY = "gold"
MAX_SHARE = 0.5


class GoldPaused(Exception):
    """The assessor's accuracy on gold questions is below the campaign's threshold (HTTP 403)."""


# -- the coordinator's side ---------------------------------------------------------------------
def gold_configure(
    *, campaign: Campaign, share: float, qualification: int, min_accuracy: float, min_answers: int
) -> GoldSettings:
    """Set the campaign's gold settings; ValueError naming a bad value."""
    if not (isinstance(share, int | float) and math.isfinite(share) and 0 <= share <= MAX_SHARE):
        raise ValueError(f"share must be between 0 and {MAX_SHARE}, got {share!r}")
    if not (isinstance(min_accuracy, int | float) and 0 <= min_accuracy <= 1):
        raise ValueError(f"min_accuracy must be between 0 and 1, got {min_accuracy!r}")
    for name, value in (("qualification", qualification), ("min_answers", min_answers)):
        if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= 1000:
            raise ValueError(f"{name} must be an integer from 0 to 1000, got {value!r}")
    active = share > 0 or qualification > 0
    Campaign.objects.filter(pk=campaign.pk).update(gold_active=active)
    campaign.gold_active = active
    record, _ = GoldSettings.objects.update_or_create(
        campaign=campaign,
        defaults={
            "share": float(share),
            "qualification": qualification,
            "min_accuracy": float(min_accuracy),
            "min_answers": min_answers,
        },
    )
    return record


@transaction.atomic
def gold_mark_from_qrels(*, campaign: Campaign) -> int:
    """Every pair imported qrels judge becomes a gold item (with the qrels grade); how many new."""
    pairs = Judgment.objects.filter(campaign=campaign, source=Judgment.Source.QRELS).values_list(
        "topic_id", "document_id", "grade"
    )
    return _mark(campaign, pairs, GoldItem.Source.QRELS)


@transaction.atomic
def gold_mark_agreed(*, campaign: Campaign, min_judgments: int = 2) -> int:
    """Items at least `min_judgments` assessors judged, all with the same grade, become gold."""
    agreed = (
        Judgment.objects.filter(campaign=campaign, source=Judgment.Source.ASSESSOR)
        .values("topic_id", "document_id")
        .annotate(n=Count("id"), low=Min("grade"), high=Max("grade"))
        .filter(n__gte=min_judgments, low=F("high"))
        .values_list("topic_id", "document_id", "low")
    )
    return _mark(campaign, agreed, GoldItem.Source.AGREED)


def _mark(campaign: Campaign, pairs: Any, source: str) -> int:
    before = GoldItem.objects.filter(campaign=campaign).count()
    GoldItem.objects.bulk_create(
        [
            GoldItem(campaign=campaign, topic_id=topic, document_id=document, grade=grade, source=source)
            for topic, document, grade in pairs
        ],
        ignore_conflicts=True,
        batch_size=2000,
    )
    return GoldItem.objects.filter(campaign=campaign).count() - before


@transaction.atomic
def gold_resume(*, campaign: Campaign, assessor: User) -> int:
    """The coordinator lets a paused assessor go on: their gold answers so far stop counting
    toward the threshold (they stay in the quality table); returns how many."""
    return GoldAnswer.objects.filter(gold__campaign=campaign, assessor_id=assessor.pk, counted=True).update(
        counted=False
    )


# -- the assessor's side ------------------------------------------------------------------------
def gold_standing(campaign: Campaign, assessor_id: int) -> dict[str, Any]:
    """Counted gold answers, how many were right, the accuracy, and whether that pauses them."""
    settings = GoldSettings.objects.filter(campaign=campaign).first()
    totals = GoldAnswer.objects.filter(
        gold__campaign=campaign, assessor_id=assessor_id, counted=True
    ).aggregate(n=Count("id"), right=Count("id", filter=Q(correct=True)))
    answered, right = totals["n"] or 0, totals["right"] or 0
    accuracy = right / answered if answered else None
    paused = False
    if settings is not None and settings.min_accuracy > 0 and accuracy is not None:
        needed = (
            min(settings.min_answers, settings.qualification)
            if settings.qualification
            else settings.min_answers
        )
        paused = answered >= max(1, needed) and accuracy < settings.min_accuracy
    return {"answered": answered, "right": right, "accuracy": accuracy, "paused": paused}


def gold_task_for(campaign: Campaign, assessor: User, now: datetime) -> Task | None:
    """A gold question for this assessor now, leased to them, or None (no gold due). Raises
    GoldPaused when their accuracy is below the threshold."""
    if not campaign.gold_active:  # read with the campaign: no query on the usual path
        return None
    settings = GoldSettings.objects.filter(campaign=campaign).first()
    if settings is None:
        return None
    if gold_standing(campaign, assessor.pk)["paused"]:
        raise GoldPaused(
            "your answers to the campaign's check questions were below its accuracy threshold; "
            "the coordinator sees this on the campaign page and can let you go on"
        )
    held = Task.objects.filter(
        campaign=campaign, assessor_id=assessor.pk, answered_at__isnull=True, kind=Task.Kind.GOLD
    )
    if held.filter(lease_expires_at__gte=now).exists():
        return None  # the claim serves the assessor's own open item first
    held.delete()  # an expired gold question is dropped, not handed to someone else later
    answered = GoldAnswer.objects.filter(gold__campaign=campaign, assessor_id=assessor.pk).count()
    real = Judgment.objects.filter(
        campaign=campaign, assessor_id=assessor.pk, source=Judgment.Source.ASSESSOR
    ).count()
    due = answered < settings.qualification or answered < settings.share * (real + answered + 1)
    if not due:
        return None
    seen_gold = GoldAnswer.objects.filter(assessor_id=assessor.pk, gold__campaign=campaign).values("gold_id")
    judged = set(
        Judgment.objects.filter(campaign=campaign, assessor_id=assessor.pk).values_list(
            "topic_id", "document_id"
        )
    )
    candidates = [
        gold
        for gold in GoldItem.objects.filter(campaign=campaign).exclude(pk__in=seen_gold).order_by("pk")
        if (gold.topic_id, gold.document_id) not in judged
    ]
    if not candidates:
        return None
    rng = np.random.default_rng([campaign.seed % (2**32), assessor.pk, answered])
    gold = candidates[int(rng.integers(len(candidates)))]
    with transaction.atomic():
        order = (Draw.objects.filter(campaign=campaign).aggregate(top=Max("order"))["top"] or 0) + 1
        draw = Draw.objects.create(
            campaign=campaign,
            kind=Draw.Kind.GOLD,
            topic_id=gold.topic_id,
            document_id=gold.document_id,
            order=order,
            propensity=1.0,
            strategy=GOLD_STRATEGY,
        )
        task = Task.objects.create(
            campaign=campaign,
            draw=draw,
            order=order,
            kind=Task.Kind.GOLD,
            topic_id=gold.topic_id,
            document_id=gold.document_id,
            assessor=assessor,
            leased_at=now,
            lease_expires_at=lease_expiry(now, campaign.lease_seconds),
        )
    return Task.objects.select_related("topic", "document").get(pk=task.pk)


@transaction.atomic
def gold_answer(
    *, task: Task, assessor: User, grade: int, seconds: float | None, now: datetime
) -> tuple[GoldAnswer, bool]:
    """Store the answer to a gold question: (answer, created); a repeat returns the stored one."""
    if not lease_close(Task, task.pk, assessor, now):
        existing = GoldAnswer.objects.filter(task_id=task.pk, assessor_id=assessor.pk).first()
        if existing is None:
            raise LeaseConflict("this item's lease expired or belongs to another assessor")
        return existing, False
    gold = GoldItem.objects.get(
        campaign_id=task.campaign_id, topic_id=task.topic_id, document_id=task.document_id
    )
    answer = GoldAnswer.objects.create(
        gold=gold, task=task, assessor=assessor, grade=grade, correct=grade == gold.grade, seconds=seconds
    )
    return answer, True


def gold_quality(campaign: Campaign) -> list[dict[str, Any]]:
    """Per assessor: gold answered (all and counted), right, accuracy, mean distance from the
    gold grade, and whether they are paused."""
    rows = (
        GoldAnswer.objects.filter(gold__campaign=campaign)
        .values("assessor_id", "assessor__username")
        .annotate(n=Count("id"), right=Count("id", filter=Q(correct=True)))
        .order_by("assessor__username")
    )
    quality = []
    for row in rows:
        answers = GoldAnswer.objects.filter(gold__campaign=campaign, assessor_id=row["assessor_id"])
        distance = float(
            np.mean(
                [abs(grade - gold_grade) for grade, gold_grade in answers.values_list("grade", "gold__grade")]
            )
        )
        standing = gold_standing(campaign, row["assessor_id"])
        quality.append(
            {
                "assessor": row["assessor__username"] or "(deleted)",
                "assessor_id": row["assessor_id"],
                "answered": row["n"],
                "right": row["right"],
                "accuracy": row["right"] / row["n"],
                "mean_distance": distance,
                "counted": standing["answered"],
                "paused": standing["paused"],
            }
        )
    return quality


def gold_paused_assessors(campaign: Campaign) -> list[str]:
    """User names of the assessors the accuracy threshold pauses now (the pages' notice)."""
    if not campaign.gold_active:
        return []  # with gold off nobody is paused (gold_task_for pauses only while it is on)
    return [row["assessor"] for row in gold_quality(campaign) if row["paused"]]


def gold_clone(*, source: Campaign, clone: Campaign) -> None:
    """Copy gold settings and gold items (with their known grades) to a clone, found by qid and
    docno; the gold answers stay behind."""
    settings = GoldSettings.objects.filter(campaign=source).first()
    if settings is not None:
        gold_configure(
            campaign=clone,
            share=settings.share,
            qualification=settings.qualification,
            min_accuracy=settings.min_accuracy,
            min_answers=settings.min_answers,
        )
    gold = table_name(GoldItem)
    rows_copy(
        f"INSERT INTO {gold} (campaign_id, topic_id, document_id, grade, source, created_at) "
        f"SELECT %(clone)s, new_topic.id, new_document.id, g.grade, g.source, %(now)s FROM {gold} g "
        + clone_items_join("g")
        + "WHERE g.campaign_id = %(source)s",
        {"clone": clone.pk, "now": timezone.now(), "source": source.pk},
    )
