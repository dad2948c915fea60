"""The graded demo campaign: the generated collection, judged with active sampling, with a
judging history so the dashboard shows estimates and their intervals at once."""

from __future__ import annotations

import numpy as np
from django.contrib.auth import get_user_model
from django.db import transaction

from demo.loading import DEMO_GRADES, demo_campaign_draft, demo_collection, demo_fill_and_start
from graded.claims import task_next
from graded.judging import task_answer
from labeling.models import Campaign
from labeling.recompute import recompute
from sampling import EstimateSnapshot, judge_create, judge_run_start, judge_run_step

# Judgments the second demo assessor has already made, so the dashboard has estimates to show:
# at least this many, and on until the estimates are reliable (enough topics judged for an
# interval; active sampling may spend 80 judgments on three topics).
DEMO_HISTORY_JUDGMENTS = 80
DEMO_JUDGED_HISTORY = 30
# The judge-assisted demo's judge: the built-in lexical one, so the demo needs no network and no
# model, and shows honestly what a weak judge is worth.
DEMO_JUDGE = "bm25"
DEMO_CAMPAIGN = "Demo: sustainable cities (DCG@10)"
DEMO_JUDGED_CAMPAIGN = "Demo: sustainable cities, model judge + human sample (DCG@10)"


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
    campaign: Campaign, *, judgments: int, recompute_every: int = 8, until_reliable: bool = False
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
        if answered % recompute_every == 0:
            recompute(campaign.pk)
    recompute(campaign.pk)
    return answered


def _estimates_reliable(campaign: Campaign) -> bool:
    """Whether the latest snapshot's estimates are reliable (an interval, not the any-n bounds)."""
    latest = EstimateSnapshot.objects.filter(campaign=campaign).order_by("-created_at", "-id").first()
    rows = (latest.data or {}).get("systems", []) if latest else []
    return bool(rows) and all(row.get("reliable") for row in rows)


def demo_judged_campaign() -> Campaign:
    """The judge-assisted demo: the built-in lexical judge labelled the pool; assessors certify
    the difference of the two bm25 runs with a human sample (created with a history)."""
    campaign, created = _demo_judged_campaign()
    if created:
        demo_history(campaign, judgments=DEMO_JUDGED_HISTORY, recompute_every=4, until_reliable=True)
    return campaign


@transaction.atomic
def _demo_judged_campaign() -> tuple[Campaign, bool]:
    campaign, created = demo_campaign_draft(
        DEMO_JUDGED_CAMPAIGN,
        metric="DCG@10",
        grades=DEMO_GRADES,
        goal=Campaign.Goal.DIFFERENCE,
        focus_systems=["bm25-tuned", "bm25-default"],
        strategy="judged",
        # About half the pool: what the judge saves shows, and assessors have some left to judge.
        budget=60,
        budget_unit=Campaign.BudgetUnit.JUDGMENTS,
        seed=2025,
    )
    return (
        (demo_fill_and_start(campaign, before_start=lexical_judge_add), True)
        if created
        else (campaign, False)
    )


def lexical_judge_add(campaign: Campaign) -> None:
    """The built-in lexical judge labels the demo's pool, here and now (no network, a second):
    its thresholds come from the pool's own scores, since no human has judged yet."""
    judge = judge_create(
        campaign=campaign,
        name=DEMO_JUDGE,
        kind="lexical",
        notes="Demonstration judge: BM25 of the topic's title and description against each document.",
    )
    run = judge_run_start(judge)
    while judge_run_step(run.pk) == "more":
        pass
