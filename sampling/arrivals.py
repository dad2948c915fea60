"""Runs that arrive in a living campaign: pooled after draws were made, estimated by strata, and
given a human top-up where their difference with a reference is uncertain.

`arrival_add` pools the run (its new items keep the order of the last draw before them,
`PoolItem.drawable_after`), records the arrival with its reference and top-up budget, raises the
campaign's budget by the top-up and reopens a finished campaign. While the top-up is not spent,
the item-level strategies draw from the top-up design (`arrival_topup_design`,
`estimation.sampling.arrivals.topup_distribution`): |a_R - a_B| s, the old strata scaled by
the top-up's share of their draws, the defensive floor over every pooled run. The estimates of
every run stay unbiased: the strata keep each item's share estimated from the draws that could
pick it (`sampling.level_estimates.CountedDraws.strata`). A query-level campaign (topics drawn
whole) judges the run's documents on the topics already drawn first, then draws new topics with
its own design (`sampling.arrival_topics`). Method notes: docs/statistics.md, "A run that
arrives".
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any

import numpy as np
from django.conf import settings
from django.db import transaction
from django.db.models import Max
from django.utils import timezone

from estimation.judges.calibration import MISSING
from estimation.sampling.arrivals import topup_for_width, topup_variance
from estimation.sampling.items import system_weights
from estimation.sampling.sequences import Interval
from labeling.budgets import budget_ceiling, budget_problem
from labeling.import_reports import UploadedFile
from labeling.models import Arrival, Campaign, Draw, System, Verdict
from labeling.recompute import recompute_soon
from labeling.selectors import verdict_summary
from sampling.arrival_design import (
    TopupDesign,
    arrival_labelling_judge,
    arrival_waiting,
    ranked_slots,
    topics_drawn_by,
    topup_spent,
)
from sampling.arrival_topics import completion_needed, drawn_topics_complete
from sampling.draws import draw_price
from sampling.estimates import estimates_current
from sampling.judge_kinds import judge_kind
from sampling.judge_labels import judge_for_sampling, pool_judge_classes
from sampling.judge_runs import judge_run_start
from sampling.label_model import judged_grades
from sampling.level_estimates import counted_item_draws, order_right, stratified_item_estimate
from sampling.pool_arrays import PoolArrays, pool_arrays_for, pool_from_arrays, pooled_systems
from sampling.state import campaign_pool
from sampling.strategies import Level, strategy_for
from sampling.verdicts import (
    arrival_verdict_open,
    horizon_unit,
    identical_rankings,
    plan_problem,
    planned_labels,
    topup_finished,
    verdict_exact_value,
    verdict_reading,
    verdict_state,
)
from uploads.run_imports import StagedRuns, runs_import

TOPUP_PLAN_MAX_DRAWS = 5000
"""The largest top-up the width planner proposes (draws); past it, it says the width it reaches."""
MAX_TOPUP_DRAWS = 2**31 - 1
"""What an arrival's draw count can hold (a PositiveIntegerField on PostgreSQL)."""
LEVEL_REFUSAL = (
    "this campaign's strategy does not take a run with a top-up: evaluate it on the stored "
    "judgments (Evaluate a new run)"
)


