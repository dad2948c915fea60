"""Release verdicts of the runs that arrive (`estimation.sampling.sequences`): better, worse or
not settled for the difference with the reference, under the campaign's rule.

- ``fixed``: read once, when the top-up is spent, from the difference's 95 % interval.
- ``anytime``: read at every recompute (after every label) from the 95 % confidence sequence,
  once 20 top-up draws count; the first time it excludes 0 the verdict is taken, the arrival's
  top-up stops and what is left of it is taken off the campaign's budget. A top-up spent
  without the sequence excluding 0 is not settled. Campaigns that draw whole topics read their
  arrivals by the fixed rule (the sequence is built on the top-up's draws of single documents).

Called by the graded mode's recompute (`graded.modes`), before new draws are made, so a decided
arrival's top-up is not drawn further.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from django.db import transaction
from django.utils import timezone

from estimation.sampling.draws import STOP_BUDGET, STOP_EXHAUSTED
from estimation.sampling.sequences import Interval, anytime_interval, verdict
from labeling.models import Arrival, Campaign, Draw, Task, WebhookEvent
from labeling.selectors import campaign_spent
from labeling.services.webhooks import event_emit
from sampling.arrival_design import topup_spent
from sampling.draws import draw_price, tasks_open_count
from sampling.focus import focus_indices
from sampling.label_model import judged_grades
from sampling.level_estimates import counted_item_draws
from sampling.pool_arrays import PoolArrays, pool_arrays_for
from sampling.strategies import strategy_for


@dataclass(frozen=True)
class VerdictReading:
    """What an undecided rule reads now: the rule, the interval it reads (infinite when it is
    not read yet), and the verdict it would take now ("" for none yet)."""

    rule: str
    band: Interval
    verdict: str


def arrival_rule(campaign: Campaign) -> str:
    """The rule the campaign's arrivals are read by (fixed where topics are drawn whole)."""
    if strategy_for(campaign).level.draw_kind == Draw.Kind.QUERY:
        return Campaign.VerdictRule.FIXED
    return str(campaign.verdict_rule)


def rule_reading(
    rule: str, difference: dict[str, Any] | None, draws: int, planned: float, over: bool
) -> VerdictReading:
    """The rule's reading of a difference row now: anytime reads the sequence after `draws` of
    the `planned` draws, and says not settled only when no more can come (`over`); fixed reads
    the 95 % interval once `over` (not settled when the row has no interval)."""
    row = difference or {}
    band = Interval(-np.inf, np.inf)
    if rule == Campaign.VerdictRule.ANYTIME:
        if row.get("value") is not None and row.get("se") is not None:
            band = anytime_interval(row["value"], row["se"], draws, max(planned, 1.0))
        decided = verdict(*band)
        if decided == Arrival.Verdict.NOT_SETTLED and not over:
            decided = ""
        return VerdictReading(rule, band, decided)
    if not over:
        return VerdictReading(rule, band, "")
    low, high = row.get("low"), row.get("high")
    if low is None or high is None:
        return VerdictReading(rule, band, Arrival.Verdict.NOT_SETTLED)
    return VerdictReading(rule, Interval(low, high), verdict(low, high))


def verdict_reading(
    arrival: Arrival, arrays: PoolArrays, grades: np.ndarray, difference: dict[str, Any] | None, spent: bool
) -> VerdictReading:
    """The arrival's rule's reading of `difference` (its difference row) now; `spent` says whether
    its top-up can take no more judgments. The anytime sequence counts the top-up's draws."""
    campaign = arrival.campaign
    rule = arrival_rule(campaign)
    draws = 0
    if rule == Campaign.VerdictRule.ANYTIME:
        counted = counted_item_draws(campaign, arrays, grades)
        draws = int((counted.order > arrival.drawable_after).sum())
    return rule_reading(rule, difference, draws, arrival.topup_draws, spent)


def _drawing_stopped(campaign: Campaign) -> bool:
    """The campaign draws no more: its budget, or every pool document judged, or finished."""
    return campaign.blocked in (STOP_BUDGET, STOP_EXHAUSTED) or campaign.status == Campaign.Status.DONE


def arrival_verdicts_update(campaign: Campaign) -> list[Arrival]:
    """Decide every undecided arrival whose rule decides now; returns the arrivals decided. An
    anytime verdict before the top-up is spent gives the rest of the top-up back."""
    undecided = list(campaign.arrivals.filter(verdict="").select_related("campaign", "system", "reference"))
    if not undecided:
        return []
    arrays = pool_arrays_for(campaign)
    names = list(arrays.system_names)
    grades = judged_grades(campaign, arrays)
    level = strategy_for(campaign).level
    decided = []
    for arrival in undecided:
        reference = arrival.reference.name if arrival.reference is not None else None
        if reference not in names or arrival.system.name not in names:
            continue
        difference = level.difference_estimate(
            campaign, arrays, grades, names.index(arrival.system.name), names.index(reference)
        )
        judged, spent = topup_spent(arrival)
        reading = verdict_reading(arrival, arrays, grades, difference, topup_over(arrival, spent))
        if reading.verdict and _decide(arrival, reading, spent):
            decided.append(arrival)
    return decided


