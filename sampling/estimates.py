"""Estimates of every pooled system from the stored draws, and their snapshots.

`estimates_compute` asks the campaign's strategy for its level, and the level computes the
rows (`sampling.level_estimates`: query and item level, with the estimators described there;
`sampling.judged_estimates`: model labels + human sample).

The estimand (`campaign_estimand`, the core's `estimation.sampling.pool_build.ESTIMAND_RULE`): the mean
over every topic of the campaign. A topic no run ranks counts 0 for every run and needs no
label, so the estimators run over the pooled topics and every number is then multiplied by
their share of the campaign's topics (`in_estimand`): exact, and a smaller variance than
drawing those known zeros.
"""

from __future__ import annotations

import hashlib
from typing import Any

import numpy as np
from django.db.models import Count, Max

from estimation.sampling.pool_build import ESTIMAND_RULE
from labeling.metric import campaign_metric
from labeling.models import Campaign, Draw, PoolItem, Topic
from labeling.selectors import campaign_spent
from sampling.label_model import judged_grades
from sampling.level_estimates import topic_metric_values
from sampling.models import EstimateSnapshot
from sampling.pool_arrays import PoolArrays, pool_arrays_for
from sampling.state import judgments_fingerprint
from sampling.strategies import strategy_for

ESTIMAND_FIELDS = ("value", "se", "low", "high", "any_n_low", "any_n_high", "exact")
"""The fields of an estimate row (and of a new run's estimate) that scale with the estimand."""


def estimand_share(campaign: Campaign, arrays: PoolArrays) -> float:
    """The pooled topics' share of the campaign's topics (1 when some run ranks every topic)."""
    total = Topic.objects.filter(campaign=campaign).count()
    return arrays.n_topics / total if total > arrays.n_topics else 1.0


def in_estimand(row: dict[str, Any], share: float) -> dict[str, Any]:
    """A row over the pooled topics turned into one over all the campaign's topics: the topics
    no run ranks count 0 for every run, so the mean, its SE and every bound scale by `share`
    (coverage and the order probability do not change)."""
    if share == 1.0:
        return row
    scaled = dict(row)
    for field in ESTIMAND_FIELDS:
        if scaled.get(field) is not None:
            scaled[field] = float(scaled[field]) * share
    if isinstance(scaled.get("intervals"), dict):
        scaled["intervals"] = {
            kind: (None if bounds is None else [float(bound) * share for bound in bounds])
            for kind, bounds in scaled["intervals"].items()
        }
    return scaled


SNAPSHOT_FORMAT = 2
"""What a snapshot's data holds (`SNAPSHOT_FIELDS`); part of the fingerprint, so a snapshot stored
in an earlier format (1: without `exact`) is not current, and the next recompute stores one anew."""


def estimates_fingerprint(campaign: Campaign) -> str:
    """Changes whenever a judgment, a draw, the strategy or the snapshots' format changes."""
    draws = Draw.objects.filter(campaign=campaign).aggregate(n=Count("id"), top=Max("id"))
    topics = Topic.objects.filter(campaign=campaign).count()  # the estimand's size
    settings = f"{campaign.pool_version}|{campaign.strategy}|{campaign.goal}|{campaign.focus_systems}"
    labels = f"{judgments_fingerprint(campaign)}|{draws['n']}:{draws['top']}|{topics}"
    text = f"{settings}|{campaign.custom_dcg}|{labels}|format {SNAPSHOT_FORMAT}"
    return hashlib.sha256(text.encode()).hexdigest()[:40]


def campaign_estimand(campaign: Campaign) -> dict[str, Any]:
    """What the estimates average over, in words and counts: every topic of the campaign, each
    weighted 1/m (the core's `ESTIMAND_RULE`, with the campaign's topics as the collection's)."""
    pooled = PoolItem.objects.filter(campaign=campaign).values("topic_id").distinct().count()
    total = Topic.objects.filter(campaign=campaign).count()
    left_out = max(0, total - pooled)
    rule = (
        f"the mean over the campaign's {total} topics (p = 1/{total} each), as evaluate averages over "
        "every qrels topic"
    )
    if left_out:
        rule += (
            f"; {left_out} of them no run ranks: they count 0 for every run and need no label, so "
            f"every number is {pooled}/{total} of the mean over the {pooled} ranked topics"
        )
    return {
        "topics": total,
        "ranked_topics": pooled,
        "left_out": left_out,
        "rule": rule,
        "core_rule": ESTIMAND_RULE,
    }