def arrival_add(
    *,
    campaign: Campaign,
    files: Sequence[UploadedFile],
    budget: float | None = None,
    target_width: float | None = None,
    reference: str | None = None,
    rule: str | None = None,
    question: str | None = None,
    margin: float | None = None,
) -> Arrival:
    """Pool one run into a campaign that has drawn, with a top-up aimed at its difference with
    `reference` (a pooled run's name; default the best certified pooled run, `best_certified`):
    either `budget` (the campaign's budget unit) or `target_width`, the 95 % interval width of
    the difference the top-up should reach (the budget is planned for it, `topup_plan`). Its
    verdict's rule, question and margin (default: the campaign's) are fixed now
    (`sampling.verdicts`). A run identical to its reference at every rank the metric weighs is
    pooled with no top-up and decided ``unchanged``. ValueError with the reason, before anything
    is stored, for a strategy that takes no arrivals, no draw yet, a bad budget, width, reference
    or verdict plan, more than one file, or (topics drawn whole) a width, or a top-up that cannot
    judge the run's documents on the drawn topics; `ImportFailed` for a malformed run (nothing
    stored)."""
    level = strategy_for(campaign).level
    if not level.takes_arrivals:
        raise ValueError(LEVEL_REFUSAL)
    if len(files) != 1:
        raise ValueError(f"one run arrives at a time, got {len(files)} files")
    whole_topics = level.draws_whole_topics
    _check_topup(campaign, level, budget, target_width)
    _check_room(campaign)
    rule = rule or str(campaign.verdict_rule)
    question = question or str(campaign.verdict_question)
    margin = float(campaign.verdict_margin if margin is None else margin)
    problem = plan_problem(level, rule, question, margin)
    if problem is not None:
        raise ValueError(f"the verdict cannot be read so: {problem}")
    last_draw = Draw.objects.filter(campaign=campaign).aggregate(last=Max("order"))["last"]
    if last_draw is None:
        raise ValueError("nothing was drawn yet: upload the run with the others (Runs) instead")
    pooled = [system.name for system in pooled_systems(campaign)]
    chosen = reference or best_certified(campaign, pooled)
    if chosen not in pooled:
        raise ValueError(
            f"the reference {chosen!r} is not a pooled run of this campaign ({', '.join(pooled)})"
        )
    check = partial(_completion_affordable, campaign, float(budget or 0)) if whole_topics else None
    report = runs_import(campaign=campaign, files=files, staged_check=check)
    arrays = pool_arrays_for(campaign)
    names = list(arrays.system_names)
    pair = (names.index(report.systems[0]), names.index(chosen))
    unchanged = identical_rankings(arrays, *pair, level.evaluation_metric(campaign).cutoff)
    plan = None
    if unchanged:
        budget, draws = 0.0, 1
    else:
        price = draw_price(campaign, arrays)
        if target_width is not None:
            planned = topup_plan(campaign, arrays, pair, last_draw, target_width)
            plan = _within_ceiling(campaign, planned, price)
            budget = plan.budget
        assert budget is not None  # _check_topup: one of the two was given
        draws = plan.draws if plan is not None else max(1, round(budget / price))
        draws = min(draws, MAX_TOPUP_DRAWS)
    with transaction.atomic():
        campaign = Campaign.objects.select_for_update(no_key=True).get(pk=campaign.pk)
        system = System.objects.get(campaign=campaign, name=report.systems[0])
        arrival = Arrival.objects.create(
            campaign=campaign,
            system=system,
            reference=System.objects.get(campaign=campaign, name=chosen),
            reference_given=reference is not None,
            topup_budget=float(budget),
            topup_draws=draws,
            target_width=target_width,
            planned_width=None if plan is None or not math.isfinite(plan.width) else plan.width,
            drawable_after=last_draw,
        )
        labels = planned_labels(campaign, arrays, judged_grades(campaign, arrays), float(budget))
        arrival_verdict_open(
            arrival, rule=rule, question=question, margin=margin, horizon=labels, unchanged=unchanged
        )
        if not unchanged:
            campaign.budget += float(budget)
            campaign.blocked = ""
            if campaign.status == Campaign.Status.DONE:
                campaign.status = Campaign.Status.RUNNING
            campaign.save(update_fields=["budget", "blocked", "status", "updated_at"])
            if whole_topics:
                drawn_topics_complete(campaign, arrival)
    if not unchanged:
        _judge_new_pairs(campaign)
    # The pool and its estimates changed, and the verdict may be readable at once (every document
    # it weighs judged already): the worker reads them now, not at a next judgment that may never
    # come (a release gate waited for one until its timeout).
    transaction.on_commit(lambda: recompute_soon(campaign.pk))
    return arrival


