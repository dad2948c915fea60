"""The stored sampling state: refit theta and costs, recompute q, store it (versioned).

`sampling_state_recompute` is idempotent: the state carries a fingerprint of everything it was
computed from (pool version, strategy settings, the judgments), and a recompute that finds the
same fingerprint returns the stored state without recomputing.
"""

from __future__ import annotations

import hashlib
import io
from dataclasses import replace
from typing import Any

import numpy as np
from django.db import transaction
from django.db.models import Count, F, Max, Sum

from estimation.metrics.spec import Metric
from estimation.sampling.pool import Pool
from estimation.sampling.results import SamplingDistribution
from labeling.metric import campaign_metric
from labeling.models import Campaign, Judgment
from sampling.arrival_design import arrival_open, arrival_topup_design
from sampling.focus import focus_indices
from sampling.judge_labels import judge_label_model_inputs, judges_fingerprint
from sampling.label_model import cost_model_fit, item_features, judged_grades, label_model_fit
from sampling.models import SamplingState
from sampling.pool_arrays import PoolArrays, pool_arrays_for, pool_from_arrays
from sampling.strategies import LoadedState, SamplingStrategy, strategy_for


def judgments_fingerprint(campaign: Campaign) -> str:
    """Changes whenever a judgment is added or removed, or its grade changes (an assessor's
    correction on their own-judgments page, an admin's edit): the id-weighted sum of grades
    moves even when two grades are swapped."""
    totals = Judgment.objects.filter(campaign=campaign).aggregate(
        n=Count("id"), top=Max("id"), total=Sum("id"), graded=Sum(F("id") * F("grade"))
    )
    return f"{totals['n']}:{totals['top']}:{totals['total']}:{totals['graded']}"


def _settings_fingerprint(campaign: Campaign) -> str:
    return "|".join(
        str(value)
        for value in (
            campaign.pool_version,
            campaign.metric,
            campaign.grade_count,
            campaign.strategy,
            campaign.goal,
            campaign.goal_k,
            campaign.focus_systems,
            campaign.mix,
            campaign.prior_strength,
            judges_fingerprint(campaign),
            # A run that arrives with a top-up changes the design (`sampling.arrival_design`),
            # and so does its verdict (its top-up stops).
            list(campaign.arrivals.values_list("id", "verdict_record__outcome")),
            # The open top-up (its design is the sampling's) moves on when one's queue covers it.
            getattr(arrival_open(campaign), "pk", None) if campaign.arrivals.exists() else None,
        )
    )


def _fingerprint(campaign: Campaign) -> str:
    text = f"{_settings_fingerprint(campaign)}#{judgments_fingerprint(campaign)}"
    return hashlib.sha256(text.encode()).hexdigest()[:40]


def _encode(**arrays: np.ndarray) -> bytes:
    buffer = io.BytesIO()
    np.savez(buffer, **arrays)  # type: ignore[arg-type]  # numpy's stub types the keywords' values as flags
    return buffer.getvalue()


def state_load(record: SamplingState) -> LoadedState:
    """Decode a stored state's arrays."""
    with np.load(io.BytesIO(bytes(record.arrays))) as data:
        return LoadedState(
            record=record,
            q=data["q"],
            query_cost=data["query_cost"],
            item_cost=data["item_cost"],
            expected=data["expected"],
        )


def campaign_pool(campaign: Campaign, arrays: PoolArrays) -> tuple[Pool, dict[str, Any], dict[str, Any]]:
    """The estimation Pool with the refitted theta and costs, and both models' parameters."""
    metric = campaign_metric(campaign)
    grades = judged_grades(campaign, arrays)
    features = item_features(arrays, metric.cutoff)
    judge_features, judge_prior = judge_label_model_inputs(campaign, arrays)
    theta, label_parameters = label_model_fit(
        campaign, arrays, grades, features, judge_features=judge_features, judge_prior=judge_prior
    )
    item_cost, cost_parameters = cost_model_fit(campaign, arrays)
    pool = pool_from_arrays(arrays, theta, item_cost)
    return pool, label_parameters, cost_parameters


def design_with_topup(
    strategy: SamplingStrategy,
    campaign: Campaign,
    arrays: PoolArrays,
    pool: Pool,
    metric: Metric,
    distribution: SamplingDistribution,
) -> SamplingDistribution:
    """The strategy's design, or, while a run that arrived has a top-up not yet spent, the top-up
    design (`arrival_topup_design`: where its difference with its reference is uncertain) for
    every strategy that draws single items; topics drawn whole keep theirs (the top-up judges
    the run's documents on the drawn topics first, `sampling.arrival_topics`)."""
    if strategy.level.draws_whole_topics:
        return distribution
    topup = arrival_topup_design(campaign, arrays, pool, metric, strategy.topup_sigma(distribution))
    if topup is None:
        return distribution
    return replace(distribution, q=topup.q, optimal=topup.optimal, mix=topup.mix)


