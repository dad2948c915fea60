"""Runs that arrive in a living campaign: pooled after draws were made, estimated by strata, and
given a human top-up where their difference with a reference is uncertain.

`arrival_add` pools the run (its new items keep the order of the last draw before them,
`PoolItem.drawable_after`), records the arrival with its reference and top-up budget, raises the
campaign's budget by the top-up and reopens a finished campaign. While the top-up is not spent,
the item-level strategies draw from the top-up design (`arrival_topup_design`,
`estimation.sampling.arrivals.topup_distribution`): |a_R - a_B| s, the old strata scaled by
the top-up's share of their draws, the defensive floor over every pooled run. The estimates of
every run stay unbiased: the strata keep each item's share estimated from the draws that could
pick it (`sampling.level_estimates.CountedDraws.strata`). Method notes: docs/statistics.md, "A run
that arrives". Query-level campaigns (whole topics) do not take arrivals yet.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import numpy as np
from django.db import transaction
from django.db.models import Max
from scipy.stats import norm

from estimation.judges.calibration import MISSING
from estimation.sampling.arrivals import target_strata
from estimation.sampling.items import system_weights
from labeling.models import Arrival, Campaign, Draw, System
from labeling.services.imports import UploadedFile
from labeling.services.run_imports import runs_import
from sampling.arrival_design import arrival_labelling_judge, topup_judged
from sampling.estimates import estimates_current
from sampling.judge_kinds import judge_kind
from sampling.judge_labels import judge_for_sampling, pool_judge_classes
from sampling.judge_runs import judge_run_start
from sampling.label_model import judged_grades
from sampling.level_estimates import MIN_STRATUM_DRAWS, counted_item_draws
from sampling.pool_arrays import PoolArrays, pool_arrays_for, pool_from_arrays, pooled_systems
from sampling.strategies import strategy_for

QUERY_LEVEL_REFUSAL = (
    "this campaign draws whole topics: a run cannot arrive with a top-up here yet; evaluate it on "
    "the stored judgments (Evaluate a new run) or use a single-documents strategy"
)


def arrival_add(
    *, campaign: Campaign, files: Sequence[UploadedFile], budget: float, reference: str | None = None
) -> Arrival:
    """Pool one run into a campaign that has drawn, with a top-up of `budget` (the campaign's
    budget unit) aimed at its difference with `reference` (a pooled run's name; default the run
    with the best current estimate). ValueError with the reason, before anything is stored, for
    a query-level campaign, no draw yet, a bad budget or reference, or more than one file;
    `ImportFailed` for a malformed run (nothing stored)."""
    if not strategy_for(campaign).level.takes_arrivals:
        raise ValueError(QUERY_LEVEL_REFUSAL)
    if len(files) != 1:
        raise ValueError(f"one run arrives at a time, got {len(files)} files")
    if not budget or not np.isfinite(budget) or budget <= 0:
        raise ValueError(f"the top-up budget must be a positive number, got {budget:g}")
    if campaign.budget_unit == Campaign.BudgetUnit.JUDGMENTS and budget != int(budget):
        raise ValueError(f"a top-up in judgments is a whole number, got {budget:g}")
    last_draw = Draw.objects.filter(campaign=campaign).aggregate(last=Max("order"))["last"]
    if last_draw is None:
        raise ValueError("nothing was drawn yet: upload the run with the others (Runs) instead")
    pooled = [system.name for system in pooled_systems(campaign)]
    chosen = reference or _best_current(campaign, pooled)
    if chosen not in pooled:
        raise ValueError(
            f"the reference {chosen!r} is not a pooled run of this campaign ({', '.join(pooled)})"
        )
    report = runs_import(campaign=campaign, files=files)
    with transaction.atomic():
        campaign = Campaign.objects.select_for_update(no_key=True).get(pk=campaign.pk)
        system = System.objects.get(campaign=campaign, name=report.systems[0])
        arrival = Arrival.objects.create(
            campaign=campaign,
            system=system,
            reference=System.objects.get(campaign=campaign, name=chosen),
            topup_budget=float(budget),
            drawable_after=last_draw,
        )
        campaign.budget += float(budget)
        campaign.blocked = ""
        if campaign.status == Campaign.Status.DONE:
            campaign.status = Campaign.Status.RUNNING
        campaign.save(update_fields=["budget", "blocked", "status", "updated_at"])
    _judge_new_pairs(campaign)
    return arrival


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


def _best_current(campaign: Campaign, pooled: list[str]) -> str:
    """The pooled run with the highest current estimate of the campaign's metric (the first
    pooled run while none has a value)."""
    rows = [row for row in estimates_current(campaign)["systems"] if row["value"] is not None]
    metric = str(campaign.metric)
    valued = {row["name"]: row["value"] for row in rows if row["metric"] == metric} or {
        row["name"]: row["value"] for row in rows if row["metric"].startswith("DCG")
    }
    known = [name for name in pooled if name in valued]
    return max(known, key=valued.__getitem__) if known else pooled[0]


def arrivals_summaries(campaign: Campaign) -> list[dict[str, Any]]:
    """`arrival_summary` of every arrival of the campaign, oldest first, from one reading of its
    current estimates."""
    estimates = estimates_current(campaign)
    arrivals = campaign.arrivals.select_related("campaign", "system", "reference").order_by("id")
    return [arrival_summary(arrival, estimates) for arrival in arrivals]


def arrival_summary(arrival: Arrival, estimates: dict[str, Any] | None = None) -> dict[str, Any]:
    """What the arrival's page and API show: status, its estimate, the difference with the
    reference and the probability that their order is right, the new items, the top-up.
    `estimates` is the campaign's `estimates_current` when the caller has read it already."""
    campaign = arrival.campaign
    arrays = pool_arrays_for(campaign)
    names = list(arrays.system_names)
    estimates = estimates_current(campaign) if estimates is None else estimates
    own = next(
        (
            row
            for row in estimates["systems"]
            if row["name"] == arrival.system.name and row["value"] is not None
        ),
        None,
    )
    reference = arrival.reference.name if arrival.reference is not None else None
    difference = None
    unreachable = None
    new_items = 0
    judge_missing = None
    new_judged = waiting = 0
    if arrival.system.name in names:
        index = names.index(arrival.system.name)
        pool = pool_from_arrays(arrays)
        strategy = strategy_for(campaign)
        metric = strategy.level.evaluation_metric(campaign)
        weights = system_weights(pool, metric, index)
        brought = (weights > 0) & ~_retrieved_before(arrays, arrival.system_id)
        new_items = int(brought.sum())
        grades = judged_grades(campaign, arrays)
        new_judged = int((brought & (grades >= 0)).sum())
        draws = counted_item_draws(campaign, arrays, grades)
        reached = np.zeros(arrays.slot_used.shape, dtype=bool)
        for boundary in np.unique(arrays.drawable_after[weights > 0]):
            if (draws.order > boundary).any():
                reached |= arrays.drawable_after == boundary
        # Its late groups of documents no draw picked since they joined, as the estimate
        # and the difference split them (`CountedDraws.strata`): no value until none is left.
        targets = [weights]
        if reference in names:
            targets.append(weights - system_weights(pool, metric, names.index(reference)))
        thin = np.zeros(arrays.slot_used.shape, dtype=bool)
        for target in targets:
            for boundary, mask in target_strata(arrays.drawable_after, target):
                if boundary > 0 and draws.stratum_draws(mask, draws.order > boundary) < MIN_STRATUM_DRAWS:
                    thin |= mask
        waiting = int(thin.sum())
        total = float(weights.sum())
        unreachable = float(weights[~reached].sum() / total) if total > 0 else 0.0
        if strategy.uses_judge:
            # Its pool documents the judge has no label for (an uploaded judge's to upload).
            classes = pool_judge_classes(judge_for_sampling(campaign), arrays)
            judge_missing = int(((weights > 0) & (classes == MISSING)).sum())
        if reference in names:
            difference = strategy.level.difference_estimate(  # type: ignore[attr-defined]  # item levels only
                campaign, arrays, grades, index, names.index(reference)
            )
    judged = topup_judged(arrival)
    spent = judged >= arrival.topup_budget
    labelling = arrival_labelling_judge(campaign) is not None and not spent
    status = "labelling" if labelling else "judging"
    return {
        "id": arrival.pk,
        "system": arrival.system.name,
        "reference": reference,
        "created": arrival.created_at.isoformat(),
        "status": "done" if spent or campaign.status != Campaign.Status.RUNNING else status,
        "estimate": _numbers(own),
        "difference": _numbers(difference),
        "order_right": _order_right(difference),
        "new_items": new_items,
        "new_judged": new_judged,
        "waiting_items": waiting,
        "topup_budget": arrival.topup_budget,
        "topup_judged": judged,
        "unreachable_share": unreachable,
        "judge_missing": judge_missing,
    }