def _check_topup(campaign: Campaign, level: Level, budget: float | None, target_width: float | None) -> None:
    """ValueError unless exactly one of a valid budget and a valid width is given."""
    if (budget is None) == (target_width is None):
        given = "both were" if budget is not None else "neither was"
        raise ValueError(
            f"give either a top-up or the 95 % interval width it should reach (fields budget and "
            f"target_width), not both: {given} given"
        )
    if target_width is not None:
        if not level.topup_by_width:
            raise ValueError(
                "this campaign draws whole topics: give the top-up as a budget (a width is planned "
                "for single-documents strategies only)"
            )
        if not np.isfinite(target_width) or target_width <= 0:
            raise ValueError(f"the target width must be a positive number, got {target_width:g}")
        if campaign.budget >= budget_ceiling():
            raise ValueError(
                f"the campaign's budget ({campaign.budget:g}) is at the operator's LABELING_MAX_BUDGET: "
                "no top-up fits under it"
            )
        return
    assert budget is not None
    problem = budget_problem(budget, what="top-up budget", positive=True) or budget_problem(
        campaign.budget + budget, what=f"campaign's budget with the top-up ({campaign.budget:g} + {budget:g})"
    )
    if problem is not None:
        raise ValueError(problem)
    if campaign.budget_unit == Campaign.BudgetUnit.JUDGMENTS and budget != int(budget):
        raise ValueError(f"a top-up in judgments is a whole number, got {budget:g}")


def _check_room(campaign: Campaign) -> None:
    """ValueError naming the operator's setting when the campaign holds as many arrivals as it may
    (its pooled runs are `runs_import`'s to count)."""
    arrivals = Arrival.objects.filter(campaign=campaign).count()
    if arrivals >= settings.LABELING_MAX_ARRIVALS:
        raise ValueError(
            f"this campaign has {arrivals} arrivals, as many as the operator allows "
            f"(LABELING_MAX_ARRIVALS={settings.LABELING_MAX_ARRIVALS}): start a new campaign"
        )


def _within_ceiling(campaign: Campaign, plan: TopupPlan, price: float) -> TopupPlan:
    """A planned top-up that would take the campaign past LABELING_MAX_BUDGET is the largest the
    ceiling leaves, with no predicted width (the arrival's planned_width is null): the run is
    pooled by then, and a refusal would leave it pooled without an arrival."""
    room = budget_ceiling() - campaign.budget
    if plan.budget <= room:
        return plan
    budget = max(room, 0.0)
    if campaign.budget_unit == Campaign.BudgetUnit.JUDGMENTS:
        budget = float(math.floor(budget))
    draws = max(1, min(plan.draws, round(budget / price) if price > 0 else plan.draws))
    return TopupPlan(budget=budget, draws=draws, width=math.nan)


def topup_plan(
    campaign: Campaign, arrays: PoolArrays, pair: tuple[int, int], drawable_after: int, width: float
) -> TopupPlan:
    """The top-up for the difference of the pooled systems `pair` to reach a 95 % interval of
    `width`, given the draws made up to `drawable_after`
    (`estimation.sampling.arrivals.topup_variance`): the label model's grade probabilities stand
    for the unknown grades, the stored draws' own spread for the old pool's part, and the design
    is the top-up design without a judge (with one the top-up does at least as well when the
    judge helps). Capped at `TOPUP_PLAN_MAX_DRAWS` draws, with the width it predicts there."""
    pool, _, _ = campaign_pool(campaign, arrays)
    metric = strategy_for(campaign).level.evaluation_metric(campaign)
    design = TopupDesign(campaign, arrays, pool, metric, pair, drawable_after)
    gains = metric.gain_table().astype(float)
    new = arrays.slot_used & (arrays.drawable_after == drawable_after) & (drawable_after > 0)
    grades = judged_grades(campaign, arrays)
    draws = counted_item_draws(campaign, arrays, grades)
    old_target = np.where(new, 0.0, design.target)
    # One stratum (every draw) when no run joined the pool after draws were made before this one.
    strata = draws.strata(arrays, old_target) or [(old_target != 0, np.ones(draws.size, dtype=bool))]
    stored_variance = 0.0
    if draws.size:
        top_gain = float(gains.max())
        labels = gains[grades[draws.topic, draws.slot]] / top_gain
        estimate = stratified_item_estimate(draws, labels, old_target, strata, draws.size, float("nan"))
        if np.isfinite(estimate.standard_error):
            stored_variance = (estimate.standard_error * top_gain) ** 2

    def variance_of(topup_draws: int) -> float:
        return topup_variance(
            design.target,
            pool.theta @ gains,
            pool.theta @ gains**2,
            new,
            design.q(topup_draws).q,
            topup_draws,
            draws.size,
            stored_variance,
        )

    cap = int(min(TOPUP_PLAN_MAX_DRAWS, max(2, 100 * int(arrays.slot_used.sum()))))
    topup_draws, predicted = topup_for_width(width, variance_of, max_draws=cap)
    # A draw of a judged document is free: the budget pays for the distinct new ones expected.
    q = design.q(topup_draws).q
    unjudged = arrays.slot_used & (grades < 0)
    labels = float(np.sum(1.0 - (1.0 - q[unjudged]) ** topup_draws))
    budget = max(labels, 1.0) * draw_price(campaign, arrays)
    if campaign.budget_unit == Campaign.BudgetUnit.JUDGMENTS:
        budget = float(math.ceil(budget - 1e-9))
    return TopupPlan(budget=budget, draws=topup_draws, width=predicted)