def sampling_state_recompute(campaign: Campaign, *, force: bool = False) -> LoadedState | None:
    """Refit theta and costs and recompute q when anything changed; None when the pool is empty."""
    arrays = pool_arrays_for(campaign)
    if arrays.n_topics == 0 or not arrays.system_names:
        return None
    fingerprint = _fingerprint(campaign)
    stored = SamplingState.objects.filter(campaign=campaign).first()
    if stored is not None and stored.fingerprint == fingerprint and not force:
        return state_load(stored)
    metric = campaign_metric(campaign)
    pool, label_parameters, cost_parameters = campaign_pool(campaign, arrays)
    strategy = strategy_for(campaign)
    focus = focus_indices(campaign, arrays)
    distribution = design_with_topup(
        strategy, campaign, arrays, pool, metric, strategy.distribution(campaign, pool, metric, focus)
    )
    query_cost = np.where(arrays.slot_used, pool.item_cost, 0.0).sum(axis=1)
    query_cost = query_cost / query_cost.mean()
    bounds: dict[str, float] = dict(stored.weight_bounds) if stored is not None else {}
    bounds = strategy.level.weight_bounds(pool, metric, distribution.q, bounds)
    payload = _encode(
        q=np.asarray(distribution.q, dtype=float),
        query_cost=query_cost,
        item_cost=pool.item_cost,
        expected=np.asarray(
            distribution.expected if distribution.expected is not None else np.zeros(pool.n_queries)
        ),
    )
    with transaction.atomic():
        record, _ = SamplingState.objects.select_for_update().get_or_create(
            campaign=campaign, defaults={"arrays": b""}
        )
        record.version += 1
        record.pool_version = campaign.pool_version
        record.fingerprint = fingerprint
        record.level = strategy.level.name
        record.arrays = payload
        record.label_model = {**label_parameters, "focus_systems": [arrays.system_names[i] for i in focus]}
        record.cost_model = cost_parameters
        record.weight_bounds = bounds
        record.save()
        strategy.state_saved(campaign, record.version, distribution)
    return state_load(record)


def stored_cost_model(campaign: Campaign) -> dict[str, Any]:
    """The cost model of the stored sampling state, whatever its pool version (empty: none yet)."""
    stored = SamplingState.objects.filter(campaign=campaign).values_list("cost_model", flat=True).first()
    return stored or {}


def _stored_if_fresh(campaign: Campaign) -> SamplingState | None:
    stored = SamplingState.objects.filter(campaign=campaign).first()
    level = strategy_for(campaign).level
    if stored is not None and stored.pool_version == campaign.pool_version and stored.level == level.name:
        return stored
    return None


def sampling_state_fresh(campaign: Campaign) -> LoadedState | None:
    """The stored state when it matches the campaign's pool version and strategy (draws can be
    made from it without a refit), else None: never a refit."""
    stored = _stored_if_fresh(campaign)
    return state_load(stored) if stored is not None else None


def sampling_state_ready(campaign: Campaign, *, refit: bool) -> bool:
    """Whether a state fitting the campaign's pool is stored, after refitting a stale one when
    `refit` (outside any transaction: the fit takes seconds on a big campaign)."""
    if _stored_if_fresh(campaign) is not None:
        return True
    return refit and sampling_state_recompute(campaign) is not None


def sampling_state_current(campaign: Campaign) -> LoadedState | None:
    """The stored state if it matches the pool version and strategy, else a fresh one."""
    stored = _stored_if_fresh(campaign)
    return state_load(stored) if stored is not None else sampling_state_recompute(campaign)


def sampling_per_topic(campaign: Campaign) -> list[dict[str, object]]:
    """The stored sampling distribution per topic: q (summed over a topic's pairs at item level),
    the query cost lambda(x) (mean 1 over topics) and the expected value of what the goal measures
    (`strategies.focus_expected`: the difference of the two systems, the leaderboard's mean)."""
    record = SamplingState.objects.filter(campaign=campaign).first()
    if record is None or record.pool_version != campaign.pool_version:
        return []
    state = state_load(record)
    arrays = pool_arrays_for(campaign)
    q = state.q if state.q.ndim == 1 else state.q.sum(axis=1)
    return [
        {
            "topic": qid,
            "q": float(q[index]),
            "cost": float(state.query_cost[index]),
            "expected": float(state.expected[index]),
        }
        for index, qid in enumerate(arrays.topic_qids)
    ]