def arrivals_json(campaign: Campaign) -> str:
    """Every arrival of the campaign with its report, as JSON text (the offline ZIP's)."""
    boundaries = dict(campaign.arrivals.values_list("id", "drawable_after"))
    rows = [{**row, "drawable_after": boundaries[row["id"]]} for row in arrivals_summaries(campaign)]
    return json.dumps(rows, indent=1) + "\n"


def _retrieved_before(arrays: PoolArrays, system_id: int) -> np.ndarray:
    """The pool slots some run pooled before `system_id` ranks (within the pool depth)."""
    covered = np.zeros(arrays.slot_used.shape, dtype=bool)
    topics = np.broadcast_to(np.arange(arrays.n_topics)[:, None], arrays.rankings.shape[1:])
    for index, other in enumerate(arrays.system_ids):
        if other < system_id:
            ranked = arrays.rankings[index] >= 0
            covered[topics[ranked], arrays.rankings[index][ranked]] = True
    return covered


def _numbers(row: dict[str, Any] | None) -> dict[str, float | None]:
    keys = ("value", "se", "low", "high")
    return {key: (None if row is None else row.get(key)) for key in keys}


def _order_right(row: dict[str, Any] | None) -> float | None:
    """P(the sign of the estimated difference is the true one) under the normal approximation."""
    if row is None or row.get("value") is None or not row.get("se"):
        return None
    return float(norm.cdf(abs(row["value"]) / row["se"]))


__all__ = ["QUERY_LEVEL_REFUSAL", "arrival_add", "arrival_summary", "arrivals_json", "arrivals_summaries"]