@dataclass(frozen=True)
class TopupPlan:
    """A top-up planned for an interval width: its budget (the campaign's unit), the draws it
    expects to make (repeats of judged documents are free) and the width predicted after them."""

    budget: float
    draws: int
    width: float


def _completion_affordable(campaign: Campaign, budget: float, staged: StagedRuns) -> None:
    """ValueError, before the run is stored, when the top-up cannot judge the run's documents on
    the topics already drawn (a query-level campaign judges those first)."""
    documents, cost = completion_needed(campaign, staged)
    if cost > budget + 1e-9:
        unit = campaign.get_budget_unit_display().lower()
        raise ValueError(
            f"the run brings {documents} {'document' if documents == 1 else 'documents'} to the topics "
            f"already drawn, which are judged first (a drawn topic counts once all its documents are "
            f"judged): that takes {cost:.4g} {unit}, more than the top-up of {budget:g}; give a top-up "
            f"of at least {math.ceil(cost * 100) / 100:g}"
        )


def _judge_new_pairs(campaign: Campaign) -> None:
    """A judge-assisted campaign whose judge runs (endpoint, lexical) asks it for the new pairs
    (its cache answers the others); the top-up waits for its labels. An uploaded judge's missing
    labels are counted in the arrival's report (`judge_missing`)."""
    if not strategy_for(campaign).uses_judge:
        return
    judge = judge_for_sampling(campaign)
    if judge is None or not judge_kind(judge.kind).runs:
        return
    try:
        judge_run_start(judge)
    except ValueError:
        return  # over the operator's ceilings: the report counts the pairs without a label


def best_certified(campaign: Campaign, pooled: list[str]) -> str:
    """The default reference: among the runs the campaign started with (pooled without arriving)
    and the arrivals certified better or not worse than their own reference, the one with the
    highest current estimate of the campaign's metric that has an interval (enough labels); never
    a run whose verdict is still open. The first pooled run while none qualifies."""
    certified = {
        name
        for name, outcome in Arrival.objects.filter(campaign=campaign).values_list(
            "system__name", "verdict_record__outcome"
        )
        if outcome in ("better", "not_worse")
    }
    arrived = set(Arrival.objects.filter(campaign=campaign).values_list("system__name", flat=True))
    candidates = [name for name in pooled if name not in arrived or name in certified]
    rows = [
        row
        for row in estimates_current(campaign)["systems"]
        if row["value"] is not None and row.get("low") is not None and row.get("high") is not None
    ]
    metric = str(campaign.metric)
    valued = {row["name"]: row["value"] for row in rows if row["metric"] == metric} or {
        row["name"]: row["value"] for row in rows if row["metric"].startswith("DCG")
    }
    known = [name for name in candidates if name in valued]
    if known:
        return max(known, key=valued.__getitem__)
    return candidates[0] if candidates else pooled[0]


REFRESH_DONE_PER_RECOMPUTE = 3
"""Decided arrivals whose stored report a recompute refreshes (those refreshed longest ago): their
figures still move with the campaign's labels, but no longer decide anything."""


@dataclass(frozen=True)
class _Context:
    """What every arrival's report of one campaign reads, read once."""

    campaign: Campaign
    arrays: PoolArrays
    names: list[str]
    estimates: dict[str, Any]
    grades: np.ndarray
    level: Level
    labelling: Callable[[], bool]  # whether the model judge is labelling, asked once if at all


def _context(campaign: Campaign, estimates: dict[str, Any] | None = None) -> _Context:
    arrays = pool_arrays_for(campaign)
    return _Context(
        campaign=campaign,
        arrays=arrays,
        names=list(arrays.system_names),
        estimates=estimates_current(campaign) if estimates is None else estimates,
        grades=judged_grades(campaign, arrays),
        level=strategy_for(campaign).level,
        labelling=_labelling(campaign),
    )


