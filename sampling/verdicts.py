"""Release verdicts in the app: of each run that arrives (its difference with its reference) and
of a two-system campaign (its compared pair), stored in one table (`Verdict`) and read by the
numeric core's one reading (`estimation.sampling.verdicts`).

A verdict's plan (rule, question, margin, horizon) is fixed before the data it judges: an
arrival's when it is submitted (its own, or the campaign's defaults), a two-system campaign's
from its settings until its first judgment (`campaign_verdict_sync`; a change after that is
refused, `campaign_verdict_change_problem`). The horizon is the planned top-up in labels (the
top-up's budget, or a two-system campaign's, over the price of a label: documents judged), and a
raised budget does not move it.

`verdicts_update` runs in the graded mode's recompute before new draws are made. It reads every
open verdict after each label, retrospectively: the looks are the difference's estimate after
each top-up draw that brought a label, over the draws that all count
(`sampling.difference_terms`), so a verdict the sequence reached at label k is stored at label k
(`decided_labels`) whenever the recompute runs, and labels judged meanwhile change nothing. A
peeking rule's verdict before the top-up is spent stops it: idle queued draws are dropped and
what the top-up will not spend (beyond the tasks still leased) is taken off the campaign's
budget, so spent + returned adds up to the top-up. When the top-up can take no more (spent, or
the campaign stopped drawing with none of its tasks open) an undecided verdict is ``not_settled``
with the reason; the fixed rule is read then, unless the budget was cut before its horizon (a
cut must not become an early fixed reading: not settled). No verdict is taken while documents
the difference depends on wait for a draw of their own, or (topics drawn whole) for the judgments
of topics drawn before the run arrived (`sampling.arrival_design.arrival_waiting`); while any task
is open those may still come, so the top-up is not over.
Once every document the difference weighs is judged (a small pool, or a top-up larger than it),
the difference is known exactly and decides at once, whatever the rule (`exact_difference`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
from django.db import transaction
from django.utils import timezone

from estimation.sampling.draws import STOP_BUDGET, STOP_EXHAUSTED
from estimation.sampling.sequences import UNREAD, Interval
from estimation.sampling.verdicts import (
    NOT_SETTLED,
    UNCHANGED,
    Look,
    LookArrays,
    Reading,
    VerdictPlan,
    first_verdict,
    stratified_look_arrays,
)
from labeling.models import Arrival, Campaign, Judgment, Task, Verdict
from labeling.selectors import campaign_spent, verdict_summary
from sampling.arrival_design import arrival_waiting, ranked_slots, topup_spent
from sampling.draws import draw_price, draws_drop_idle, tasks_open_count
from sampling.focus import focus_indices
from sampling.label_model import judged_grades
from sampling.level_estimates import topic_metric_values
from sampling.pool_arrays import PoolArrays, pool_arrays_for
from sampling.served import engine_serves
from sampling.strategies import Level, strategy_for
from webhooks.events import event_emit, event_keys_recorded, register_event

BUDGET_SLACK = 1e-9

register_event(
    "arrival.decided",
    "a run that arrived got its verdict, with the plan it was read by",
    emitted_for=lambda campaign: engine_serves(campaign) and strategy_for(campaign).level.takes_arrivals,
)
register_event(
    "arrival.topup_spent",
    "a run's human top-up was spent",
    emitted_for=lambda campaign: engine_serves(campaign) and strategy_for(campaign).level.takes_arrivals,
)
register_event(
    "campaign.decided",
    "a two-system campaign got its verdict, with its plan",
    emitted_for=lambda campaign: engine_serves(campaign) and campaign.goal == Campaign.Goal.DIFFERENCE,
)


def verdict_plan(verdict: Verdict) -> VerdictPlan:
    return VerdictPlan(
        rule=verdict.rule,
        horizon=max(float(verdict.horizon), 1.0),
        question=verdict.question,
        margin=float(verdict.margin),
        alpha=float(verdict.alpha),
    )


def plan_problem(level: Level, rule: str, question: str, margin: float) -> str | None:
    """Why a verdict cannot be read by this rule and question on this level (None when it can):
    the plan's own checks (`VerdictPlan`), and a level that reads only once."""
    try:
        VerdictPlan(rule=rule, question=question, margin=margin)
    except (ValueError, TypeError) as error:
        return str(error)
    if rule != Campaign.VerdictRule.FIXED and not level.sequential_verdicts:
        return "this campaign's strategy reads its verdicts once (the fixed rule): its draws give no looks"
    return None


