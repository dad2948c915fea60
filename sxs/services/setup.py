"""Writes: a campaign's SxS settings, and the tasks made from its runs (with the grade tasks the
"judge" policy mixes in)."""

from __future__ import annotations

import itertools
from datetime import datetime
from typing import Any

import numpy as np
from django.db import transaction
from django.db.models import Max
from django.utils import timezone

from labeling.models import Campaign, Draw, Task, Topic
from sxs.models import SxsAnswer, SxsSettings, SxsTask
from sxs.selectors import GRADE_DRAW_STRATEGY, MODE_NAME, compared_systems, known_grades, top_k_lists

SETTING_FIELDS = ("k", "unjudged", "selection", "random_start")
MAX_K = 20
MAX_RANDOM_START = 100_000


def seed_for(campaign: Campaign, *parts: int) -> int:
    """A seed derived from the campaign's seed and ids, so random choices replay."""
    return (campaign.seed + sum(7919**i * part for i, part in enumerate(parts, start=1))) % 2**63


def _checked(settings: SxsSettings) -> None:
    if not 1 <= settings.k <= MAX_K:
        raise ValueError(f"k must be from 1 to {MAX_K}, got {settings.k}")
    if settings.unjudged not in SxsSettings.Unjudged.values:
        raise ValueError(f"unjudged must be one of {', '.join(SxsSettings.Unjudged.values)}")
    if settings.selection not in SxsSettings.Selection.values:
        raise ValueError(f"selection must be one of {', '.join(SxsSettings.Selection.values)}")
    if not 0 <= settings.random_start <= MAX_RANDOM_START:
        raise ValueError(f"random_start must be from 0 to {MAX_RANDOM_START}, got {settings.random_start}")


@transaction.atomic
def sxs_configure(*, campaign: Campaign, **fields: Any) -> SxsSettings:
    """Create or change the campaign's SxS settings; refused once an answer was given (the tasks
    would no longer show what the answers were about)."""
    if campaign.judging_mode != MODE_NAME:
        raise ValueError(f"a {campaign.judging_mode} campaign does not judge side by side")
    unknown = set(fields) - set(SETTING_FIELDS)
    if unknown:
        raise ValueError(f"unknown side-by-side setting(s): {', '.join(sorted(unknown))}")
    settings, _ = SxsSettings.objects.select_for_update().get_or_create(campaign=campaign)
    changed = {name: value for name, value in fields.items() if getattr(settings, name) != value}
    if changed and SxsAnswer.objects.filter(campaign=campaign).exists():
        raise ValueError("side-by-side settings cannot change once lists were compared")
    for name, value in changed.items():
        setattr(settings, name, value)
    _checked(settings)
    if changed and settings.prepared_at is not None:
        # Nothing compared yet: make the tasks again with the new settings on demand. Grades
        # already given stay (they are judgments like any other).
        SxsTask.objects.filter(campaign=campaign).delete()
        Draw.objects.filter(campaign=campaign, strategy=GRADE_DRAW_STRATEGY, judgments__isnull=True).delete()
        settings.prepared_at = None
    settings.save()
    return settings


@transaction.atomic
def sxs_prepare(*, campaign: Campaign, now: datetime | None = None) -> int:
    """Make the tasks once: every (topic, unordered pair of compared systems) that both systems
    rank, `overlap` slots each, with the side system A is shown on drawn per task from the
    campaign's seed. With the "judge" policy, every listed document without a grade also
    becomes one grade task (labeling's Task, served before its topic's SxS tasks). Returns how
    many SxS tasks were made (0 when already prepared)."""
    settings = SxsSettings.objects.select_for_update().filter(campaign=campaign).first()
    if settings is None:
        raise ValueError("this campaign has no side-by-side settings")
    if settings.prepared_at is not None:
        return 0
    lists = top_k_lists(campaign, settings.k)
    systems = [system for system in compared_systems(campaign) if system.pk in lists]
    topics = Topic.objects.filter(campaign=campaign).order_by("qid")
    overlap = max(1, campaign.overlap)
    made: list[SxsTask] = []
    unit = 0
    for topic in topics:
        for system_a, system_b in itertools.combinations(systems, 2):
            list_a, list_b = lists[system_a.pk].get(topic.pk), lists[system_b.pk].get(topic.pk)
            if not list_a or not list_b:
                continue  # a pair is compared on the topics both systems rank
            unit += 1
            for slot in range(overlap):
                rng = np.random.default_rng(seed_for(campaign, unit, slot))
                made.append(
                    SxsTask(
                        campaign=campaign,
                        topic=topic,
                        system_a=system_a,
                        system_b=system_b,
                        unit=unit,
                        slot=slot,
                        documents_a=list_a,
                        documents_b=list_b,
                        a_on_left=bool(rng.random() < 0.5),
                    )
                )
    SxsTask.objects.bulk_create(made, batch_size=1000)
    if settings.unjudged == SxsSettings.Unjudged.JUDGE:
        _grade_tasks_make(campaign, lists)
    settings.prepared_at = now or timezone.now()
    settings.save(update_fields=["prepared_at"])
    return len(made)


def _grade_tasks_make(campaign: Campaign, lists: dict[int, dict[int, list[int]]]) -> int:
    """One grade task per listed (topic, document) the campaign holds no grade for.

    Why labeling's Task and Judgment rather than a grade model of this app: a grade asked here
    is then a judgment like any other (the qrels export, agreement on grades, the next campaign
    on these runs), and the graded answer flow (`POST /api/tasks/{id}/answer/` with `grade`,
    its lease and double-submit rules, undo) serves it unchanged. A Task needs a Draw: each
    grade task gets one, marked by its strategy, with propensity 1 (asked for certain, not
    sampled), which keeps it apart from sampling draws.
    """
    graded = set(known_grades(campaign)) | set(
        Task.objects.filter(campaign=campaign).values_list("topic_id", "document_id")
    )
    wanted = sorted(
        {
            (topic_id, document_id)
            for by_topic in lists.values()
            for topic_id, documents in by_topic.items()
            for document_id in documents
        }
        - graded
    )
    order = (Draw.objects.filter(campaign=campaign).aggregate(last=Max("order"))["last"] or 0) + 1
    draws = [
        Draw(
            campaign=campaign,
            kind=Draw.Kind.ITEM,
            topic_id=topic_id,
            document_id=document_id,
            order=order + index,
            propensity=1.0,
            strategy=GRADE_DRAW_STRATEGY,
        )
        for index, (topic_id, document_id) in enumerate(wanted)
    ]
    Draw.objects.bulk_create(draws, batch_size=1000)
    stored = Draw.objects.filter(campaign=campaign, strategy=GRADE_DRAW_STRATEGY, order__gte=order)
    Task.objects.bulk_create(
        [
            Task(
                campaign=campaign,
                draw=draw,
                order=draw.order,
                topic_id=draw.topic_id,
                document_id=draw.document_id,  # type: ignore[misc]  # item draws always name a document
            )
            for draw in stored
        ],
        batch_size=1000,
    )
    return len(draws)
