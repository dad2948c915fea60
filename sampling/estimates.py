"""Estimates of every pooled system from the stored draws, and their snapshots.

Query level (Sawade et al. 2013, Sect. 4): a query draw counts once its topic is fully
labelled (every pool item judged, no open task). ``L_S(x)`` comes from the topic's labels
(several judgments of one item: the lower median grade, as the qrels export does);
`estimation.query_level_estimate` with ``p(x)`` uniform over the pool's topics and each draw's
stored propensity (self-normalised for a system, plain for a difference; see
`query_level_rows`), for DCG@K, ERR@K and nDCG@K (nDCG's ideal ranking: the topic's judged pool
items). For a difference goal: ``delta = L_a - L_b`` of the first two focus systems, with
``p_order_right = Phi(|Delta| / se)``.

Item level (Schnabel et al. 2016): an item draw counts once its item is judged;
``u = g(y) / g(y_max)``, ``P_S(x, z) = p(x) d(rank of z in S(x))``;
`estimation.item_level_estimate` with CLT, Hoeffding and empirical-Bernstein intervals
(the range ``R`` is the largest ``P_S / Q`` over the distributions drawn from so far);
DCG = ``g(y_max) U``. nDCG and ERR are not linear in the labels: reported as null with a reason.

The estimand (`campaign_estimand`, the core's `estimation.sampling.pool_build.ESTIMAND_RULE`): the mean
over every topic of the campaign. A topic no run ranks counts 0 for every run and needs no
label, so the estimators run over the pooled topics and every number is then multiplied by
their share of the campaign's topics (`in_estimand`): exact, and a smaller variance than
drawing those known zeros.
"""

from __future__ import annotations

import hashlib
import math
from typing import Any

import numpy as np
from django.db.models import Count, Max
from scipy.stats import norm

from estimation.metrics.spec import Metric
from estimation.metrics.values import metric_values
from estimation.sampling.estimators import query_level_estimate
from estimation.sampling.item_estimators import item_level_difference_estimate, item_level_estimate
from estimation.sampling.items import system_weights
from estimation.sampling.pool_build import ESTIMAND_RULE
from estimation.sampling.results import Estimate
from labeling.metric import campaign_metric
from labeling.models import Campaign, Draw, EstimateSnapshot, PoolItem, SamplingState, Task, Topic
from labeling.selectors import campaign_spent
from sampling.label_model import judged_grades
from sampling.pool_arrays import EMPTY, PoolArrays, pool_arrays_for, pool_from_arrays
from sampling.state import focus_indices, judgments_fingerprint
from sampling.strategies import strategy_for

NOT_LINEAR = "{design} estimates DCG only: {metric} is not linear in the item labels"
DESIGN_WORDS = {"judged": "model labels + human sample"}
"""The item-level designs, as the dashboard names them when it says why a metric is missing."""


def reported_metrics(campaign: Campaign) -> list[Metric]:
    """DCG@K, ERR@K and nDCG@K at the campaign's cutoff, on its grade scale."""
    cutoff = campaign.metric_cutoff
    return [campaign_metric(campaign, f"{name}@{cutoff}") for name in ("DCG", "ERR", "nDCG")]


def topic_metric_values(arrays: PoolArrays, grades: np.ndarray, metric: Metric, system: int) -> np.ndarray:
    """L_S(x) of every topic from its grades (unjudged and empty positions count 0), shape (m,)."""
    ranking = arrays.rankings[system][:, : metric.cutoff]
    safe = np.where(ranking >= 0, ranking, 0)
    matrix = np.where(ranking >= 0, np.take_along_axis(grades, safe, axis=1), EMPTY)
    matrix = np.where(matrix < 0, np.where(ranking >= 0, 0, EMPTY), matrix)
    if metric.name != "nDCG":
        return metric_values(matrix, metric)
    ideal = np.where(arrays.slot_used & (grades >= 0), grades, EMPTY)
    return metric_values(matrix, metric, ideal_grade_matrix=ideal)


def _open_pairs(campaign: Campaign) -> np.ndarray:
    rows = list(
        Task.objects.filter(campaign=campaign, answered_at__isnull=True).values_list(
            "topic_id", "document_id"
        )
    )
    return np.array(rows, dtype=np.int64).reshape(-1, 2)


def item_draws(campaign: Campaign) -> np.ndarray:
    """The campaign's item draws as rows (topic id, document id, stored propensity, sampling
    version), shape (n, 4)."""
    return np.array(
        list(
            Draw.objects.filter(campaign=campaign, kind=Draw.Kind.ITEM)
            .order_by("order")
            .values_list("topic_id", "document_id", "propensity", "sampling_version")
        ),
        dtype=float,
    ).reshape(-1, 4)