def identical_rankings(arrays: PoolArrays, a: int, b: int, cutoff: int) -> bool:
    """Whether pooled systems a and b rank the same documents at every rank the metric weighs, on
    every topic: their difference is 0 whatever the grades."""
    depth = min(int(cutoff), arrays.rankings.shape[2])
    return bool(np.array_equal(arrays.rankings[a][:, :depth], arrays.rankings[b][:, :depth]))


def horizon_unit(campaign: Campaign) -> str:
    """What a verdict's horizon and its looks count: "topics" where the level draws whole topics
    (a look after each drawn topic), else "labels"."""
    return "topics" if strategy_for(campaign).level.draws_whole_topics else "labels"


def planned_labels(campaign: Campaign, arrays: PoolArrays, grades: np.ndarray, budget: float) -> float:
    """The labels `budget` pays for (documents judged; whole topics where the level draws
    them), at most what the pool holds unjudged: a budget larger than the pool can use ends when
    it is judged, so the sequential rule's horizon is that end."""
    unjudged = arrays.slot_used & (grades < 0)
    price = draw_price(campaign, arrays)
    if strategy_for(campaign).level.draws_whole_topics:
        per_topic = unjudged.sum(axis=1)
        open_topics = per_topic[per_topic > 0]
        if not open_topics.size:
            return 1.0
        return float(max(min(budget / (price * float(open_topics.mean())), open_topics.size), 1.0))
    return float(max(min(budget / price, int(unjudged.sum())), 1.0))


def arrival_verdict_open(
    arrival: Arrival, *, rule: str, question: str, margin: float, horizon: float, unchanged: bool
) -> Verdict:
    """The arrival's verdict with its plan, fixed now (it is submitted with it): `horizon` is the
    labels its top-up pays for. An identical release is decided at once as ``unchanged``, with no
    top-up."""
    now = timezone.now()
    verdict = Verdict.objects.create(
        campaign=arrival.campaign,
        arrival=arrival,
        first=arrival.system.name,
        second=arrival.reference.name if arrival.reference else "",
        rule=rule,
        question=question,
        margin=margin,
        horizon=max(horizon, 1.0),
        budget=arrival.topup_budget,
        plan_fixed_at=now,
    )
    if unchanged:
        _unchanged(verdict, now)
    return verdict


def _unchanged(verdict: Verdict, now: Any) -> None:
    Verdict.objects.filter(pk=verdict.pk).update(
        outcome=UNCHANGED,
        decided_at=now,
        decided_draws=0,
        decided_labels=0,
        value=0.0,
        low=0.0,
        high=0.0,
        reason="the same documents at every rank the metric weighs, on every topic: the difference is 0",
    )
    verdict.refresh_from_db()