def arrivals_summaries(campaign: Campaign) -> list[dict[str, Any]]:
    """Every arrival's report, oldest first: as the worker stored it at its last recompute
    (`arrival_reports_refresh`), with the verdict as stored now; one computed here only when
    none is stored yet (then stored). Bounded by reading rows, whatever the number of arrivals."""
    arrivals = list(
        campaign.arrivals.select_related("campaign", "system", "reference", "verdict_record").order_by("id")
    )
    missing = [arrival for arrival in arrivals if arrival.report is None]
    if missing:
        context = _context(campaign)
        for arrival in missing:
            _store(arrival, _summary(arrival, context))
    labelling = _labelling(campaign)
    return [_with_verdict(arrival, labelling) for arrival in arrivals]


def arrival_report(arrival: Arrival) -> dict[str, Any]:
    """One arrival's report as `arrivals_summaries` gives it (what a release gate polls)."""
    if arrival.report is None:
        _store(arrival, arrival_summary(arrival))
    return _with_verdict(arrival, _labelling(arrival.campaign))


def arrival_reports_refresh(campaign: Campaign) -> int:
    """Compute and store the reports of the campaign's undecided arrivals, and of the
    REFRESH_DONE_PER_RECOMPUTE decided ones refreshed longest ago (the worker's recompute, after
    the verdicts are read); how many were stored."""
    arrivals = list(
        campaign.arrivals.select_related("campaign", "system", "reference", "verdict_record").order_by("id")
    )
    if not arrivals:
        return 0
    open_ones = [arrival for arrival in arrivals if arrival.report is None or not _decided(arrival)]
    decided = [arrival for arrival in arrivals if arrival not in open_ones]
    decided.sort(key=lambda arrival: arrival.report_at or arrival.created_at)
    chosen = open_ones + decided[:REFRESH_DONE_PER_RECOMPUTE]
    context = _context(campaign)
    for arrival in chosen:
        _store(arrival, _summary(arrival, context))
    return len(chosen)


def _decided(arrival: Arrival) -> bool:
    verdict = getattr(arrival, "verdict_record", None)
    return verdict is not None and bool(verdict.outcome)


def _store(arrival: Arrival, report: dict[str, Any]) -> None:
    arrival.report, arrival.report_at = report, timezone.now()
    Arrival.objects.filter(pk=arrival.pk).update(report=arrival.report, report_at=arrival.report_at)


def _with_verdict(arrival: Arrival, labelling: Callable[[], bool]) -> dict[str, Any]:
    """The stored report with what moves between recomputes read now: the verdict as stored (a
    verdict read after the report was computed shows at once) and, while undecided, the top-up's
    judgments, spending and status (a query each); and when its figures were computed.
    `labelling`: whether the campaign's model judge is labelling (asked once, when needed)."""
    report = dict(arrival.report or {})
    report["horizon_unit"] = horizon_unit(arrival.campaign)
    verdict = getattr(arrival, "verdict_record", None)
    # From the verdict as stored now: a report stored before the verdict (or by an earlier
    # version, without the field) says it too.
    report["difference"] = _with_exact(report.get("difference") or _numbers(None), verdict)
    if _decided(arrival):
        report.update(_verdict_fields(verdict))
        report["status"] = "done"
    else:
        judged, spent = topup_spent(arrival)
        waiting = int(report.get("waiting_items") or 0)
        done = topup_finished(arrival, spent, waiting) or arrival.campaign.status != Campaign.Status.RUNNING
        report.update(topup_judged=judged, topup_spent=spent)
        report["status"] = "done" if done else "labelling" if labelling() else "judging"
    report["report_at"] = arrival.report_at.isoformat() if arrival.report_at else None
    return report


def _with_exact(difference: dict[str, Any], verdict: Verdict | None) -> dict[str, Any]:
    """The difference with `exact`: the value an exact verdict read, beside the sample's estimate
    (as the estimates' rows once every pool item is judged), so the two are never mistaken for
    one another; None otherwise."""
    return {**difference, "exact": verdict_exact_value(verdict)}


