"""The graded demo campaign: the generated collection, judged with active sampling, with a
judging history so the dashboard shows estimates and their intervals at once."""

from __future__ import annotations

import io

import numpy as np
from django.contrib.auth import get_user_model
from django.db import transaction

from graded.judging import task_answer, task_next
from labeling.demo import (
    DEMO_CAMPAIGN,
    DEMO_GRADES,
    DEMO_JUDGED_CAMPAIGN,
    demo_campaign_draft,
    demo_collection,
    demo_fill_and_start,
)
from labeling.models import Campaign, EstimateSnapshot
from labeling.recompute import recompute
from sampling import judge_create, judge_labels_import

# Judgments the second demo assessor has already made, so the dashboard has estimates to show:
# at least this many, and on until the estimates are reliable (enough topics judged for an
# interval; active sampling may spend 80 judgments on three topics).
DEMO_HISTORY_JUDGMENTS = 80
DEMO_JUDGED_HISTORY = 30
# P(judge grade | human grade), rows human 0..3: a simulated judge about as good as the LLM
# judges next to NIST assessors on TREC DL (Cohen's kappa about 0.3-0.4, quadratic-weighted
# about 0.6-0.7, more generous than the humans). Named as simulated wherever it shows.
SIMULATED_JUDGE_CONFUSION = np.array(
    [
        [0.62, 0.25, 0.10, 0.03],
        [0.20, 0.40, 0.30, 0.10],
        [0.05, 0.20, 0.45, 0.30],
        [0.02, 0.08, 0.30, 0.60],
    ]
)
SIMULATED_JUDGE = "simulated-umbrela"


def demo_graded_campaign() -> Campaign:
    """The graded demo campaign, created (with its judging history) unless it exists."""
    campaign, created = _demo_campaign()
    if created:
        demo_history(campaign, judgments=DEMO_HISTORY_JUDGMENTS, until_reliable=True)
    return campaign


@transaction.atomic
def _demo_campaign() -> tuple[Campaign, bool]:
    campaign, created = demo_campaign_draft(
        DEMO_CAMPAIGN,
        metric="DCG@10",
        grades=DEMO_GRADES,
        goal=Campaign.Goal.LEADERBOARD,
        goal_k=3,
        # Active query-level sampling (Sawade et al.): topics whose metrics are most uncertain
        # per unit of cost first; a drawn topic asks for every pooled document of it.
        strategy="active",
        budget=200,
        budget_unit=Campaign.BudgetUnit.JUDGMENTS,
        seed=2024,
    )
    return (demo_fill_and_start(campaign), True) if created else (campaign, False)


def demo_history(
    campaign: Campaign, *, judgments: int, refresh_every: int = 8, until_reliable: bool = False
) -> int:
    """Answer `judgments` tasks with the hidden grades as demo-assessor2 (and, `until_reliable`,
    on until the latest estimates are reliable, or nothing is left), recomputing after every
    few as the worker would; returns how many."""
    _, _, _, grades = demo_collection()
    assessor = get_user_model().objects.get(username="demo-assessor2")
    rng = np.random.default_rng(7)
    answered = 0
    while answered < judgments or (until_reliable and not _estimates_reliable(campaign)):
        task = task_next(campaign=campaign, assessor=assessor)
        if task is None:
            break
        grade = grades[(task.topic.qid, task.document.docno)]
        task_answer(task=task, assessor=assessor, grade=grade, seconds=float(rng.uniform(4.0, 20.0)))
        answered += 1
        if answered % refresh_every == 0:
            recompute(campaign.pk)
    recompute(campaign.pk)
    return answered


def _estimates_reliable(campaign: Campaign) -> bool:
    """Whether the latest snapshot's estimates are reliable (an interval, not the any-n bounds)."""
    latest = EstimateSnapshot.objects.filter(campaign=campaign).order_by("-created_at", "-id").first()
    rows = (latest.data or {}).get("systems", []) if latest else []
    return bool(rows) and all(row.get("reliable") for row in rows)


def demo_judged_campaign() -> Campaign:
    """The judge-assisted demo: a simulated judge labelled every document; assessors certify
    the difference of the two bm25 runs with a human sample (created with a history)."""
    campaign, created = _demo_judged_campaign()
    if created:
        demo_history(campaign, judgments=DEMO_JUDGED_HISTORY, refresh_every=4, until_reliable=True)
    return campaign


@transaction.atomic
def _demo_judged_campaign() -> tuple[Campaign, bool]:
    campaign, created = demo_campaign_draft(
        DEMO_JUDGED_CAMPAIGN,
        metric="DCG@10",
        grades=DEMO_GRADES,
        goal=Campaign.Goal.DIFFERENCE,
        focus_systems=["bm25-tuned", "bm25-default"],
        strategy=Campaign.Strategy.JUDGED,
        # About half the pool: what the judge saves shows, and assessors have some left to judge.
        budget=60,
        budget_unit=Campaign.BudgetUnit.JUDGMENTS,
        seed=2025,
    )
    return (
        (demo_fill_and_start(campaign, before_start=simulated_judge_add), True)
        if created
        else (campaign, False)
    )


def simulated_judge_add(campaign: Campaign) -> None:
    """A simulated judge's labels of every demo document, drawn from SIMULATED_JUDGE_CONFUSION."""
    _, _, _, grades = demo_collection()
    rng = np.random.default_rng(11)
    lines = []
    for (qid, docno), grade in sorted(grades.items()):
        judged = int(rng.choice(4, p=SIMULATED_JUDGE_CONFUSION[grade]))
        lines.append(f"{qid} 0 {docno} {judged}\n")
    judge = judge_create(
        campaign=campaign,
        name=SIMULATED_JUDGE,
        model="simulated (no model): grades drawn from a confusion like UMBRELA judges on TREC DL",
        prompt="UMBRELA-style 0-3 relevance prompt (simulated)",
        notes="Demonstration judge: its labels come from the demo's hidden grades through a fixed confusion.",
        simulated=True,
    )
    judge_labels_import(judge=judge, files=[("simulated-umbrela.txt", io.BytesIO("".join(lines).encode()))])