def campaign_verdict_sync(campaign: Campaign) -> Verdict | None:
    """A two-system campaign's verdict plan from its settings, its pair and its budget, while no
    judgment fixed it (None for other goals, or before two systems are pooled); an identical pair
    is decided at once as ``unchanged``."""
    if campaign.goal != Campaign.Goal.DIFFERENCE:
        return None
    verdict = Verdict.objects.filter(campaign=campaign, arrival__isnull=True).first()
    if verdict is not None and (verdict.plan_fixed_at is not None or verdict.outcome):
        return verdict
    first_judged = _first_judgment_at(campaign)
    if verdict is not None and first_judged is not None:
        # A judgment counts: the plan is fixed as it was before it, whatever changed since.
        Verdict.objects.filter(pk=verdict.pk, plan_fixed_at__isnull=True).update(plan_fixed_at=first_judged)
        verdict.refresh_from_db()
        return verdict
    arrays = pool_arrays_for(campaign)
    focus = focus_indices(campaign, arrays)
    if len(focus) != 2:
        return None
    names = [arrays.system_names[index] for index in focus]
    plan = {
        "first": names[0],
        "second": names[1],
        "rule": campaign.verdict_rule,
        "question": campaign.verdict_question,
        "margin": campaign.verdict_margin,
        "horizon": planned_labels(campaign, arrays, judged_grades(campaign, arrays), campaign.budget),
        "budget": campaign.budget,
    }
    if verdict is None:
        verdict = Verdict.objects.create(campaign=campaign, **plan)
    else:
        Verdict.objects.filter(pk=verdict.pk).update(**plan)
        verdict.refresh_from_db()
    level = strategy_for(campaign).level
    if identical_rankings(arrays, focus[0], focus[1], level.evaluation_metric(campaign).cutoff):
        _unchanged(verdict, timezone.now())
    return verdict


VERDICT_SETTINGS = ("verdict_rule", "verdict_question", "verdict_margin", "focus_systems")
"""The campaign settings a two-system campaign's verdict is read by (its pair included)."""


def _first_judgment_at(campaign: Campaign) -> Any:
    """When the campaign's first assessor judgment was stored (None before any)."""
    judgments = Judgment.objects.filter(campaign=campaign, source=Judgment.Source.ASSESSOR).order_by("id")
    return judgments.values_list("created_at", flat=True).first()


def campaign_verdict_change_problem(campaign: Campaign, stored: Campaign) -> str | None:
    """Why the campaign's verdict settings cannot change from `stored` to `campaign`'s (None when
    they may): a two-system campaign's are fixed once a judgment counts towards its verdict."""
    changed = [name for name in VERDICT_SETTINGS if getattr(campaign, name) != getattr(stored, name)]
    if not changed or stored.goal != Campaign.Goal.DIFFERENCE:
        return None
    if _first_judgment_at(stored) is None:
        return None
    plan = Verdict.objects.filter(campaign=stored, arrival__isnull=True).first()
    unit = horizon_unit(stored)
    fixed = f" ({plan.rule}, horizon {plan.horizon:.0f} {unit})" if plan is not None else ""
    return (
        f"{', '.join(changed)} cannot change once judgments count towards the campaign's verdict: its "
        f"rule, question, margin and pair were fixed before the data{fixed}; start a new campaign "
        "(Clone) to read it another way"
    )


@dataclass(frozen=True)
class VerdictState:
    """What a verdict reads now: its looks (after each top-up draw that brought a label), whether
    its top-up can take no more, whether the budget was cut before its horizon, what it spent,
    documents it depends on still waiting (for a draw, or a drawn topic's judgments), and the
    difference itself when every document it weighs is judged (None otherwise)."""

    looks: LookArrays
    over: bool
    cut: bool
    spent: float
    waiting: int
    exact: float | None = None
    # The top-up's (or the two-system campaign's) assessor judgments so far.
    judged: int = 0
    # Topics drawn whole: the waiting documents wait for judgments of topics drawn before the
    # run arrived, not for a draw of their own.
    waits_for_topics: bool = False