def _labelling(campaign: Campaign) -> Callable[[], bool]:
    """Whether the campaign's model judge is still labelling the new pairs, asked at most once."""
    asked: list[bool] = []

    def labelling() -> bool:
        if not asked:
            asked.append(arrival_labelling_judge(campaign) is not None)
        return asked[0]

    return labelling


def _verdict_fields(
    verdict: Verdict | None, band: Interval | None = None, reason: str = ""
) -> dict[str, Any]:
    """The report's verdict part: the plan, the verdict, and the interval it was read from (a
    decided one's stored band, else `band`: the rule's current one)."""
    plan = verdict_summary(verdict) or {}
    if verdict is not None and verdict.outcome:
        band = Interval(
            -math.inf if verdict.low is None else verdict.low,
            math.inf if verdict.high is None else verdict.high,
        )
        reason = verdict.reason
    band = band or Interval(-math.inf, math.inf)
    return {
        "rule": plan.get("rule", ""),
        "question": plan.get("question", "difference"),
        "margin": plan.get("margin", 0.0),
        "horizon": plan.get("horizon"),
        "verdict": plan.get("verdict"),
        "decided_at": plan.get("decided_at"),
        "decided_labels": plan.get("decided_labels"),
        "verdict_reason": reason,
        # The interval the rule reads: its current band (the sequential boundary or the anytime
        # sequence), or the one the verdict was read from; nulls while it cannot be read.
        "sequence": {
            "low": band.low if math.isfinite(band.low) else None,
            "high": band.high if math.isfinite(band.high) else None,
        },
        "topup_returned": plan.get("returned", 0.0),
    }


def arrival_summary(arrival: Arrival, estimates: dict[str, Any] | None = None) -> dict[str, Any]:
    """What the arrival's page and API show, computed now: status, its estimate, the difference
    with the reference and the probability that their order is right, the new items, the top-up,
    and its verdict with the plan it is read by (`sampling.verdicts`). `estimates` is the
    campaign's `estimates_current` when the caller has read it already."""
    return _summary(arrival, _context(arrival.campaign, estimates))


def _summary(arrival: Arrival, context: _Context) -> dict[str, Any]:
    campaign, arrays, names, grades, level = (
        context.campaign,
        context.arrays,
        context.names,
        context.grades,
        context.level,
    )
    own = next(
        (
            row
            for row in context.estimates["systems"]
            if row["name"] == arrival.system.name and row["value"] is not None
        ),
        None,
    )
    reference = arrival.reference.name if arrival.reference is not None else None
    report = _Report()
    if arrival.system.name in names:
        index = names.index(arrival.system.name)
        brought = ranked_slots(arrays, index) & ~_retrieved_before(arrays, arrival.system_id)
        report = _Report(
            new_items=int(brought.sum()),
            new_judged=int((brought & (grades >= 0)).sum()),
            waiting=arrival_waiting(
                campaign, arrays, grades, arrival, level.evaluation_metric(campaign), level.draws_whole_topics
            ),
        )
        if level.draws_whole_topics:
            report.unreachable = _topic_unreachable(campaign, arrays, grades, index, arrival.drawable_after)
        else:
            report.unreachable, report.judge_missing = _item_unreachable(campaign, arrays, grades, index)
        if reference in names:
            report.difference = level.difference_estimate(
                campaign, arrays, grades, index, names.index(reference)
            )
    judged, spent = topup_spent(arrival)
    verdict = getattr(arrival, "verdict_record", None)
    decided = verdict is not None and bool(verdict.outcome)
    state = verdict_state(verdict, arrays, grades) if verdict is not None and not decided else None
    # The open verdict's state says whether the top-up is finished (the same rule, read once).
    done = decided or (state.over if state is not None else topup_finished(arrival, spent, report.waiting))
    status = "labelling" if not done and context.labelling() else "judging"
    band, reason = None, ""
    if verdict is not None and state is not None:
        reading = verdict_reading(verdict, state)
        band, reason = reading.band, reading.reason
    return {
        "id": arrival.pk,
        "system": arrival.system.name,
        "reference": reference,
        "reference_given": arrival.reference_given,
        "created": arrival.created_at.isoformat(),
        "status": "done" if done or campaign.status != Campaign.Status.RUNNING else status,
        "estimate": _numbers(own),
        "difference": _with_exact(_numbers(report.difference), verdict),
        # An unchanged run is the reference itself: no order to be right about.
        "order_right": None
        if verdict is not None and verdict.outcome == Verdict.Outcome.UNCHANGED
        else order_right(report.difference),
        "new_items": report.new_items,
        "new_judged": report.new_judged,
        "waiting_items": report.waiting,
        "topup_budget": arrival.topup_budget,
        "target_width": arrival.target_width,
        "planned_width": arrival.planned_width,
        "topup_judged": judged,
        "topup_spent": spent,
        "unreachable_share": report.unreachable,
        "judge_missing": report.judge_missing,
        **_verdict_fields(verdict, band, reason),
    }