def estimates_compute(campaign: Campaign, fingerprint: str | None = None) -> dict[str, Any]:
    """The current estimates: {level, systems, difference, spent, budget, judgments, draws, fingerprint};
    `fingerprint` is the caller's `estimates_fingerprint` when it has just read it."""
    judgments, spent = campaign_spent(campaign)
    strategy = strategy_for(campaign)
    level = strategy.level
    result: dict[str, Any] = {
        "level": level.name,
        "systems": [],
        "difference": None,
        "spent": spent,
        "budget": campaign.budget,
        "budget_unit": campaign.budget_unit,
        "judgments": judgments,
        "draws": 0,
        "draws_made": 0,
        "fingerprint": fingerprint or estimates_fingerprint(campaign),
        "exact": None,  # EXACT_NOTE once every pool item is judged
    }
    arrays = pool_arrays_for(campaign)
    if arrays.n_topics == 0 or not arrays.system_names:
        return result
    grades = judged_grades(campaign, arrays)
    systems, difference, result["draws"] = level.estimate_rows(
        campaign, arrays, grades, spent, strategy.weight_bound(campaign)
    )
    # Draws made that do not count yet (judgments still open; a drawn topic counts once all its
    # documents are judged, those a run that arrived brought too): the page says why.
    result["draws_made"] = Draw.objects.filter(campaign=campaign).count()
    if arrays.slot_used.any() and (grades[arrays.slot_used] >= 0).all():
        systems, difference = _exact(campaign, arrays, grades, systems, difference)
        result["exact"] = EXACT_NOTE
    share = estimand_share(campaign, arrays)
    result["systems"] = [in_estimand(row, share) for row in systems]
    result["difference"] = None if difference is None else in_estimand(difference, share)
    return result


EXACT_NOTE = (
    "Every pool item is judged: the Exact column is each value over the pool as evaluate gives it "
    "from this campaign's qrels (documents outside the pool count 0); the estimates beside it are "
    "what the sample alone says, and their intervals are meant to hold it."
)


def _exact(
    campaign: Campaign, arrays: PoolArrays, grades: np.ndarray, systems: list[dict], difference: dict | None
) -> tuple[list[dict], dict | None]:
    """The rows once every pool item is judged, each with `exact`: its metric's mean over the
    topics from the grades, beside the sample's estimate (metrics the level cannot estimate get
    their exact value too)."""
    names = list(arrays.system_names)

    def exact_value(metric_name: str, name: str) -> np.ndarray:
        metric = campaign_metric(campaign, metric_name)
        return topic_metric_values(arrays, grades, metric, names.index(name))

    rows = [{**row, "exact": float(exact_value(row["metric"], row["name"]).mean())} for row in systems]
    if difference is not None:
        first, second = difference["systems"]
        gap = exact_value(difference["metric"], first) - exact_value(difference["metric"], second)
        difference = {**difference, "exact": float(gap.mean())}
    return rows, difference


def snapshot_record(campaign: Campaign) -> EstimateSnapshot | None:
    """Store a snapshot of the current estimates unless nothing changed since the last one."""
    fingerprint = estimates_fingerprint(campaign)
    last = EstimateSnapshot.objects.filter(campaign=campaign).order_by("-created_at", "-id").first()
    if last is not None and last.fingerprint == fingerprint:
        return None
    result = estimates_compute(campaign, fingerprint)
    return EstimateSnapshot.objects.create(
        campaign=campaign,
        fingerprint=result["fingerprint"],
        level=result["level"],
        spent=result["spent"],
        budget=result["budget"],
        judgments=result["judgments"],
        draws=result["draws"],
        data={key: result[key] for key in SNAPSHOT_FIELDS},
    )


SNAPSHOT_FIELDS = ("systems", "difference", "draws_made", "exact")
"""The parts of `estimates_compute`'s result a snapshot keeps for `estimates_current` (`exact`:
the sentence once every pool item is judged, else None)."""


def estimates_current(campaign: Campaign) -> dict[str, Any]:
    """The latest snapshot if it is up to date, else freshly computed (not stored)."""
    fingerprint = estimates_fingerprint(campaign)
    last = EstimateSnapshot.objects.filter(campaign=campaign).order_by("-created_at", "-id").first()
    if last is not None and last.fingerprint == fingerprint:
        judgments, spent = campaign_spent(campaign)
        return {
            "level": last.level,
            **last.data,
            "spent": spent,
            "budget": campaign.budget,
            "budget_unit": campaign.budget_unit,
            "judgments": last.judgments,
            "draws": last.draws,
            "fingerprint": fingerprint,
            "computed_at": last.created_at.isoformat(),
            "estimand": campaign_estimand(campaign),
        }
    # The estimand is what the API shows beside the numbers; snapshots (the worker's
    # estimates_compute) do not store it.
    return {**estimates_compute(campaign, fingerprint), "estimand": campaign_estimand(campaign)}