def exact_difference(
    campaign: Campaign, arrays: PoolArrays, grades: np.ndarray, a: int, b: int
) -> float | None:
    """Pooled system a minus b when every document the metric weighs in either ranking is judged
    with no task of it open (every pool document of those topics, for nDCG's ideal): the mean over
    the topics of the metric's difference, with no sampling error. None otherwise."""
    metric = strategy_for(campaign).level.evaluation_metric(campaign)
    weighed = ranked_slots(arrays, a, metric.cutoff) | ranked_slots(arrays, b, metric.cutoff)
    if metric.name == "nDCG":
        topics_weighed = np.asarray(weighed.any(axis=1))
        weighed |= arrays.slot_used & topics_weighed[:, None]
    if (grades[weighed] < 0).any():
        return None
    open_tasks = Task.objects.filter(campaign=campaign, answered_at__isnull=True)
    open_topic, open_slot = arrays.locate(
        np.array(open_tasks.values_list("topic_id", flat=True), dtype=np.int64),
        np.array(open_tasks.values_list("document_id", flat=True), dtype=np.int64),
    )
    inside = open_topic >= 0
    if weighed[open_topic[inside], open_slot[inside]].any():
        return None
    difference = topic_metric_values(arrays, grades, metric, a) - topic_metric_values(
        arrays, grades, metric, b
    )
    return float(difference.mean())


def verdict_state(verdict: Verdict, arrays: PoolArrays, grades: np.ndarray) -> VerdictState | None:
    """None when its runs are not (or no longer) both pooled."""
    campaign = verdict.campaign
    names = list(arrays.system_names)
    if verdict.first not in names or verdict.second not in names:
        return None
    first, second = names.index(verdict.first), names.index(verdict.second)
    level = strategy_for(campaign).level
    terms = level.difference_terms(campaign, arrays, grades, first, second)
    after = verdict.arrival.drawable_after if verdict.arrival is not None else 0
    topup_start = int((terms.order <= after).sum())
    looks = stratified_look_arrays(terms.strata, topup_start, terms.new_labels(after))
    # Read after every label: the looks at the draws that brought one.
    brought = np.flatnonzero(np.diff(np.concatenate([[0], looks.labels])) > 0)
    looks = looks.at(brought)
    if verdict.arrival is not None:
        judged, spent = topup_spent(verdict.arrival)
        waiting = arrival_waiting(
            campaign,
            arrays,
            grades,
            verdict.arrival,
            level.evaluation_metric(campaign),
            level.draws_whole_topics,
        )
        over = topup_finished(verdict.arrival, spent, waiting)
    else:
        judged, spent = campaign_spent(campaign)
        over = _drawing_stopped(campaign) and tasks_open_count(campaign) == 0
        waiting = 0
    cut = over and campaign.blocked == STOP_BUDGET and spent < verdict.budget - BUDGET_SLACK
    exact = exact_difference(campaign, arrays, grades, first, second)
    return VerdictState(
        looks, over, cut, spent, waiting, exact, waits_for_topics=level.draws_whole_topics, judged=judged
    )


def verdict_reading(verdict: Verdict, state: VerdictState) -> Reading:
    """The plan's reading of the state: the first look that decides, or not settled once over
    (the fixed rule: not settled when the budget was cut before its horizon)."""
    plan = verdict_plan(verdict)
    if state.exact is not None:
        # A look that decided before every document was judged stands (it was valid then); else
        # the exact value decides.
        reading = first_verdict(plan, state.looks.looks(), over=False)
        if reading.verdict:
            return reading
        return _exact_reading(plan, state)
    if state.cut and plan.rule == Campaign.VerdictRule.FIXED:
        reason = (
            f"the budget was cut before the horizon (spent {state.spent:g} of {verdict.budget:g}): the "
            "fixed rule reads only at its horizon"
        )
        return Reading(NOT_SETTLED, UNREAD, None, reason)
    if state.waiting:
        if state.waits_for_topics:
            reason = (
                f"{state.waiting} of its documents on topics drawn before it arrived are not judged "
                "yet (a drawn topic counts once all its documents are): no verdict until they are"
            )
        else:
            reason = (
                f"{state.waiting} of the documents it depends on wait for a draw of their own: no "
                "verdict until they have one"
            )
        return Reading(NOT_SETTLED if state.over else "", UNREAD, None, reason)
    return first_verdict(plan, state.looks.looks(), over=state.over)


# How an exact reading's reason starts (`verdict_exact_value` recognises one by it).
EXACT_REASON = "every document the difference weighs is judged"