@dataclass
class _Report:
    """The level's part of an arrival's summary."""

    new_items: int = 0
    new_judged: int = 0
    waiting: int = 0
    unreachable: float | None = None
    judge_missing: int | None = None
    difference: dict[str, Any] | None = None


def _item_unreachable(
    campaign: Campaign, arrays: PoolArrays, grades: np.ndarray, index: int
) -> tuple[float, int | None]:
    """Items drawn one by one: the share of its metric's weight no draw could reach yet, and the
    judge's missing labels of its documents (None without a judge)."""
    pool = pool_from_arrays(arrays)
    strategy = strategy_for(campaign)
    metric = strategy.level.evaluation_metric(campaign)
    weights = system_weights(pool, metric, index)
    draws = counted_item_draws(campaign, arrays, grades)
    reached = np.zeros(arrays.slot_used.shape, dtype=bool)
    for boundary in np.unique(arrays.drawable_after[weights > 0]):
        if (draws.order > boundary).any():
            reached |= arrays.drawable_after == boundary
    total = float(weights.sum())
    judge_missing = None
    if strategy.uses_judge:
        # Its pool documents the judge has no label for (an uploaded judge's to upload).
        classes = pool_judge_classes(judge_for_sampling(campaign), arrays)
        judge_missing = int(((weights > 0) & (classes == MISSING)).sum())
    return (float(weights[~reached].sum() / total) if total > 0 else 0.0), judge_missing


def _topic_unreachable(
    campaign: Campaign, arrays: PoolArrays, grades: np.ndarray, index: int, drawable_after: int
) -> float:
    """Topics drawn whole: the share of its documents on the topics drawn before it arrived that
    are not judged yet (those topics wait until they are)."""
    drawn = topics_drawn_by(campaign, arrays, drawable_after)
    ranked = ranked_slots(arrays, index)
    unjudged = ranked & (grades < 0) & drawn[:, None]
    on_drawn = int((ranked & drawn[:, None]).sum())
    return float(unjudged.sum() / on_drawn) if on_drawn else 0.0


def arrivals_json(campaign: Campaign) -> str:
    """Every arrival of the campaign with its report, as JSON text (the offline ZIP's)."""
    boundaries = dict(campaign.arrivals.values_list("id", "drawable_after"))
    rows = [{**row, "drawable_after": boundaries[row["id"]]} for row in arrivals_summaries(campaign)]
    return json.dumps(rows, indent=1) + "\n"


def _retrieved_before(arrays: PoolArrays, system_id: int) -> np.ndarray:
    """The pool slots some run pooled before `system_id` ranks (within the pool depth)."""
    covered = np.zeros(arrays.slot_used.shape, dtype=bool)
    for index, other in enumerate(arrays.system_ids):
        if other < system_id:
            covered |= ranked_slots(arrays, index)
    return covered


def _numbers(row: dict[str, Any] | None) -> dict[str, Any]:
    """The estimate's numbers; `reliable` False when too few topics or draws count for an
    interval (low and high are then the bounds that hold at any n, `reliable_from` says how many)."""
    keys = ("value", "se", "low", "high", "reliable", "reliable_from")
    return {key: (None if row is None else row.get(key)) for key in keys}


__all__ = [
    "LEVEL_REFUSAL",
    "TOPUP_PLAN_MAX_DRAWS",
    "TopupPlan",
    "arrival_add",
    "arrival_report",
    "arrival_reports_refresh",
    "arrival_summary",
    "best_certified",
    "arrivals_json",
    "arrivals_summaries",
    "topup_plan",
]