def topup_over(arrival: Arrival, spent: float) -> bool:
    """Whether the arrival's top-up can take no more judgments: spent, or the campaign stopped
    drawing (its budget, or every pool document judged; or finished) with none of its tasks
    open. A top-up larger than the pool can use ends there, and its verdict is read then."""
    if spent >= arrival.topup_budget:
        return True
    open_tasks = Task.objects.filter(arrival=arrival, answered_at__isnull=True)
    return _drawing_stopped(arrival.campaign) and not open_tasks.exists()


@transaction.atomic
def _decide(arrival: Arrival, reading: VerdictReading, spent: float) -> bool:
    """Store the verdict once (a concurrent recompute may have stored it first); an early one
    gives the unspent top-up back to the campaign's budget."""
    campaign = Campaign.objects.select_for_update(no_key=True).get(pk=arrival.campaign_id)
    returned = max(arrival.topup_budget - spent, 0.0)
    stored = Arrival.objects.filter(pk=arrival.pk, verdict="").update(
        verdict=reading.verdict,
        rule=reading.rule,
        decided_at=timezone.now(),
        decided_low=_finite(reading.band.low),
        decided_high=_finite(reading.band.high),
        topup_returned=returned,
    )
    if not stored:
        return False
    if returned > 0:
        campaign.budget = max(campaign.budget - returned, 0.0)
        campaign.save(update_fields=["budget", "updated_at"])
    arrival.refresh_from_db()
    return True


def _finite(number: float) -> float | None:
    return float(number) if np.isfinite(number) else None


def campaign_verdict_update(campaign: Campaign) -> bool:
    """Decide a two-system campaign (goal: the difference of two systems) by its rule, as an
    arrival is decided: fixed when the budget is spent (or the pool is), anytime at the first
    look at the sequence that excludes 0, the rest of the budget then taken off. True when it was
    decided now (the ``campaign.decided`` webhook event is recorded)."""
    if campaign.goal != Campaign.Goal.DIFFERENCE or campaign.verdict:
        return False
    arrays = pool_arrays_for(campaign)
    focus = focus_indices(campaign, arrays)
    if len(focus) != 2:
        return False
    grades = judged_grades(campaign, arrays)
    level = strategy_for(campaign).level
    difference = level.difference_estimate(campaign, arrays, grades, focus[0], focus[1])
    count, spent = campaign_spent(campaign)
    over = _drawing_stopped(campaign) and tasks_open_count(campaign) == 0
    rule = arrival_rule(campaign)
    planned = campaign.budget / draw_price(campaign, arrays)
    reading = rule_reading(rule, difference, int(difference.get("n") or 0), planned, over)
    decided, band = reading.verdict, reading.band
    if not decided:
        return False
    with transaction.atomic():
        locked = Campaign.objects.select_for_update(no_key=True).get(pk=campaign.pk)
        if locked.verdict:
            return False
        returned = 0.0 if over else max(locked.budget - spent, 0.0)
        locked.verdict, locked.verdict_decided_at = decided, timezone.now()
        locked.verdict_low, locked.verdict_high = _finite(band.low), _finite(band.high)
        locked.verdict_returned = returned
        locked.budget -= returned
        changed = ["verdict", "verdict_decided_at", "verdict_low", "verdict_high", "verdict_returned"]
        locked.save(update_fields=[*changed, "budget", "updated_at"])
        names = [arrays.system_names[index] for index in focus]
        event_emit(
            locked,
            "campaign.decided",
            f"campaign.decided:{locked.pk}",
            {
                "systems": names,
                "verdict": decided,
                "rule": rule,
                "low": locked.verdict_low,
                "high": locked.verdict_high,
                "judgments": count,
                "budget_returned": returned,
            },
        )
    return True


def arrival_events_emit(campaign: Campaign, decided: list[Arrival]) -> None:
    """Webhook events of the arrivals: ``arrival.decided`` for each one just decided, and
    ``arrival.topup_spent`` once for each whose top-up is spent (each recorded once)."""
    for arrival in decided:
        event_emit(
            campaign,
            "arrival.decided",
            f"arrival.decided:{arrival.pk}",
            {
                "arrival": arrival.pk,
                "system": arrival.system.name,
                "reference": arrival.reference.name if arrival.reference else None,
                "verdict": arrival.verdict,
                "rule": arrival.rule,
                "decided_at": arrival.decided_at.isoformat() if arrival.decided_at else None,
                "low": arrival.decided_low,
                "high": arrival.decided_high,
                "topup_returned": arrival.topup_returned,
            },
        )
    recorded = WebhookEvent.objects.filter(campaign=campaign, name="arrival.topup_spent")
    told = set(recorded.values_list("key", flat=True))
    for arrival in campaign.arrivals.select_related("system"):
        key = f"arrival.topup_spent:{arrival.pk}"
        if key in told:
            continue
        judged, spent = topup_spent(arrival)
        if arrival.verdict or topup_over(arrival, spent):
            event_emit(
                campaign,
                "arrival.topup_spent",
                key,
                {"arrival": arrival.pk, "system": arrival.system.name, "judgments": judged, "spent": spent},
            )


__all__ = [
    "VerdictReading",
    "arrival_events_emit",
    "arrival_rule",
    "arrival_verdicts_update",
    "campaign_verdict_update",
    "rule_reading",
    "topup_over",
    "verdict_reading",
]
