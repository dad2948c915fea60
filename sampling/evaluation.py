"""Evaluate a new run on the stored draws and judgments, with the weight they could not reach.

The run is imported as an evaluation-only system (not pooled, never sampled for). Its estimate
reuses the campaign's draws with their stored propensities:

- query level: ``L_new(x)`` of every counted query draw from the judgments (a document never
  judged counts as grade 0); the warning share is the weight (``p(x) d(rank)``) of the run's
  top K on the drawn topics that falls on documents never judged: with share 0 the estimate
  is unbiased, otherwise it is low by up to that share of the metric's weight;
- item level (Schnabel et al. 2016, Sect. 3.4): `estimation.reuse_estimate` with the run's
  weights ``P(x, z; S_new)``; the unreachable mass is the weight on pairs no stored
  distribution could draw (not in any pooled system's top K, or outside the pool), reported
  as a share of the run's total weight.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from django.db.models import F, Window
from django.db.models.functions import RowNumber

from estimation.metrics.spec import Metric
from estimation.metrics.values import metric_values
from estimation.sampling.estimators import query_level_estimate, unreachable_mass
from estimation.sampling.item_estimators import reuse_estimate
from labeling.models import Campaign, Judgment, RankingEntry, System
from labeling.selectors import campaign_spent
from labeling.services.imports import UploadedFile
from labeling.services.run_imports import runs_import
from sampling.estimates import (
    counted_query_draws,
    estimand_share,
    in_estimand,
    item_draws,
    query_weight_bound,
)
from sampling.label_model import judged_grades
from sampling.pool_arrays import EMPTY, PoolArrays, pool_arrays_for
from sampling.strategies import RunLayout, strategy_for

WARNING_SHARE = 0.0


def evaluation_runs_import(*, campaign: Campaign, files: Sequence[UploadedFile]) -> list[System]:
    """Store uploaded runs as evaluation-only systems (ImportFailed on a malformed file)."""
    report = runs_import(campaign=campaign, files=files, evaluation_only=True)
    return list(System.objects.filter(campaign=campaign, name__in=report.systems))


def _run_positions(
    system: System, arrays: PoolArrays, depth: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The run's top `depth` per pool topic: (topic index, position, document id), trec_eval order."""
    entries = (
        RankingEntry.objects.filter(system=system)
        .annotate(
            position=Window(
                RowNumber(),
                partition_by=[F("topic_id")],
                order_by=[F("score").desc(), F("document__docno").desc()],
            )
        )
        .filter(position__lte=depth)
        .values_list("topic_id", "position", "document_id")
    )
    rows = np.array(list(entries), dtype=np.int64).reshape(-1, 3)
    index = {int(topic_id): i for i, topic_id in enumerate(arrays.topic_ids)}
    topic = np.array([index.get(int(t), -1) for t in rows[:, 0]], dtype=np.int64)
    keep = topic >= 0
    return topic[keep], rows[keep, 1] - 1, rows[keep, 2]


