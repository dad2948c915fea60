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

from labeling.import_reports import UploadedFile
from labeling.models import Campaign, Judgment, RankingEntry, System
from sampling.estimates import estimand_share, in_estimand
from sampling.label_model import judged_grades
from sampling.level_estimates import RunLayout
from sampling.pool_arrays import EMPTY, PoolArrays, pool_arrays_for
from sampling.strategies import strategy_for
from uploads.run_imports import runs_import


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
    strategy = strategy_for(campaign)
    level = strategy.level
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
        level.run_estimate(campaign, arrays, grades, metric, run, result, strategy.weight_bound(campaign)),
        estimand_share(campaign, arrays),
    )