def counted_item_draws(
    campaign: Campaign, arrays: PoolArrays, grades: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The item draws that count (their item judged, no task of it open): topic index, slot,
    propensity and sampling version of each, in draw order."""
    draws = item_draws(campaign)
    topic, slot = arrays.locate(draws[:, 0].astype(np.int64), draws[:, 1].astype(np.int64))
    judged = np.zeros(topic.shape, dtype=bool)
    inside = topic >= 0
    judged[inside] = grades[topic[inside], slot[inside]] >= 0
    open_pairs = _open_pairs(campaign)
    if open_pairs.size and judged.any():
        open_topic, open_slot = arrays.locate(open_pairs[:, 0], open_pairs[:, 1])
        open_flat = set((open_topic * arrays.n_slots + open_slot)[open_topic >= 0].tolist())
        flat = topic * arrays.n_slots + slot
        judged &= np.array([value not in open_flat for value in flat.tolist()], dtype=bool)
    return topic[judged], slot[judged], draws[judged, 2], draws[judged, 3].astype(np.int64)


def counted_query_draws(
    campaign: Campaign, arrays: PoolArrays, grades: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """The query draws that count (their topic fully labelled, no open task): topic indices
    into the pool arrays and the propensities stored with each draw, in draw order."""
    draws = np.array(
        list(
            Draw.objects.filter(campaign=campaign, kind=Draw.Kind.QUERY)
            .order_by("order")
            .values_list("topic_id", "propensity")
        ),
        dtype=float,
    ).reshape(-1, 2)
    complete = np.all(~arrays.slot_used | (grades >= 0), axis=1)
    open_pairs = _open_pairs(campaign)
    if open_pairs.size:
        topic, _ = arrays.locate(open_pairs[:, 0], open_pairs[:, 1])
        complete[topic[topic >= 0]] = False
    topic_index = {int(topic_id): index for index, topic_id in enumerate(arrays.topic_ids)}
    indices = np.array([topic_index.get(int(t), -1) for t in draws[:, 0]], dtype=np.int64)
    counted = (indices >= 0) & complete[np.clip(indices, 0, None)] if indices.size else indices.astype(bool)
    return indices[counted], draws[counted, 1]


def _clipped(interval: list[float], bounds: tuple[float, float]) -> list[float]:
    """An interval cut to where the metric can lie: coverage can only grow, since the true value
    is inside the bounds (a DCG interval reaching below 0 says nothing the bounds do not)."""
    return [max(interval[0], bounds[0]), min(interval[1], bounds[1])]


def _difference_bounds(metric: Metric) -> tuple[float, float]:
    low, high = metric.value_bounds()
    return low - high, high - low


def _row(
    name: str,
    metric: Metric,
    estimate: Estimate | None,
    *,
    scale: float = 1.0,
    bounds: tuple[float, float] | None = None,
    **extra: Any,
) -> dict:
    def number(value: float) -> float | None:
        return None if value is None or not math.isfinite(value) else float(value) * scale

    if estimate is None:
        return {
            "name": name,
            "metric": str(metric),
            "value": None,
            "se": None,
            "low": None,
            "high": None,
            "n": 0,
            **extra,
        }
    range_ = bounds or metric.value_bounds()
    any_low, any_high = number(estimate.any_n_low), number(estimate.any_n_high)
    if any_low is None or any_high is None:
        any_low, any_high = range_
    any_low, any_high = _clipped([any_low, any_high], range_)
    if estimate.reliable:
        low, high = number(estimate.low), number(estimate.high)
    else:
        # Too few topics for any CLT-type interval: low/high carry the any-n bounds, so a
        # client that reads only them never gets a narrow interval that cannot be trusted.
        low, high = any_low, any_high
    if low is not None and high is not None:
        low, high = _clipped([low, high], range_)
    return {
        "name": name,
        "metric": str(metric),
        "value": number(estimate.value),
        "se": number(estimate.standard_error),
        "low": low,
        "high": high,
        "n": estimate.n_draws,
        "judged": estimate.n_judged,
        "interval": estimate.interval if estimate.reliable else "any_n",
        "reliable": estimate.reliable,
        "reliable_from": estimate.reliable_from,
        "any_n_low": any_low,
        "any_n_high": any_high,
        **extra,
    }


ESTIMAND_FIELDS = ("value", "se", "low", "high", "any_n_low", "any_n_high")
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


def _difference_row(names: list[str], metric: Metric, estimate: Estimate | None, scale: float = 1.0) -> dict:
    row = _row(names[0], metric, estimate, scale=scale, bounds=_difference_bounds(metric))
    row.pop("name")
    row["systems"] = names
    se, value = row["se"], row["value"]
    if value is None or se is None:
        row["p_order_right"] = None
    elif se == 0.0:
        # No spread among the drawn topics: the order is as certain as the sample can tell.
        row["p_order_right"] = 1.0 if value != 0 else 0.5
    else:
        row["p_order_right"] = float(norm.cdf(abs(value) / se))
    return {"systems": names, **{k: v for k, v in row.items() if k != "systems"}}


def query_weight_bound(campaign: Campaign) -> float | None:
    """``W >= max p / q`` for the any-n bounds: 1 for passive sampling (q = p); ``1 / mix`` for
    the defensive mixture ``q >= mix p``; None (the largest drawn weight) without a mixture."""
    if strategy_for(campaign).name == "passive":
        return 1.0
    return 1.0 / campaign.mix if campaign.mix and campaign.mix > 0 else None


def query_level_rows(
    campaign: Campaign, arrays: PoolArrays, grades: np.ndarray, spent: float
) -> tuple[list[dict], dict | None, int]:
    """Per system and metric rows, the difference row, and the number of draws counted.

    A system's value: the self-normalised estimator with Hall's skew-corrected t interval; a
    difference: the plain estimator (p is known, uniform over the pooled topics), which has
    no ratio bias, with the t interval (`estimation.query_level_estimate`). Every interval is
    cut to the metric's range; below `MIN_RELIABLE_TOPICS` distinct judged topics the rows
    say so and carry the any-n (Hoeffding) bounds instead.
    """
    topics, propensities = counted_query_draws(campaign, arrays, grades)
    weights = np.full(topics.size, 1.0 / arrays.n_topics)
    weight_bound = query_weight_bound(campaign)
    rows: list[dict] = []
    values_by: dict[tuple[int, str], np.ndarray] = {}
    for metric in reported_metrics(campaign):
        for index, name in enumerate(arrays.system_names):
            values = topic_metric_values(arrays, grades, metric, index)[topics]
            values_by[(index, str(metric))] = values
            estimate = (
                query_level_estimate(
                    values,
                    propensities,
                    weights,
                    topics=topics,
                    budget_spent=spent,
                    value_bounds=metric.value_bounds(),
                    weight_bound=weight_bound,
                )
                if topics.size
                else None
            )
            rows.append(_row(name, metric, estimate))
    difference = None
    if campaign.goal == Campaign.Goal.DIFFERENCE:
        focus = focus_indices(campaign, arrays)
        if len(focus) == 2:
            metric = campaign_metric(campaign)
            delta = values_by[(focus[0], str(metric))] - values_by[(focus[1], str(metric))]
            estimate = (
                query_level_estimate(
                    delta,
                    propensities,
                    weights,
                    self_normalised=False,
                    topics=topics,
                    value_bounds=_difference_bounds(metric),
                    weight_bound=weight_bound,
                )
                if topics.size
                else None
            )
            difference = _difference_row([arrays.system_names[i] for i in focus], metric, estimate)
    return rows, difference, int(topics.size)


def item_level_rows(
    campaign: Campaign, arrays: PoolArrays, grades: np.ndarray, spent: float
) -> tuple[list[dict], dict | None, int]:
    """DCG rows with CLT, Hoeffding and Bernstein intervals; nDCG and ERR as null with a reason."""
    metric = campaign_metric(campaign, f"DCG@{campaign.metric_cutoff}")
    topic, slot, propensities, _ = counted_item_draws(campaign, arrays, grades)
    gains = metric.gain_table()
    top_gain = float(gains.max())
    labels = gains[grades[topic, slot]] / top_gain if topic.size else np.zeros(0)
    pool = pool_from_arrays(arrays)
    state = SamplingState.objects.filter(campaign=campaign).first()
    bounds = dict(state.weight_bounds) if state is not None else {}
    n_judged = int(np.unique(topic * arrays.n_slots + slot).size) if topic.size else 0
    rows: list[dict] = []
    weights = {}
    for index, name in enumerate(arrays.system_names):
        weights[index] = system_weights(pool, metric, index)
        if not topic.size:
            rows.append(_row(name, metric, None, intervals={}))
            continue
        target = weights[index][topic, slot]
        metric_bounds = metric.value_bounds()
        unit_bounds = (metric_bounds[0] / top_gain, metric_bounds[1] / top_gain)
        estimate = item_level_estimate(
            labels, target, propensities, n_judged=n_judged, budget_spent=spent, value_bounds=unit_bounds
        )
        intervals: dict[str, list[float] | None] = {
            "clt": _clipped([estimate.low * top_gain, estimate.high * top_gain], metric_bounds)
        }
        bound = bounds.get(name)
        for kind in ("hoeffding", "bernstein"):
            try:
                other = item_level_estimate(
                    labels, target, propensities, interval=kind, weight_bound=bound, value_bounds=unit_bounds
                )
                intervals[kind] = _clipped([other.low * top_gain, other.high * top_gain], metric_bounds)
            except ValueError:
                intervals[kind] = None
        rows.append(_row(name, metric, estimate, scale=top_gain, intervals=intervals))
    rows += not_linear_rows(campaign, arrays)
    difference = None
    if campaign.goal == Campaign.Goal.DIFFERENCE:
        focus = focus_indices(campaign, arrays)
        if len(focus) == 2:
            a, b = focus
            low, high = _difference_bounds(metric)
            difference_estimate = (
                item_level_difference_estimate(
                    labels,
                    weights[a][topic, slot],
                    weights[b][topic, slot],
                    propensities,
                    n_judged=n_judged,
                    value_bounds=(low / top_gain, high / top_gain),
                )
                if topic.size
                else None
            )
            difference = _difference_row(
                [arrays.system_names[a], arrays.system_names[b]], metric, difference_estimate, top_gain
            )
    return rows, difference, int(topic.size)


def not_linear_rows(campaign: Campaign, arrays: PoolArrays) -> list[dict]:
    """ERR and nDCG rows of an item-level campaign: null, with the reason (naming the campaign's
    design: single documents, or model labels + human sample)."""
    design = DESIGN_WORDS.get(campaign.strategy, "item-level sampling (single documents)")
    rows = []
    for name_of_metric in ("ERR", "nDCG"):
        other_metric = campaign_metric(campaign, f"{name_of_metric}@{campaign.metric_cutoff}")
        reason = NOT_LINEAR.format(design=design, metric=other_metric)
        rows += [_row(name, other_metric, None, reason=reason) for name in arrays.system_names]
    return rows


def estimates_fingerprint(campaign: Campaign) -> str:
    """Changes whenever a judgment, a draw or the strategy changes."""
    draws = Draw.objects.filter(campaign=campaign).aggregate(n=Count("id"), top=Max("id"))
    topics = Topic.objects.filter(campaign=campaign).count()  # the estimand's size
    settings = f"{campaign.pool_version}|{campaign.strategy}|{campaign.goal}|{campaign.focus_systems}"
    labels = f"{judgments_fingerprint(campaign)}|{draws['n']}:{draws['top']}|{topics}"
    text = f"{settings}|{campaign.custom_dcg}|{labels}"
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


def estimates_compute(campaign: Campaign) -> dict[str, Any]:
    """The current estimates: {level, systems, difference, spent, budget, judgments, draws, fingerprint}."""
    judgments, spent = campaign_spent(campaign)
    level = strategy_for(campaign).level
    result: dict[str, Any] = {
        "level": level.name,
        "systems": [],
        "difference": None,
        "spent": spent,
        "budget": campaign.budget,
        "budget_unit": campaign.budget_unit,
        "judgments": judgments,
        "draws": 0,
        "fingerprint": estimates_fingerprint(campaign),
    }
    arrays = pool_arrays_for(campaign)
    if arrays.n_topics == 0 or not arrays.system_names:
        return result
    grades = judged_grades(campaign, arrays)
    systems, difference, result["draws"] = level.estimate_rows(campaign, arrays, grades, spent)
    share = estimand_share(campaign, arrays)
    result["systems"] = [in_estimand(row, share) for row in systems]
    result["difference"] = None if difference is None else in_estimand(difference, share)
    return result


def snapshot_record(campaign: Campaign) -> EstimateSnapshot | None:
    """Store a snapshot of the current estimates unless nothing changed since the last one."""
    fingerprint = estimates_fingerprint(campaign)
    last = EstimateSnapshot.objects.filter(campaign=campaign).order_by("-created_at", "-id").first()
    if last is not None and last.fingerprint == fingerprint:
        return None
    result = estimates_compute(campaign)
    return EstimateSnapshot.objects.create(
        campaign=campaign,
        fingerprint=result["fingerprint"],
        level=result["level"],
        spent=result["spent"],
        budget=result["budget"],
        judgments=result["judgments"],
        draws=result["draws"],
        data={"systems": result["systems"], "difference": result["difference"]},
    )


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
    return {**estimates_compute(campaign), "estimand": campaign_estimand(campaign)}