def _exact_reading(plan: VerdictPlan, state: VerdictState) -> Reading:
    """Every document the difference weighs is judged: its value is known, and any rule's
    verdict is its side of the threshold (not settled exactly on it). It is read at the labels
    judged so far: the looks count only the top-up draws' labels, and the judgments that completed
    topics drawn before the run arrived (topics drawn whole) are none of those."""
    value = float(state.exact)  # type: ignore[arg-type]  # set by the caller's check
    labels = max(int(state.looks.labels[-1]) if state.looks.labels.size else 0, state.judged)
    look = Look(value, 0.0, int(state.looks.draws[-1]) if state.looks.draws.size else 0, labels=labels)
    above, below = plan.verdict_names
    decided = above if value > plan.threshold else below if value < plan.threshold else NOT_SETTLED
    reason = f"{EXACT_REASON}: it is exactly {value:+.4g}, no sampling error"
    return Reading(decided, Interval(value, value), look, reason)


def verdict_exact_value(verdict: Verdict | None) -> float | None:
    """The difference a decided verdict read with no sampling error (`_exact_reading`: its band is
    that one value, and its reason says so: a look's band of no width is no exact value), else
    None."""
    if verdict is None or not verdict.outcome or verdict.low is None or verdict.low != verdict.high:
        return None
    return float(verdict.low) if verdict.reason.startswith(EXACT_REASON) else None


def topup_over(arrival: Arrival, spent: float) -> bool:
    """Whether the arrival's top-up can take no more judgments: spent, or the campaign stopped
    drawing (its budget, or every pool document judged; or finished) with none of its tasks
    open. A top-up larger than the pool can use ends there, and its verdict is read then."""
    if spent >= arrival.topup_budget - BUDGET_SLACK:
        return True
    open_tasks = Task.objects.filter(arrival=arrival, answered_at__isnull=True)
    return _drawing_stopped(arrival.campaign) and not open_tasks.exists()


def topup_finished(arrival: Arrival, spent: float, waiting: int) -> bool:
    """`topup_over`, and not while tasks are open that may judge the `waiting` documents the
    arrival's estimate depends on (on topics drawn before it arrived, when topics are drawn whole):
    their answers complete it, so neither the verdict nor the report is final before them."""
    return topup_over(arrival, spent) and not (waiting and tasks_open_count(arrival.campaign))


def _drawing_stopped(campaign: Campaign) -> bool:
    """The campaign draws no more: its budget, or every pool document judged, or finished."""
    return campaign.blocked in (STOP_BUDGET, STOP_EXHAUSTED) or campaign.status == Campaign.Status.DONE


def verdicts_update(campaign: Campaign) -> list[Verdict]:
    """Read every open verdict of the campaign (its arrivals' and its own) and store those that
    decide now; returns them. The two-system campaign's plan is fixed at its first judgment."""
    campaign = Campaign.objects.get(pk=campaign.pk)  # its pool version and budget as stored now
    campaign_verdict_sync(campaign)
    open_verdicts = list(
        Verdict.objects.filter(campaign=campaign, outcome="").select_related(
            "campaign", "arrival", "arrival__system"
        )
    )
    if not open_verdicts:
        return []
    arrays = pool_arrays_for(campaign)
    grades = judged_grades(campaign, arrays)
    decided = []
    for verdict in open_verdicts:
        if verdict.plan_fixed_at is None:  # no judgment yet (`campaign_verdict_sync` fixes it at the first)
            continue
        state = verdict_state(verdict, arrays, grades)
        if state is None:
            continue
        reading = verdict_reading(verdict, state)
        if reading.verdict and _store(verdict, reading, state, arrays):
            decided.append(verdict)
    return decided