def run_evaluate(campaign: Campaign, system: System) -> dict[str, Any]:
    """The run's estimate of the campaign's metric from the stored draws, and the share of its
    weight the draws could not reach (with a warning text when it is not 0)."""
    arrays = pool_arrays_for(campaign)
    level = strategy_for(campaign).level
    metric = level.evaluation_metric(campaign)
    cutoff = metric.cutoff
    topic, position, document = _run_positions(system, arrays, cutoff)
    result: dict[str, Any] = {
        "system": system.name,
        "metric": str(metric),
        "level": level.name,
        "value": None,
        "se": None,
        "low": None,
        "high": None,
        "n": 0,
        "unreachable_mass": None,
        "unreachable_share": None,
        "warning": None,
    }
    if arrays.n_topics == 0 or topic.size == 0:
        result["warning"] = "the run ranks no topic of the pool: nothing to estimate"
        return result
    grades = judged_grades(campaign, arrays)
    # The run's own layout: (m, K) grade matrix; documents outside the pool are looked up directly.
    run_grades = np.full((arrays.n_topics, cutoff), EMPTY, dtype=np.int64)
    _, slot = arrays.locate(arrays.topic_ids[topic], document)
    in_pool = slot >= 0
    run_grades[topic[in_pool], position[in_pool]] = grades[topic[in_pool], slot[in_pool]]
    outside = ~in_pool
    if outside.any():
        known: dict[tuple[int, int], list[int]] = {}
        for topic_id, document_id, grade in Judgment.objects.filter(
            campaign=campaign, document_id__in=document[outside].tolist()
        ).values_list("topic_id", "document_id", "grade"):
            known.setdefault((topic_id, document_id), []).append(grade)
        for t, i, d in zip(topic[outside], position[outside], document[outside], strict=True):
            grades_of = sorted(known.get((int(arrays.topic_ids[t]), int(d)), []))
            run_grades[t, i] = grades_of[(len(grades_of) - 1) // 2] if grades_of else EMPTY - 1
    ranked = np.zeros((arrays.n_topics, cutoff), dtype=bool)
    ranked[topic, position] = True
    run = RunLayout(
        topic=topic,
        position=position,
        in_pool=in_pool,
        slot=slot,
        grades=run_grades,
        ranked=ranked,
        judged=ranked & (run_grades >= 0),
        discount=metric.discount_table(cutoff)[None, :] / arrays.n_topics,
    )
    # Over the campaign's topics, as the dashboard's estimates (`in_estimand`).
    return in_estimand(
        level.run_estimate(campaign, arrays, grades, metric, run, result), estimand_share(campaign, arrays)
    )


def query_level_run_estimate(
    campaign: Campaign,
    arrays: PoolArrays,
    grades: np.ndarray,
    metric: Metric,
    run: RunLayout,
    result: dict[str, Any],
) -> dict[str, Any]:
    """Query level: L_new(x) of every counted query draw (module docstring)."""
    ranked, judged, discount = run.ranked, run.judged, run.discount
    topics, propensities = counted_query_draws(campaign, arrays, grades)
    if topics.size == 0:
        result["warning"] = "no drawn topic is fully judged yet"
        return result
    matrix = np.where(ranked & ~judged, 0, run.grades)
    matrix = np.where(ranked, matrix, EMPTY)
    ideal = np.where(arrays.slot_used & (grades >= 0), grades, EMPTY) if metric.name == "nDCG" else None
    values = metric_values(matrix, metric, ideal_grade_matrix=ideal)
    estimate = query_level_estimate(
        values[topics],
        propensities,
        np.full(topics.size, 1.0 / arrays.n_topics),
        topics=topics,
        budget_spent=campaign_spent(campaign)[1],
        value_bounds=metric.value_bounds(),
        weight_bound=query_weight_bound(campaign),
    )
    drawn = np.zeros(arrays.n_topics, dtype=bool)
    drawn[topics] = True
    weights = np.where(ranked & drawn[:, None], discount, 0.0)
    mass = unreachable_mass(weights, judged | ~ranked)
    total = float(weights.sum())
    return _finish(result, estimate, mass, total)


def item_level_run_estimate(
    campaign: Campaign,
    arrays: PoolArrays,
    grades: np.ndarray,
    metric: Metric,
    run: RunLayout,
    result: dict[str, Any],
) -> dict[str, Any]:
    """Item level: `estimation.reuse_estimate` with the run's weights (module docstring)."""
    topic, position, in_pool, slot, discount = run.topic, run.position, run.in_pool, run.slot, run.discount
    m, n = arrays.slot_used.shape
    cutoff = metric.cutoff
    # P(x, z; S_new) over the pool's slots, and over the run's own positions (for the mass).
    weights = np.zeros((m, n))
    weights[topic[in_pool], slot[in_pool]] = discount[0, position[in_pool]]
    run_weights = np.zeros((m, cutoff))
    run_weights[topic, position] = discount[0, position]
    support = np.zeros((m, n), dtype=bool)
    rows = np.broadcast_to(np.arange(m)[:, None], arrays.rankings.shape[1:])
    for ranking in arrays.rankings[:, :, :cutoff]:
        filled = ranking >= 0
        support[rows[:, :cutoff][filled], ranking[filled]] = True
    reachable = np.zeros((m, cutoff), dtype=bool)
    reachable[topic[in_pool], position[in_pool]] = support[topic[in_pool], slot[in_pool]]
    draws = item_draws(campaign)
    draw_topic, draw_slot = arrays.locate(draws[:, 0].astype(np.int64), draws[:, 1].astype(np.int64))
    counted = draw_topic >= 0
    counted[counted] = grades[draw_topic[counted], draw_slot[counted]] >= 0
    if not counted.any():
        result["warning"] = "no drawn item is judged yet"
        return result
    gains = metric.gain_table()
    labels = gains[grades[draw_topic[counted], draw_slot[counted]]] / gains.max()
    scale = float(gains.max())
    lowest, highest = metric.value_bounds()
    reuse = reuse_estimate(
        labels,
        weights[draw_topic[counted], draw_slot[counted]],
        draws[counted, 2],
        pool_target_weights=run_weights,
        pool_reachable=reachable,
        value_bounds=(lowest / scale, highest / scale),
    )
    scaled = reuse.estimate.scaled(scale)
    return _finish(result, scaled, reuse.unreachable_mass, float(run_weights.sum()))


def _finish(result: dict[str, Any], estimate: Any, mass: float, total: float) -> dict[str, Any]:
    def number(value: float) -> float | None:
        return None if not np.isfinite(value) else float(value)

    share = mass / total if total > 0 else 0.0
    # The core cut every interval to the metric's range; below the reliability threshold the
    # any-n bounds replace the CLT-type interval, as on the dashboard.
    low, high = estimate.low, estimate.high
    if not estimate.reliable and np.isfinite(estimate.any_n_low) and np.isfinite(estimate.any_n_high):
        low, high = estimate.any_n_low, estimate.any_n_high
    result.update(
        value=number(estimate.value),
        se=number(estimate.standard_error),
        low=number(low),
        high=number(high),
        reliable=bool(estimate.reliable),
        reliable_from=int(estimate.reliable_from),
        any_n_low=number(estimate.any_n_low),
        any_n_high=number(estimate.any_n_high),
        n=estimate.n_draws,
        unreachable_mass=mass,
        unreachable_share=share,
    )
    if share > WARNING_SHARE:
        result["warning"] = (
            f"{100 * share:.1f} % of this run's weight falls on documents the stored draws could not reach "
            "(never judged): the estimate is unbiased only for the rest and may be too low"
        )
    return result
