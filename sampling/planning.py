"""Plan a graded campaign's budget before (or while) judging: the core's budget planner
(`estimation.simulation.planner`) run on the campaign's own runs.

The planner needs a truth to replay campaigns against. The app has the assessors' judgments
and imported qrels for some documents and its label model (theta) for the rest, so the
oracle is one labelling drawn from theta, seeded by the campaign, with every judged document
at its judged grade. Everything the planner reports therefore holds *if the label model is
right*; with qrels for the whole pool it is the plain replay of `python -m estimation
simulate`. Budgets are in judgments (one per document).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from estimation.formats.trec import Run
from estimation.metrics.spec import Metric
from estimation.simulation.planner import (
    BASELINE,
    PLANNED,
    PlannerRow,
    Replay,
    applicable_strategies,
    budget_needed,
    clearly_below,
    plan_budgets,
    prepare_replay,
    saving,
    standing_at,
)
from labeling.metric import campaign_metric
from labeling.models import Campaign
from sampling.estimates import estimand_share
from sampling.focus import focus_indices
from sampling.judge_labels import judge_for_sampling, pool_judge_classes
from sampling.judged import external_calibration_of
from sampling.label_model import judged_grades
from sampling.pool_arrays import PoolArrays, pool_arrays_for
from sampling.state import campaign_pool
from sampling.strategies import planned_strategies, planning_metric, unplanned_strategies

# Campaigns replayed per strategy: coverage to about 1.5 points in a second or two.
PLAN_REPETITIONS = 200
# What one web request may replay: repetitions x the largest budget, in judgments drawn (about
# 2,000,000 a second on one core, a few bytes each), and the largest budget against the pool.
PLAN_MAX_DRAWS = 10_000_000
PLAN_MAX_POOL_MULTIPLE = 100


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


def _number(value: float, scale: float = 1.0) -> float | None:
    """A JSON number, or None where the replay could not give one (nan, infinity)."""
    return float(value) * scale if np.isfinite(value) else None


def _row(row: PlannerRow, share: float) -> dict[str, Any]:
    """One planner row over the campaign's topics: errors and widths scale by the ranked topics'
    share, as the estimates do (`in_estimand`). Without a finite width (some replays had no
    interval) there is no coverage to report: an interval of (-inf, inf) "holds" every truth."""
    return {
        "strategy": row.strategy,
        "budget": row.budget,
        "rmse": _number(row.rmse, share),
        "coverage": _number(row.coverage) if np.isfinite(row.mean_width) else None,
        "mean_width": _number(row.mean_width, share),
        "topics_judged": _number(row.topics_judged),
        # Monte-Carlo standard errors: how far another set of replays could move the two.
        "rmse_se": _number(row.rmse_se, share),
        "width_se": _number(row.width_se, share),
    }


def _check_affordable(budgets: list[float], repetitions: int, pooled_documents: int) -> None:
    """ValueError when the replay would not fit one web request or makes no sense for the pool."""
    ceiling = PLAN_MAX_POOL_MULTIPLE * pooled_documents
    if max(budgets) > ceiling:
        raise ValueError(
            f"budget {max(budgets):g} is more than {PLAN_MAX_POOL_MULTIPLE} times the "
            f"{pooled_documents} pooled documents: plan budgets up to {ceiling:g} judgments"
        )
    if max(budgets) * repetitions > PLAN_MAX_DRAWS:
        affordable = PLAN_MAX_DRAWS // repetitions
        raise ValueError(
            f"{repetitions} repetitions of a {max(budgets):g}-judgment campaign are more than one "
            f"request replays ({PLAN_MAX_DRAWS:,} judgments): at {repetitions} repetitions plan "
            f"budgets up to {affordable:,}, or use 'python -m estimation simulate'"
        )


def _goal_and_systems(campaign: Campaign, focus: list[int]) -> tuple[str, str]:
    """The planner's goal for the campaign's (one system or one difference) and, in words, what
    the figures are for: a leaderboard is planned on the difference of its first two systems."""
    if campaign.goal == Campaign.Goal.ONE or len(focus) < 2:
        return "one", "the value of one system"
    if campaign.goal == Campaign.Goal.DIFFERENCE:
        return "difference", "the difference of the two systems"
    return "difference", (
        f"the difference of the first two of the campaign's {len(focus)} systems (the planner "
        "replays one system or one difference; the other pairs of the leaderboard behave alike "
        "when their systems are as close)"
    )


def campaign_plan(
    campaign: Campaign, *, budgets: list[float] | None = None, repetitions: int = PLAN_REPETITIONS
) -> dict[str, Any]:
    """Expected error, coverage and interval width per strategy and budget (judgments), the
    budget each strategy needs for the width passive reaches at the campaign's budget, and a
    recommendation in plain words. ValueError when there is nothing to plan on."""
    arrays = pool_arrays_for(campaign)
    if arrays.n_topics == 0 or not arrays.system_names:
        raise ValueError("import runs first: the pool is empty")
    metric = planning_metric(campaign_metric(campaign))
    focus = focus_indices(campaign, arrays)
    goal, planned_for = _goal_and_systems(campaign, focus)
    order = focus + [s for s in range(len(arrays.system_names)) if s not in focus]
    replay, judged = _campaign_replay(campaign, arrays, metric, goal, order)
    reference = float(campaign.budget) if campaign.budget_unit == Campaign.BudgetUnit.JUDGMENTS else None
    pooled = int(arrays.slot_used.sum())
    notes: list[str] = []
    if budgets is None:
        budgets, reference, repetitions, notes = _default_budgets(replay, reference, pooled, repetitions)
    _check_affordable(budgets, repetitions, pooled)
    strategies = applicable_strategies(metric, judge=judged)
    share = estimand_share(campaign, arrays)
    rows = plan_budgets(replay, strategies, budgets, repetitions=repetitions, seed=campaign.seed % 2**31)
    # The advice is for the campaign's budget (else the middle one planned), never another.
    advice_budget = reference if reference in budgets else budgets[len(budgets) // 2]
    width_budget, width = _anchor(rows, budgets, advice_budget)
    needs, below = budgets_for_width(rows, strategies, width)
    savings = {
        strategy: _trusted_saving(rows, strategy, advice_budget, BASELINE)
        for strategy in strategies
        if strategy != BASELINE
    }
    # A strategy that adds to another (the judged one to single documents) is also measured
    # against it: its realistic alternative.
    savings_against_base = {
        strategy: _number(_trusted_saving(rows, strategy, advice_budget, base))
        for strategy in strategies
        if (base := PLANNED[strategy].builds_on) is not None and base in strategies
    }
    return {
        "metric": str(metric),
        "goal": goal,
        "systems": [arrays.system_names[s] for s in order[: 2 if goal == "difference" else 1]],
        "planned_for": planned_for,
        "unit": "judgments",
        "repetitions": repetitions,
        "budget": advice_budget,
        "assumption": "the truth is one labelling drawn from the current label model (judged "
        "documents keep their grades): the figures hold if the label model is right",
        "rows": [_row(row, share) for row in rows],
        "budget_for_width": {
            "width": _number(width, share),
            "at": width_budget,
            "budgets": {strategy: _number(b) for strategy, b in needs.items()},
            "fewer_than_smallest": below,
            "smallest": min(budgets),
        },
        "savings": {strategy: _number(s) for strategy, s in savings.items()},
        "savings_against_items": savings_against_base,
        "unplanned": notes
        + _unplanned(rows, savings, width, advice_budget, pooled)
        + [
            f"not planned: {strategy.label}: {strategy.unplanned_reason}"
            for strategy in unplanned_strategies()
        ],
        "recommendation": _said_for_the_pool(
            _recommendation(rows, savings, advice_budget, savings_against_base, share),
            campaign,
            advice_budget,
        ),
        "campaign_budget": float(campaign.budget)
        if campaign.budget_unit == Campaign.BudgetUnit.JUDGMENTS
        else None,
        "strategies": {
            name: {"label": strategy.plan_words[0], "help": strategy.plan_words[1], "paper": strategy.paper}
            for name, strategy in planned_strategies().items()
            if name in strategies or not PLANNED[name].needs_judge
        },
    }


def _campaign_replay(
    campaign: Campaign, arrays: PoolArrays, metric: Metric, goal: str, order: list[int]
) -> tuple[Replay, bool]:
    """The planner's replay of the campaign: the truth is one labelling drawn from the current
    label model (judged documents keep their grades), the label model's probabilities are the
    sampling's labels, and the judge chosen for sampling (DCG only) labels the pool as it does.
    Returns the replay and whether a judge is in it."""
    pool, _, _ = campaign_pool(campaign, arrays)
    qrels = _oracle(judged_grades(campaign, arrays), pool.theta, arrays, campaign.seed % 2**63)
    pairs = [
        (t, slot, qid, docno)
        for t, qid in enumerate(arrays.topic_qids)
        for slot, docno in enumerate(arrays.docnos[t])
    ]
    labels = {(qid, docno): pool.theta[t, slot].tolist() for t, slot, qid, docno in pairs}
    judge = judge_for_sampling(campaign) if metric.is_linear_in_labels else None
    judge_labels, calibration = None, None
    if judge is not None:
        classes = pool_judge_classes(judge, arrays)
        judge_labels = {
            (qid, docno): (int(classes[t, slot]) if classes[t, slot] >= 0 else None, None)
            for t, slot, qid, docno in pairs
        }
        calibration = external_calibration_of(campaign, judge, metric)
    replay = prepare_replay(
        qrels,
        _runs(arrays, order),
        metric,
        goal,  # type: ignore[arg-type]  # the goal chosen by _goal_and_systems is one of the planner's
        labels=labels,
        judge=judge_labels,
        judge_calibration=calibration,
    )
    return replay, judge is not None


def _default_budgets(
    replay: Replay, reference: float | None, pooled: int, repetitions: int
) -> tuple[list[float], float | None, int, list[str]]:
    """Budgets around the campaign's (else 20 mean topics), a quarter to twice it; the budget the
    advice refers to; the repetitions the draw cap allows; and a note when the pool is smaller.

    Beyond the pool every strategy has judged all it can: those budgets plan alike, so the
    defaults stop at the pool (and so does the budget the advice refers to)."""
    notes = []
    topic = float(replay.topic_cost.mean())
    anchor = min(reference or 20 * topic, float(pooled))
    if reference is not None and reference > pooled:
        notes.append(
            f"the campaign's budget ({reference:g} judgments) is more than its pool holds "
            f"({pooled} documents): the plan stops at the pool"
        )
        reference = anchor
    shares = (0.25, 0.5, 1.0, 2.0)
    budgets = sorted({min(float(pooled), max(1.0, round(anchor * share))) for share in shares})
    return budgets, reference, min(repetitions, max(2, int(PLAN_MAX_DRAWS // max(budgets)))), notes


CURVE_NOISE = 1.1
"""An error curve "falls" when no budget's RMSE exceeds the previous budget's by more than this
factor (the replays' Monte-Carlo noise) and the largest budget's is below the smallest's."""


def _curve_falls(rows: list[PlannerRow], strategy: str) -> bool:
    """Whether the strategy's replays can support a saving: every budget planned has an error
    and an interval from every replay, and the error falls with the budget. A curve that rises
    (0.86 at 40 judgments, 4.47 at 80: too few topics to judge) interpolates to any saving."""
    values = sorted((row for row in rows if row.strategy == strategy), key=lambda row: row.budget)
    if len(values) < 2:
        return False
    complete = all(
        not row.n_without_estimate and np.isfinite(row.rmse) and np.isfinite(row.mean_width) for row in values
    )
    errors = [row.rmse for row in values]
    rising = any(later > earlier * CURVE_NOISE for earlier, later in zip(errors, errors[1:], strict=False))
    return complete and errors[-1] < errors[0] and not rising


def _trusted_saving(rows: list[PlannerRow], strategy: str, budget: float, baseline: str) -> float:
    """`saving` of `strategy` against `baseline` at `budget`, or nan when either error curve
    cannot support one (`_curve_falls`)."""
    if not (_curve_falls(rows, baseline) and _curve_falls(rows, strategy)):
        return float("nan")
    return saving(rows, strategy, budget, baseline=baseline).budget


def budgets_for_width(
    rows: list[PlannerRow], strategies: Sequence[str], width: float
) -> tuple[dict[str, float], list[str]]:
    """The budget each strategy needs for intervals `width` wide (nan where the replays cannot
    tell), and the strategies that need fewer judgments than the smallest budget replayed: the
    curve extended below it is a guess, so their figure is nan too and the page says "fewer
    than" that budget."""
    smallest = min(row.budget for row in rows)
    needs = {
        strategy: budget_needed(rows, strategy, width, quantity="mean_width").budget
        for strategy in strategies
    }
    below = sorted(strategy for strategy, need in needs.items() if need < smallest)
    return {strategy: float("nan") if strategy in below else need for strategy, need in needs.items()}, below


def _anchor(rows: list[PlannerRow], budgets: list[float], preferred: float) -> tuple[float, float]:
    """The budget whose random-topics interval width the "judgments needed" line refers to, and
    that width: the advice's budget, or the nearest larger one where random topics have a finite
    width when they have none there (too few topics for an interval)."""
    width_at = {row.budget: row.mean_width for row in rows if row.strategy == BASELINE}
    finite = [budget for budget in budgets if np.isfinite(width_at[budget])]
    chosen = next((b for b in finite if b >= preferred), finite[-1] if finite else preferred)
    return chosen, width_at[chosen]


def _unplanned(
    rows: list[PlannerRow], savings: dict[str, float], width: float, budget: float, pooled: int
) -> list[str]:
    """What the replay could not tell, in plain words (the numbers it leaves empty, and the
    budgets beyond the pool, which plan alike)."""
    words = {name: strategy.plan_words[0] for name, strategy in planned_strategies().items()}
    notes = []
    beyond = sorted({row.budget for row in rows if row.budget > pooled})
    if beyond:
        notes.append(
            f"the pool holds {pooled} documents: at {', '.join(f'{b:g}' for b in beyond)} judgments "
            "every strategy has judged all it can, so those rows are the same as at the pool's size"
        )
    for row in rows:
        if not np.isfinite(row.rmse):
            notes.append(
                f"{words[row.strategy]} at {row.budget:g} judgments: no error, because no replayed "
                "campaign could afford its first draw"
            )
        elif not np.isfinite(row.mean_width):
            notes.append(
                f"{words[row.strategy]} at {row.budget:g} judgments: no interval width, because "
                "some replayed campaigns judged fewer than two topics (no interval from one topic)"
            )
    if not np.isfinite(width):
        notes.append(
            "no budget planned gives random topics a finite interval, so the judgments needed for "
            "its width cannot be told: plan larger budgets"
        )
    larger = (
        " plan larger budgets"
        if max(row.budget for row in rows) < pooled
        else " the pool allows no larger budget"
    )
    notes += [
        f"{words[strategy]}: its saving in budget against random topics at {budget:g} judgments is not "
        "quoted: it interpolates error curves over every budget planned, and one of them rises or has "
        f"no interval at some budget (too few topics judged there);{larger}"
        for strategy, value in savings.items()
        if not np.isfinite(value)
    ]
    return notes


def _recommendation(
    rows: list[PlannerRow],
    savings: dict[str, float],
    budget: float,
    savings_against_base: dict[str, float | None] | None = None,
    share: float = 1.0,
) -> dict[str, Any]:
    """The advice at the budget the coordinator has, read off the replays shown (`standing_at`):
    the strategy whose typical error is lower than every other's beyond the replays' noise (and
    whose intervals no other beats beyond it), with its saving against topics at random and, for
    a strategy that builds on another (the judged one on single documents), against that one;
    else the strategies that tie, and the simplest of them (the planner's order: topics at
    random first). Never a strategy that another beats beyond the noise."""
    planned = planned_strategies()
    words = {name: _in_sentence(strategy.plan_words[0]) for name, strategy in planned.items()}
    error = {row.strategy: row.rmse * share for row in rows if row.budget == budget}
    standing = standing_at(rows, budget)
    if not standing.tied:
        return {
            "strategy": None,
            "tied": [],
            "text": f"At {budget:g} judgments no replayed campaign of any strategy could afford its "
            "first draw: plan larger budgets.",
            "paper": "",
        }

    def listed(names: list[str] | tuple[str, ...]) -> str:
        named = [f"{words[name]} ({error[name]:.3g})" for name in names]
        return named[0] if len(named) == 1 else ", ".join(named[:-1]) + " and " + named[-1]

    worse = (
        f" {_sentence_start(listed(standing.worse))} {'is' if len(standing.worse) == 1 else 'are'} worse."
        if standing.worse
        else ""
    )
    if standing.best is None:
        # The simplest of the tied whose intervals no other strategy beats beyond the noise.
        here = {row.strategy: row for row in rows if row.budget == budget}
        order = [name for name in planned if name in standing.tied]
        choice = next(
            (
                name
                for name in order
                if not any(
                    clearly_below(
                        other.mean_width, other.width_se, here[name].mean_width, here[name].width_se
                    )
                    for other in here.values()
                )
            ),
            order[0],
        )
        return {
            "strategy": choice,
            "tied": list(standing.tied),
            "text": f"At {budget:g} judgments {listed(standing.tied)} tie: their typical errors differ "
            f"by less than the {_repetitions(rows, budget)} replays can tell.{worse} Any of the tied will "
            f"do; {words[choice]} is the simplest to explain.",
            "paper": planned[choice].paper,
        }
    best = standing.best
    label, how = planned[best].plan_words
    parts = [
        f"{label}: {how}. At {budget:g} judgments its typical error ({error[best]:.3g}) is the lowest of "
        f"the strategies planned, beyond the replays' noise.{worse}"
    ]
    saved = savings.get(best)
    if saved is not None and np.isfinite(saved):
        parts.append(
            f"For the same error it needs about {100 * abs(saved):.0f} % {'less' if saved >= 0 else 'more'} "
            "budget than topics at random."
        )
    base = PLANNED[best].builds_on
    if base is not None and base in error:
        against_base = (savings_against_base or {}).get(best)
        parts.append(
            f"Against {PLANNED[best].builds_on_words} ({error[base]:.3g} at {budget:g} judgments): "
            + (
                f"about {100 * abs(against_base):.0f} % {'less' if against_base >= 0 else 'more'} budget "
                "for the same error."
                if against_base is not None
                else "the replays cannot tell the saving in budget."
            )
        )
    return {"strategy": best, "tied": [best], "text": " ".join(parts), "paper": planned[best].paper}


def _said_for_the_pool(advice: dict[str, Any], campaign: Campaign, budget: float) -> dict[str, Any]:
    """The advice, opened with why it is for the pool's size when the campaign's budget is larger."""
    set_budget = float(campaign.budget)
    if campaign.budget_unit != Campaign.BudgetUnit.JUDGMENTS or set_budget <= budget:
        return advice
    opening = (
        f"Your budget ({set_budget:g} judgments) is more than the pool holds ({budget:g} documents), "
        "so the plan stops at the pool: "
    )
    text = advice["text"]
    return {**advice, "text": opening + text[:1].lower() + text[1:]}


def _in_sentence(label: str) -> str:
    """A strategy's label inside a sentence ("Topics at random" -> "topics at random")."""
    return label[:1].lower() + label[1:]


def _sentence_start(text: str) -> str:
    return text[:1].upper() + text[1:]


def _repetitions(rows: list[PlannerRow], budget: float) -> int:
    return max((row.n_repetitions for row in rows if row.budget == budget), default=0)
