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
from labeling.recompute import recompute_soon
from sxs.models import MAX_FOLDS, MAX_MUCH_BETTER_MARGIN, MIN_FOLDS, SxsAnswer, SxsSettings, SxsTask
from sxs.selectors import GRADE_DRAW_STRATEGY, MODE_NAME, compared_systems, known_grades, top_k_lists
from sxs.services.learning import refit_work_problem
from sxs.validators import grid_text, grid_values

# What the tasks are made from: fixed once an answer exists (the answers are about those lists).
TASK_FIELDS = ("k", "unjudged", "selection", "random_start")
# How learned DCG is fitted: may change at any time; a change refits at the next recompute.
FIT_FIELDS = (
    "fit_method",
    "c_grid",
    "c_tie",
    "c_tie_grid",
    "folds",
    "ties",
    "monotone_discounts",
    "much_better_margin",
)
SETTING_FIELDS = (*TASK_FIELDS, *FIT_FIELDS)
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
    _fit_checked(settings)


def _fit_checked(settings: SxsSettings) -> None:
    """The fit choices, with errors a coordinator can act on; the grids stored in one form; their
    refit's count of fits within the operator's ceiling (SXS_REFIT_MAX_FITS)."""
    if settings.fit_method not in SxsSettings.FitMethod.values:
        raise ValueError("fit_method must be 'likelihood' or 'qp' (the paper's QP, DCGLearn)")
    try:
        settings.c_grid = grid_text(grid_values(settings.c_grid))
    except ValueError as error:
        raise ValueError(f"c_grid (the values of C): {error}") from None
    if settings.c_tie not in SxsSettings.TieCost.values:
        raise ValueError(f"c_tie must be one of {', '.join(SxsSettings.TieCost.values)}")
    if not isinstance(settings.c_tie_grid, str):
        raise ValueError("c_tie_grid (the values of C_t) must be a text of comma-separated numbers")
    if settings.c_tie == SxsSettings.TieCost.CUSTOM and not settings.c_tie_grid.strip():
        raise ValueError("c_tie 'custom' needs the values of C_t (c_tie_grid), e.g. 0.1, 1, 10")
    if settings.c_tie_grid.strip():
        try:
            settings.c_tie_grid = grid_text(grid_values(settings.c_tie_grid))
        except ValueError as error:
            raise ValueError(f"c_tie_grid (the values of C_t): {error}") from None
    folds = settings.folds
    if isinstance(folds, bool) or not isinstance(folds, int) or not MIN_FOLDS <= folds <= MAX_FOLDS:
        raise ValueError(f"folds must be a whole number from {MIN_FOLDS} to {MAX_FOLDS}, got {folds!r}")
    for name in ("ties", "monotone_discounts"):
        if not isinstance(getattr(settings, name), bool):
            raise ValueError(f"{name} must be true or false, got {getattr(settings, name)!r}")
    margin = settings.much_better_margin
    if (
        isinstance(margin, bool)
        or not isinstance(margin, int | float)
        or not 1.0 <= margin <= MAX_MUCH_BETTER_MARGIN
    ):
        raise ValueError(
            f"much_better_margin must be a number from 1 to {MAX_MUCH_BETTER_MARGIN:g}, got {margin!r}"
        )
    settings.much_better_margin = float(margin)
    too_costly = refit_work_problem(settings)
    if too_costly is not None:
        raise ValueError(too_costly)


@transaction.atomic
def sxs_configure(*, campaign: Campaign, **fields: Any) -> SxsSettings:
    """Create or change the campaign's SxS settings. The lists' settings (`TASK_FIELDS`) are
    refused once an answer was given (the tasks would no longer show what the answers were
    about); the fit's (`FIT_FIELDS`) may change at any time, and a change asks for the recompute
    that refits learned DCG with them."""
    if campaign.judging_mode != MODE_NAME:
        raise ValueError(f"a {campaign.judging_mode} campaign does not judge side by side")
    unknown = set(fields) - set(SETTING_FIELDS)
    if unknown:
        raise ValueError(f"unknown side-by-side setting(s): {', '.join(sorted(unknown))}")
    settings, _ = SxsSettings.objects.select_for_update().get_or_create(campaign=campaign)
    before = {name: getattr(settings, name) for name in SETTING_FIELDS}
    for name, value in fields.items():
        setattr(settings, name, value)
    _checked(settings)  # also brings the grids to their stored form, so "1, 10" equals "1,10"
    changed = {name for name in SETTING_FIELDS if getattr(settings, name) != before[name]}
    answered = SxsAnswer.objects.filter(campaign=campaign).exists()
    if changed & set(TASK_FIELDS) and answered:
        raise ValueError(
            "the lists' settings (K, documents without a grade, which comparison next) cannot change "
            "once lists were compared; the fit's settings can"
        )
    if changed & set(FIT_FIELDS) and answered:
        campaign_id = campaign.pk
        transaction.on_commit(lambda: recompute_soon(campaign_id))
    if changed & set(TASK_FIELDS) and settings.prepared_at is not None:
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
