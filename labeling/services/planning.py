"""Plan a graded campaign's budget before (or while) judging: the core's budget planner
(`estimation.planner`) run on the campaign's own runs.

The planner needs a truth to replay campaigns against. The app has the assessors' judgments
and imported qrels for some documents and its label model (theta) for the rest, so the
oracle is one labelling drawn from theta, seeded by the campaign, with every judged document
at its judged grade. Everything the planner reports therefore holds *if the label model is
right*; with qrels for the whole pool it is the plain replay of `python -m estimation
simulate`. Budgets are in judgments (one per document).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from estimation.metric_spec import Metric
from estimation.planner import (
    PlannerRow,
    applicable_strategies,
    budget_needed,
    plan_budgets,
    prepare_replay,
    saving,
)
from estimation.trec import Run
from labeling.models import Campaign
from labeling.services.estimates import estimand_share
from labeling.services.label_model import judged_grades
from labeling.services.pool_arrays import PoolArrays, campaign_metric, pool_arrays_for
from labeling.services.sampling_state import campaign_pool, focus_indices

# Campaigns replayed per strategy: coverage to about 1.5 points in a second or two.
PLAN_REPETITIONS = 200
# A strategy is recommended over passive only when it saves at least this share of the budget
# (the planner's own noise at PLAN_REPETITIONS is a few percent).
MEANINGFUL_SAVING = 0.1

STRATEGY_WORDS = {
    "passive": ("Topics at random", "every document of a randomly drawn topic is judged"),
    "active": (
        "Uncertain topics first",
        "topics whose metric the label model is least sure of, per unit of cost, are judged first",
    ),
    "items": (
        "Single documents",
        "single documents are drawn where they can change the metric most; DCG only",
    ),
}
PAPERS = {
    "passive": "Sawade et al. 2013, the passive baseline",
    "active": "Sawade et al. 2013, cost-sensitive active evaluation",
    "items": "Schnabel et al. 2016, item-level importance sampling",
}


def _runs(arrays: PoolArrays, order: list[int]) -> list[Run]:
    """The pooled systems as runs (their pooled top-D documents), in `order`."""
    runs = []
    for s in order:
        rankings: dict[str, tuple[str, ...]] = {}
        scores: dict[str, tuple[float, ...]] = {}
        for t, qid in enumerate(arrays.topic_qids):
            slots = [int(slot) for slot in arrays.rankings[s, t] if slot >= 0]
            if slots:
                rankings[qid] = tuple(arrays.docnos[t][slot] for slot in slots)
                scores[qid] = tuple(float(arrays.scores[s, t, slot]) for slot in slots)
        runs.append(Run(tag=arrays.system_names[s], rankings=rankings, scores=scores))
    return runs


def _oracle(
    grades: np.ndarray, theta: np.ndarray, arrays: PoolArrays, seed: int
) -> dict[str, dict[str, int]]:
    """qrels of every pooled document: the judged grade, else one drawn from theta."""
    rng = np.random.default_rng([seed, 1])
    cumulative = np.cumsum(theta, axis=-1)
    drawn = (rng.random(grades.shape)[..., None] > cumulative[..., :-1]).sum(axis=-1)
    grade = np.where(grades >= 0, grades, drawn)
    return {
        qid: {docno: int(grade[t, slot]) for slot, docno in enumerate(arrays.docnos[t])}
        for t, qid in enumerate(arrays.topic_qids)
    }


def _row(row: PlannerRow, share: float) -> dict[str, Any]:
    """One planner row over the campaign's topics: errors and widths scale by the ranked topics'
    share, as the estimates do (`in_estimand`)."""

    def number(value: float, scale: float = 1.0) -> float | None:
        return float(value) * scale if np.isfinite(value) else None

    return {
        "strategy": row.strategy,
        "budget": row.budget,
        "rmse": number(row.rmse, share),
        "coverage": number(row.coverage),
        "mean_width": number(row.mean_width, share),
        "topics_judged": number(row.topics_judged),
    }


def campaign_plan(
    campaign: Campaign, *, budgets: list[float] | None = None, repetitions: int = PLAN_REPETITIONS
) -> dict[str, Any]:
    """Expected error, coverage and interval width per strategy and budget (judgments), the
    budget each strategy needs for the width passive reaches at the campaign's budget, and a
    recommendation in plain words. ValueError when there is nothing to plan on."""
    arrays = pool_arrays_for(campaign)
    if arrays.n_topics == 0 or not arrays.system_names:
        raise ValueError("import runs first: the pool is empty")
    metric = campaign_metric(campaign)
    if metric.name == "nDCG":  # plans with DCG at the same cutoff, as sampling does
        metric = Metric("DCG", metric.cutoff, gain=metric.gain, y_max=metric.y_max)
    focus = focus_indices(campaign, arrays)
    goal = "difference" if campaign.goal == Campaign.Goal.DIFFERENCE and len(focus) >= 2 else "one"
    order = focus + [s for s in range(len(arrays.system_names)) if s not in focus]
    pool, _, _ = campaign_pool(campaign, arrays)
    qrels = _oracle(judged_grades(campaign, arrays), pool.theta, arrays, campaign.seed % 2**63)
    labels = {
        (qid, docno): pool.theta[t, slot].tolist()
        for t, qid in enumerate(arrays.topic_qids)
        for slot, docno in enumerate(arrays.docnos[t])
    }
    replay = prepare_replay(qrels, _runs(arrays, order), metric, goal, labels=labels)  # type: ignore[arg-type]
    reference = float(campaign.budget) if campaign.budget_unit == Campaign.BudgetUnit.JUDGMENTS else None
    if budgets is None:
        topic = float(replay.topic_cost.mean())
        anchor = reference or 20 * topic
        budgets = sorted({max(1.0, round(anchor * share)) for share in (0.25, 0.5, 1.0, 2.0)})
    anchor_budget = reference if reference in budgets else budgets[len(budgets) // 2]
    strategies = applicable_strategies(metric)
    share = estimand_share(campaign, arrays)
    rows = plan_budgets(replay, strategies, budgets, repetitions=repetitions, seed=campaign.seed % 2**31)
    width = next(row.mean_width for row in rows if row.strategy == "passive" and row.budget == anchor_budget)
    needs = {
        strategy: budget_needed(rows, strategy, width, quantity="mean_width").budget
        for strategy in strategies
    }
    savings = {
        strategy: saving(rows, strategy, anchor_budget).budget
        for strategy in strategies
        if strategy != "passive"
    }
    return {
        "metric": str(metric),
        "goal": goal,
        "systems": [arrays.system_names[s] for s in order[: 2 if goal == "difference" else 1]],
        "unit": "judgments",
        "repetitions": repetitions,
        "budget": anchor_budget,
        "assumption": "the truth is one labelling drawn from the current label model (judged "
        "documents keep their grades): the figures hold if the label model is right",
        "rows": [_row(row, share) for row in rows],
        "budget_for_width": {
            "width": float(width) * share,
            "budgets": {strategy: (float(b) if np.isfinite(b) else None) for strategy, b in needs.items()},
        },
        "savings": {strategy: (float(s) if np.isfinite(s) else None) for strategy, s in savings.items()},
        "recommendation": _recommendation(savings, anchor_budget),
        "strategies": {
            name: {"label": words[0], "help": words[1], "paper": PAPERS[name]}
            for name, words in STRATEGY_WORDS.items()
        },
    }


def _recommendation(savings: dict[str, float], budget: float) -> dict[str, Any]:
    finite = {strategy: value for strategy, value in savings.items() if np.isfinite(value)}
    best = max(finite, key=finite.__getitem__, default=None)
    if best is None or finite[best] < MEANINGFUL_SAVING:
        return {
            "strategy": "passive",
            "text": f"At {budget:g} judgments no strategy saves enough to matter here: "
            "judge topics at random, the simplest to explain.",
            "paper": PAPERS["passive"],
        }
    label, how = STRATEGY_WORDS[best]
    return {
        "strategy": best,
        "text": f"{label}: {how}. For the same error it needs about {100 * finite[best]:.0f} % less "
        f"budget than topics at random (at {budget:g} judgments).",
        "paper": PAPERS[best],
    }
