"""Reads of training-data campaigns: progress, the rounds table, coverage, the learning curve,
and what the dashboard and the API show."""

from __future__ import annotations

from typing import Any

import numpy as np
from django.db.models import Count, Q, Sum

from labeling.models import Campaign, Judgment, Task
from labeling.selectors import Progress, campaign_spent, campaign_state
from training.models import TrainingPool, TrainingRound, TrainingSelection
from training.services import (
    DRAW_STRATEGY,
    FINAL_STRATEGY,
    labels_now,
    remaining_budget,
    round_waiting,
    settings_of,
)

# EL(q) below this counts as "the members agree": the query would teach the model nothing now.
EL_NEAR_ZERO = 1e-6


def training_progress(campaign: Campaign) -> Progress:
    """Judgments and budget (labels), pool rows, selected items, open tasks."""
    count, spent = campaign_spent(campaign)
    open_tasks = Task.objects.filter(campaign=campaign, answered_at__isnull=True).count()
    found = TrainingPool.objects.filter(campaign=campaign).values("rows", "base_labeled").first()
    record = {"rows": found["rows"], "base_labeled": found["base_labeled"]} if found else {}
    selected = TrainingSelection.objects.filter(round__campaign=campaign).count()
    state = campaign_state(campaign, open_tasks)
    if campaign.status == Campaign.Status.RUNNING and record and not round_waiting(campaign):
        unselected = record["rows"] - record["base_labeled"] - selected
        if selected and spent >= campaign.budget:
            state = "budget_spent"
        elif open_tasks == 0 and unselected <= 0:
            state = "done"
        elif unselected > 0 and remaining_budget(campaign) > 0:
            # No item of the round is left to claim (judged, or held by someone) and budget is
            # left: the worker is fitting the ensemble and selecting the next round (the first,
            # right after Start).
            state = "next_round"
    settings = settings_of(campaign)
    return Progress(
        judgments=count,
        budget=campaign.budget,
        budget_unit=campaign.budget_unit,
        spent=spent,
        remaining=max(0.0, campaign.budget - spent),
        pool_size=record.get("rows", 0),
        prejudged=record.get("base_labeled", 0),
        drawn=selected,
        status=str(campaign.status),
        state=state,
        strategy=settings.strategy,
        open_tasks=open_tasks,
        draws=selected,
    )


def rounds_table(campaign: Campaign) -> list[dict[str, Any]]:
    """Per round: selected, judged, assessor seconds, fit and select seconds, test DCG@10."""
    rows = []
    for training_round in TrainingRound.objects.filter(campaign=campaign).order_by("number"):
        judged = Judgment.objects.filter(
            task_id__in=training_round.selections.values("task_id"), source=Judgment.Source.ASSESSOR
        ).aggregate(count=Count("id"), seconds=Sum("seconds"))
        rows.append(
            {
                "number": training_round.number,
                "strategy": training_round.strategy,
                "model": training_round.model,
                "labels_before": training_round.labels_before,
                "selected": training_round.selected,
                "judged": judged["count"] or 0,
                "assessor_seconds": float(judged["seconds"] or 0.0),
                "fit_seconds": training_round.fit_seconds,
                "select_seconds": training_round.select_seconds,
                "test_dcg": training_round.test_dcg,
                "final": training_round.strategy == FINAL_STRATEGY,
                "seed": training_round.seed,
            }
        )
    return rows


def learning_curve(rounds: list[dict[str, Any]]) -> list[dict[str, float]]:
    """(labels, assessor hours so far, test DCG@10) of every round that has a test score."""
    points, hours = [], 0.0
    for row in rounds:
        if row["test_dcg"] is not None:
            points.append({"labels": row["labels_before"], "hours": hours, "test_dcg": row["test_dcg"]})
        hours += row["assessor_seconds"] / 3600.0
    return points


def grade_mix(campaign: Campaign) -> list[dict[str, Any]]:
    """How the judged selected items split over the grades."""
    counts = dict(
        Judgment.objects.filter(
            campaign=campaign, source=Judgment.Source.ASSESSOR, draw__strategy=DRAW_STRATEGY
        )
        .values_list("grade")
        .annotate(n=Count("id"))
    )
    return [
        {"grade": grade["name"], "count": counts.get(value, 0)} for value, grade in enumerate(campaign.grades)
    ]


def query_reasons(campaign: Campaign, limit: int = 50) -> list[dict[str, Any]]:
    """The selected queries with their EL(q) (the largest first) and how many items each gave."""
    rows = (
        TrainingSelection.objects.filter(round__campaign=campaign)
        .values("qid")
        .annotate(items=Count("id"), first_round=Count("round", distinct=True))
        .order_by("qid")
    )
    el = dict(
        TrainingSelection.objects.filter(round__campaign=campaign, el_query__isnull=False)
        .values_list("qid", "el_query")
        .order_by("qid", "round__number")
    )
    listed = [{"qid": row["qid"], "items": row["items"], "el_query": el.get(row["qid"])} for row in rows]
    listed.sort(key=lambda row: -(row["el_query"] or 0.0))
    return listed[:limit]


def coverage(campaign: Campaign) -> dict[str, int]:
    """Queries of the pool never selected; selected queries whose EL(q) was ~0 when chosen."""
    record = TrainingPool.objects.filter(campaign=campaign).values("queries").first()
    selected = TrainingSelection.objects.filter(round__campaign=campaign)
    chosen = selected.values("qid").distinct().count()
    near_zero = selected.filter(Q(el_query__lt=EL_NEAR_ZERO)).values("qid").distinct().count()
    total = record["queries"] if record else 0
    return {
        "queries": total,
        "selected": chosen,
        "never_selected": max(0, total - chosen),
        "el_near_zero": near_zero,
    }


def training_summary(campaign: Campaign) -> dict[str, Any]:
    """What the dashboard and `GET /api/campaigns/{id}/training/` show."""
    settings = settings_of(campaign)
    rounds = rounds_table(campaign)
    return {
        "strategy": settings.strategy,
        "drawn": settings.drawn,
        "selection_mode": (
            "drawn: each item carries its inclusion probability, so the labels also give unbiased "
            "estimates through the estimators"
            if settings.drawn
            else "deterministic: the top items by expected loss; these labels never feed the estimators"
        ),
        "rounds": rounds,
        "learning_curve": learning_curve(rounds),
        "grade_mix": grade_mix(campaign),
        "coverage": coverage(campaign),
        "queries": query_reasons(campaign),
    }


def labeled_pool_rows(campaign: Campaign) -> tuple[Any, np.ndarray]:
    """The pool with every label so far, and the rows labeled (base or judged)."""
    pool = labels_now(campaign)
    return pool, np.flatnonzero(pool.labeled)