@transaction.atomic
def _store(verdict: Verdict, reading: Reading, state: VerdictState, arrays: PoolArrays) -> bool:
    """Store the reading once (a concurrent recompute may have stored it first). A verdict before
    its top-up is over stops it: idle draws go, and the part of its budget that no leased task
    will spend is taken off the campaign's."""
    campaign = Campaign.objects.select_for_update(no_key=True).get(pk=verdict.campaign_id)
    look = reading.look
    stored = Verdict.objects.filter(pk=verdict.pk, outcome="").update(
        outcome=reading.verdict,
        decided_at=timezone.now(),
        decided_draws=look.draws if look is not None else None,
        decided_labels=look.labels if look is not None else None,
        value=_finite(look.value) if look is not None else None,
        low=_finite(reading.band.low),
        high=_finite(reading.band.high),
        reason=reading.reason[:400],
    )
    if not stored:
        return False
    # Before the top-up is over, or when it is over because every pool document is judged (a
    # top-up larger than the pool), what it will not spend goes back; whether the recompute that
    # reads the verdict runs before or after the campaign notices the pool is used up must not
    # change the figures. A top-up spent, or cut by the coordinator, has nothing to give back.
    if not state.over or campaign.blocked == STOP_EXHAUSTED:
        arrival_id = verdict.arrival_id
        draws_drop_idle(campaign, arrival_id)
        leased = Task.objects.filter(campaign=campaign, answered_at__isnull=True)
        if arrival_id is not None:
            leased = leased.filter(arrival_id=arrival_id)
        price = draw_price(campaign, arrays) / max(campaign.overlap, 1)
        still = leased.count() * price
        if arrival_id is not None:
            returned = max(verdict.budget - state.spent - still, 0.0)
        else:
            returned = max(campaign.budget - state.spent - still, 0.0)
        if returned > 0:
            campaign.budget = max(campaign.budget - returned, 0.0)
            campaign.save(update_fields=["budget", "updated_at"])
            Verdict.objects.filter(pk=verdict.pk).update(returned=returned)
    verdict.refresh_from_db()
    return True


def _finite(number: float) -> float | None:
    return float(number) if math.isfinite(number) else None


def verdict_events_emit(campaign: Campaign, decided: list[Verdict]) -> None:
    """Webhook events: ``arrival.decided`` or ``campaign.decided`` for each verdict just decided
    (with its plan: rule, question, margin, horizon), and ``arrival.topup_spent`` once for each
    arrival whose top-up is over (each recorded once)."""
    for verdict in decided:
        summary = verdict_summary(verdict) or {}
        if verdict.arrival is not None:
            event_emit(
                campaign,
                "arrival.decided",
                f"arrival.decided:{verdict.arrival_id}",
                {
                    "arrival": verdict.arrival_id,
                    "system": verdict.first,
                    "reference": verdict.second,
                    **summary,
                },
            )
        else:
            count, _ = campaign_spent(campaign)
            event_emit(
                campaign,
                "campaign.decided",
                f"campaign.decided:{campaign.pk}",
                {
                    "systems": [verdict.first, verdict.second],
                    "judgments": count,
                    **summary,
                    "budget_returned": verdict.returned,  # the name events had before
                },
            )
    if not campaign.arrivals.exists():
        return
    told = event_keys_recorded(campaign, "arrival.topup_spent")
    for arrival in campaign.arrivals.select_related("system", "verdict_record"):
        key = f"arrival.topup_spent:{arrival.pk}"
        if key in told:
            continue
        judged, spent = topup_spent(arrival)
        record = getattr(arrival, "verdict_record", None)
        if (record is not None and record.outcome) or topup_over(arrival, spent):
            event_emit(
                campaign,
                "arrival.topup_spent",
                key,
                {"arrival": arrival.pk, "system": arrival.system.name, "judgments": judged, "spent": spent},
            )


__all__ = [
    "EXACT_REASON",
    "VERDICT_SETTINGS",
    "VerdictState",
    "arrival_verdict_open",
    "campaign_verdict_change_problem",
    "campaign_verdict_sync",
    "horizon_unit",
    "identical_rankings",
    "plan_problem",
    "topup_finished",
    "topup_over",
    "verdict_events_emit",
    "verdict_exact_value",
    "verdict_plan",
    "verdict_reading",
    "verdict_state",
    "verdicts_update",
]
