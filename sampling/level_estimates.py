"""What a level's stored draws estimate: the dashboard's rows per system and metric (query and
item level; the judged level's are in `judged_estimates`) and a new run's estimate from the
same draws. The levels of `sampling.strategies` call these; nothing here asks which strategy a
campaign has (the query level's weight bound comes from the strategy as an argument).

Query level (Sawade et al. 2013, Sect. 4): a query draw counts once its topic is fully
labelled (every pool item judged, no open task). ``L_S(x)`` comes from the topic's labels
(several judgments of one item: the lower median grade, as the qrels export does);
`estimation.query_level_estimate` with ``p(x)`` uniform over the pool's topics and each draw's
stored propensity (self-normalised for a system, plain for a difference; see
`query_level_rows`), for DCG@K, ERR@K and nDCG@K (nDCG's ideal ranking: the topic's judged pool
items). For a difference goal: ``delta = L_a - L_b`` of the first two focus systems, with
``p_order_right`` read from the interval shown (`order_right`).

Item level (Schnabel et al. 2016): an item draw counts once its item is judged;
``u = g(y) / g(y_max)``, ``P_S(x, z) = p(x) d(rank of z in S(x))``;
`estimation.item_level_estimate` with CLT, Hoeffding and empirical-Bernstein intervals
(the range ``R`` is the largest ``P_S / Q`` over the distributions drawn from so far);
DCG = ``g(y_max) U``. nDCG and ERR are not linear in the labels: reported as null with a reason.

A new run (`sampling.evaluation`): see that module's docstring for what its estimate reuses.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from estimation.distributions import normal_cdf, normal_ppf
from estimation.metrics.spec import Metric
from estimation.metrics.values import metric_values
from estimation.sampling.arrivals import stratified_estimate, target_strata
from estimation.sampling.estimators import query_level_estimate, unreachable_mass
from estimation.sampling.intervals import clip_interval
from estimation.sampling.item_estimators import (
    item_level_difference_estimate,
    item_level_estimate,
    reuse_estimate,
)
from estimation.sampling.items import system_weights
from estimation.sampling.results import Estimate
from labeling.metric import campaign_metric
from labeling.models import Campaign, Draw, Task
from labeling.selectors import campaign_spent
from sampling.focus import focus_indices
from sampling.models import SamplingState
from sampling.pool_arrays import EMPTY, PoolArrays, pool_from_arrays

# A new run's estimate warns when any of its weight falls on documents the draws cannot reach.
WARNING_SHARE = 0.0


@dataclass(frozen=True, eq=False)
class RunLayout:
    """A new run's top K laid over the pool: its positions, their slots and known grades."""

    topic: np.ndarray  # (r,) topic index of each of the run's positions
    position: np.ndarray  # (r,) 0-based rank
    in_pool: np.ndarray  # (r,) bool: the document is a pool item
    slot: np.ndarray  # (r,) its slot, -1 outside the pool
    grades: np.ndarray  # (m, K) grade per topic and rank; EMPTY unranked, below EMPTY never judged
    ranked: np.ndarray  # (m, K) bool
    judged: np.ndarray  # (m, K) bool
    discount: np.ndarray  # (1, K) p(x) d(rank)


NOT_LINEAR = "{design} estimates DCG only: {metric} is not linear in the item labels"
ITEM_DESIGN = "item-level sampling (single documents)"
"""The item level's design, as the dashboard names it when it says why a metric is missing."""


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
    version, order), shape (n, 5)."""
    return np.array(
        list(
            Draw.objects.filter(campaign=campaign, kind=Draw.Kind.ITEM)
            .order_by("order")
            .values_list("topic_id", "document_id", "propensity", "sampling_version", "order")
        ),
        dtype=float,
    ).reshape(-1, 5)


MIN_STRATUM_DRAWS = 1
"""Draws of a late stratum's own items (a run pooled after draws were made) before its share,
and so every estimate that weighs it, has a value: with none, every term of the stratum is the
same number and its variance reads 0, an interval that claims what nobody measured."""


@dataclass(frozen=True)
class CountedDraws:
    """The item draws that count, in draw order: pool position, stored propensity, sampling
    version and the campaign's draw order of each."""

    topic: np.ndarray
    slot: np.ndarray
    propensity: np.ndarray
    version: np.ndarray
    order: np.ndarray

    @property
    def size(self) -> int:
        return int(self.topic.size)

    def strata(self, arrays: PoolArrays, target: np.ndarray) -> list[tuple[np.ndarray, np.ndarray]] | None:
        """Per stratum of `target` (`estimation.sampling.arrivals.target_strata`), its units' mask
        and the draws that estimate it; None when every unit it weighs was drawable from the first
        draw (the plain estimators apply: no run joined the pool after draws were made)."""
        strata = target_strata(arrays.drawable_after, target)
        if all(boundary == 0 for boundary, _ in strata):
            return None
        chosen = []
        for boundary, mask in strata:
            later = self.order > boundary
            # Until a draw picked one of a late stratum's own items its terms are all alike and
            # its variance reads 0: no value then (an empty stratum; the top-up draws them).
            if boundary > 0 and self.stratum_draws(mask, later) < MIN_STRATUM_DRAWS:
                later = np.zeros_like(later)
            chosen.append((mask, later))
        return chosen

    def stratum_draws(self, mask: np.ndarray, later: np.ndarray) -> int:
        """How many of the selected draws picked an item of the stratum `mask`."""
        return int(mask[self.topic[later], self.slot[later]].sum())

    def before(self, order: int | None) -> CountedDraws:
        """The draws made before draw `order` (all of them for None)."""
        if order is None:
            return self
        kept = self.order < order
        return CountedDraws(
            self.topic[kept], self.slot[kept], self.propensity[kept], self.version[kept], self.order[kept]
        )


def counted_item_draws(campaign: Campaign, arrays: PoolArrays, grades: np.ndarray) -> CountedDraws:
    """The item draws that count (their item judged, no task of it open), in draw order."""
    return counted_item_draws_and_gap(campaign, arrays, grades)[0]


def counted_item_draws_and_gap(
    campaign: Campaign, arrays: PoolArrays, grades: np.ndarray
) -> tuple[CountedDraws, int | None]:
    """`counted_item_draws`, and the order of the first draw that does not count yet (None when
    every draw counts): the draws before it are a prefix a verdict can read."""
    draws = item_draws(campaign)
    topic, slot = arrays.locate(draws[:, 0].astype(np.int64), draws[:, 1].astype(np.int64))
    judged = np.zeros(topic.shape, dtype=bool)
    inside = topic >= 0
    judged[inside] = grades[topic[inside], slot[inside]] >= 0
    open_pairs = _open_pairs(campaign)
    held = np.zeros(topic.shape, dtype=bool)
    if open_pairs.size:
        open_topic, open_slot = arrays.locate(open_pairs[:, 0], open_pairs[:, 1])
        open_flat = set((open_topic * arrays.n_slots + open_slot)[open_topic >= 0].tolist())
        flat = topic * arrays.n_slots + slot
        held = np.array([value in open_flat for value in flat.tolist()], dtype=bool)
        judged &= ~held
    # A draw waits while a task of its item is open; one with neither a label nor an open task
    # (off the pool, say) never counts, and is no gap.
    waiting = draws[held & inside, 4]
    gap = int(waiting.min()) if waiting.size else None
    counted = CountedDraws(
        topic=topic[judged],
        slot=slot[judged],
        propensity=draws[judged, 2],
        version=draws[judged, 3].astype(np.int64),
        order=draws[judged, 4].astype(np.int64),
    )
    return counted, gap


def counted_query_draws(
    campaign: Campaign, arrays: PoolArrays, grades: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """The query draws that count (their topic fully labelled, no open task): topic indices
    into the pool arrays and the propensities stored with each draw, in draw order."""
    indices, propensities, counted = query_draws_counted(campaign, arrays, grades)
    return indices[counted], propensities[counted]


def query_draws_counted(
    campaign: Campaign, arrays: PoolArrays, grades: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Every query draw in draw order: its topic index (-1 off the pool), stored propensity, and
    whether it counts."""
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
    return indices, draws[:, 1], counted


def _clipped(interval: list[float], bounds: tuple[float, float]) -> list[float]:
    """An interval cut to where the metric can lie (`clip_interval`: coverage can only grow, since
    the true value is inside the bounds)."""
    low, high = clip_interval(interval[0], interval[1], bounds)
    return [float(low), float(high)]


def _difference_bounds(metric: Metric) -> tuple[float, float]:
    low, high = metric.value_bounds()
    return low - high, high - low


def estimate_row(
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


def difference_row(names: list[str], metric: Metric, estimate: Estimate | None, scale: float = 1.0) -> dict:
    row = estimate_row(names[0], metric, estimate, scale=scale, bounds=_difference_bounds(metric))
    row.pop("name")
    row["systems"] = names
    row["p_order_right"] = order_right(row)
    return {"systems": names, **{k: v for k, v in row.items() if k != "systems"}}


def order_right(row: Mapping[str, Any] | None, level: float = 0.95) -> float | None:
    """P(the sign of an estimated difference is the true one), read from the interval the row
    shows: Phi(|value| / s) with s the interval's half-width towards 0 over z_{(1+level)/2}, so
    it is above (1 + level) / 2 exactly when the interval excludes 0 (a Student t or cut interval
    is wider than value +- 1.96 se: the probability follows it, not the standard error alone).
    None without a reliable interval; no spread at all: 1 (0.5 for a value of 0)."""
    if row is None or row.get("value") is None or row.get("se") is None or row.get("reliable") is False:
        return None
    value, se = float(row["value"]), float(row["se"])
    if se == 0.0:
        # No spread among the draws: the order is as certain as the sample can tell.
        return 1.0 if value != 0 else 0.5
    low, high = row.get("low"), row.get("high")
    half = (value - low) if value >= 0 and low is not None else (high - value) if high is not None else None
    z = float(normal_ppf((1 + level) / 2))
    scale = half / z if half is not None and half > 0 else se
    return float(normal_cdf(abs(value) / scale))


def query_level_rows(
    campaign: Campaign, arrays: PoolArrays, grades: np.ndarray, spent: float, weight_bound: float | None
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
            rows.append(estimate_row(name, metric, estimate))
    difference = None
    if campaign.goal == Campaign.Goal.DIFFERENCE:
        focus = focus_indices(campaign, arrays)
        if len(focus) == 2:
            metric = campaign_metric(campaign)
            delta = values_by[(focus[0], str(metric))] - values_by[(focus[1], str(metric))]
            difference = _query_difference(arrays, metric, delta, topics, propensities, focus, weight_bound)
    return rows, difference, int(topics.size)


def query_difference_estimate(
    campaign: Campaign, arrays: PoolArrays, grades: np.ndarray, a: int, b: int, weight_bound: float | None
) -> dict:
    """The row of pooled system a minus pooled system b from the counted topic draws
    (`weight_bound`: the strategy's bound on p / q)."""
    topics, propensities = counted_query_draws(campaign, arrays, grades)
    metric = campaign_metric(campaign)
    delta = (
        topic_metric_values(arrays, grades, metric, a)[topics]
        - topic_metric_values(arrays, grades, metric, b)[topics]
    )
    return _query_difference(arrays, metric, delta, topics, propensities, [a, b], weight_bound)


def _query_difference(
    arrays: PoolArrays,
    metric: Metric,
    delta: np.ndarray,
    topics: np.ndarray,
    propensities: np.ndarray,
    pair: list[int],
    weight_bound: float | None,
) -> dict:
    """The plain estimator of a difference over the counted topics (p is known, uniform over the
    pooled topics, so it has no ratio bias), with the t interval."""
    estimate = (
        query_level_estimate(
            delta,
            propensities,
            np.full(topics.size, 1.0 / arrays.n_topics),
            self_normalised=False,
            topics=topics,
            value_bounds=_difference_bounds(metric),
            weight_bound=weight_bound,
        )
        if topics.size
        else None
    )
    return difference_row([arrays.system_names[i] for i in pair], metric, estimate)


def item_level_rows(
    campaign: Campaign, arrays: PoolArrays, grades: np.ndarray, spent: float, weight_bound: float | None
) -> tuple[list[dict], dict | None, int]:
    """DCG rows with CLT, Hoeffding and Bernstein intervals; nDCG and ERR as null with a reason.
    The bounds on p / q come from the stored distributions (`Level.weight_bounds`), not from the
    strategy's `weight_bound`, which every level's rows take. A run pooled after draws were made
    is estimated by strata (`stratified_item_estimate`), with its Student interval only."""
    metric = campaign_metric(campaign, f"DCG@{campaign.metric_cutoff}")
    draws = counted_item_draws(campaign, arrays, grades)
    topic, slot, propensities = draws.topic, draws.slot, draws.propensity
    gains = metric.gain_table()
    top_gain = float(gains.max())
    labels = gains[grades[topic, slot]] / top_gain if topic.size else np.zeros(0)
    pool = pool_from_arrays(arrays)
    state = SamplingState.objects.filter(campaign=campaign).first()
    bounds = dict(state.weight_bounds) if state is not None else {}
    n_judged = int(np.unique(topic * arrays.n_slots + slot).size) if topic.size else 0
    metric_bounds = metric.value_bounds()
    unit_bounds = (metric_bounds[0] / top_gain, metric_bounds[1] / top_gain)
    rows: list[dict] = []
    for index, name in enumerate(arrays.system_names):
        weights = system_weights(pool, metric, index)
        if not topic.size:
            rows.append(estimate_row(name, metric, None, intervals={}))
            continue
        strata = draws.strata(arrays, weights)
        if strata is not None:
            estimate = stratified_item_estimate(draws, labels, weights, strata, n_judged, spent)
            interval = _clipped([estimate.low * top_gain, estimate.high * top_gain], metric_bounds)
            intervals: dict[str, list[float] | None] = {"clt": interval, "hoeffding": None, "bernstein": None}
            rows.append(estimate_row(name, metric, estimate, scale=top_gain, intervals=intervals))
            continue
        target = weights[topic, slot]
        estimate = item_level_estimate(
            labels, target, propensities, n_judged=n_judged, budget_spent=spent, value_bounds=unit_bounds
        )
        intervals = {"clt": _clipped([estimate.low * top_gain, estimate.high * top_gain], metric_bounds)}
        bound = bounds.get(name)
        for kind in ("hoeffding", "bernstein"):
            try:
                other = item_level_estimate(
                    labels, target, propensities, interval=kind, weight_bound=bound, value_bounds=unit_bounds
                )
                intervals[kind] = _clipped([other.low * top_gain, other.high * top_gain], metric_bounds)
            except ValueError:
                intervals[kind] = None
        rows.append(estimate_row(name, metric, estimate, scale=top_gain, intervals=intervals))
    rows += not_linear_rows(campaign, arrays, ITEM_DESIGN)
    difference = None
    if campaign.goal == Campaign.Goal.DIFFERENCE:
        focus = focus_indices(campaign, arrays)
        if len(focus) == 2:
            difference = _item_difference(campaign, arrays, grades, draws, focus[0], focus[1], spent)
    return rows, difference, int(draws.size)


def item_difference_estimate(
    campaign: Campaign, arrays: PoolArrays, grades: np.ndarray, a: int, b: int, spent: float = float("nan")
) -> dict:
    """The row of pooled system a minus pooled system b from the item draws (by strata once a run
    joined the pool after draws were made)."""
    return _item_difference(
        campaign, arrays, grades, counted_item_draws(campaign, arrays, grades), a, b, spent
    )


def _item_difference(
    campaign: Campaign,
    arrays: PoolArrays,
    grades: np.ndarray,
    draws: CountedDraws,
    a: int,
    b: int,
    spent: float,
) -> dict:
    metric = campaign_metric(campaign, f"DCG@{campaign.metric_cutoff}")
    topic, slot = draws.topic, draws.slot
    gains = metric.gain_table()
    top_gain = float(gains.max())
    labels = gains[grades[topic, slot]] / top_gain if topic.size else np.zeros(0)
    pool = pool_from_arrays(arrays)
    first, second = system_weights(pool, metric, a), system_weights(pool, metric, b)
    gap = first - second
    strata = draws.strata(arrays, gap) if topic.size else None
    n_judged = int(np.unique(topic * arrays.n_slots + slot).size) if topic.size else 0
    low, high = _difference_bounds(metric)
    if not topic.size:
        estimate = None
    elif strata is not None:
        estimate = stratified_item_estimate(draws, labels, gap, strata, n_judged, spent)
    else:
        estimate = item_level_difference_estimate(
            labels,
            first[topic, slot],
            second[topic, slot],
            draws.propensity,
            n_judged=n_judged,
            value_bounds=(low / top_gain, high / top_gain),
        )
    return difference_row([arrays.system_names[a], arrays.system_names[b]], metric, estimate, top_gain)


def stratified_item_estimate(
    draws: CountedDraws,
    labels: np.ndarray,
    target: np.ndarray,
    strata: list[tuple[np.ndarray, np.ndarray]],
    n_judged: int,
    spent: float,
) -> Estimate:
    """The target's estimate by strata: each stratum's plain importance-sampling terms over the
    draws that could pick its units (`estimation.sampling.arrivals.stratified_estimate`)."""
    terms = [
        (target * mask)[draws.topic[later], draws.slot[later]] * labels[later] / draws.propensity[later]
        for mask, later in strata
    ]
    return stratified_estimate(terms, n_judged=n_judged, budget_spent=spent)


def not_linear_rows(campaign: Campaign, arrays: PoolArrays, design: str) -> list[dict]:
    """ERR and nDCG rows of an item-level campaign: null, with the reason naming the level's
    `design` (single documents, or model labels + human sample)."""
    rows = []
    for name_of_metric in ("ERR", "nDCG"):
        other_metric = campaign_metric(campaign, f"{name_of_metric}@{campaign.metric_cutoff}")
        reason = NOT_LINEAR.format(design=design, metric=other_metric)
        rows += [estimate_row(name, other_metric, None, reason=reason) for name in arrays.system_names]
    return rows


def query_level_run_estimate(
    campaign: Campaign,
    arrays: PoolArrays,
    grades: np.ndarray,
    metric: Metric,
    run: RunLayout,
    result: dict[str, Any],
    weight_bound: float | None,
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
        weight_bound=weight_bound,
    )
    drawn = np.zeros(arrays.n_topics, dtype=bool)
    drawn[topics] = True
    weights = np.where(ranked & drawn[:, None], discount, 0.0)
    mass = unreachable_mass(weights, judged | ~ranked)
    total = float(weights.sum())
    return run_result_finish(result, estimate, mass, total)


@dataclass(frozen=True)
class RunPoolWeights:
    """A new run's weights ``P(x, z; S_new)``: on the pool's slots (m, n) and on its own
    positions (m, K); the slots a pooled system ranks within the cutoff (the stored
    distributions' support) and the run's positions on them."""

    weights: np.ndarray
    run_weights: np.ndarray
    support: np.ndarray
    reachable: np.ndarray

    @property
    def unreachable_mass(self) -> float:
        """The run's weight on positions no stored draw could reach."""
        return float(self.run_weights[~self.reachable].sum())


def run_pool_weights(arrays: PoolArrays, run: RunLayout, metric: Metric) -> RunPoolWeights:
    """Where a new run's weight falls on the pool, and what the stored draws could reach."""
    topic, position, in_pool, slot, discount = run.topic, run.position, run.in_pool, run.slot, run.discount
    m, n = arrays.slot_used.shape
    cutoff = metric.cutoff
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
    return RunPoolWeights(weights, run_weights, support, reachable)


def item_level_run_estimate(
    campaign: Campaign,
    arrays: PoolArrays,
    grades: np.ndarray,
    metric: Metric,
    run: RunLayout,
    result: dict[str, Any],
    weight_bound: float | None,
) -> dict[str, Any]:
    """Item level: `estimation.reuse_estimate` with the run's weights (module docstring); its
    bounds on p / q come from the stored distributions, as in `item_level_rows`. Where the pool
    grew after draws were made, its reachable weight is estimated by strata instead (each pool
    item from the draws that could pick it, `stratified_item_estimate`)."""
    placed = run_pool_weights(arrays, run, metric)
    weights, run_weights, support, reachable = (
        placed.weights,
        placed.run_weights,
        placed.support,
        placed.reachable,
    )
    n = arrays.n_slots
    draws = item_draws(campaign)
    draw_topic, draw_slot = arrays.locate(draws[:, 0].astype(np.int64), draws[:, 1].astype(np.int64))
    counted = draw_topic >= 0
    counted[counted] = grades[draw_topic[counted], draw_slot[counted]] >= 0
    if not counted.any():
        result["warning"] = "no drawn item is judged yet"
        return result
    gains = metric.gain_table()
    scale = float(gains.max())
    reachable_weights = np.where(support, weights, 0.0)
    counted_draws = counted_item_draws(campaign, arrays, grades)
    strata = counted_draws.strata(arrays, reachable_weights)
    if strata is not None:
        drawn = counted_draws.topic, counted_draws.slot
        n_judged = int(np.unique(drawn[0] * n + drawn[1]).size)
        estimate = stratified_item_estimate(
            counted_draws, gains[grades[drawn]] / scale, reachable_weights, strata, n_judged, float("nan")
        )
        return run_result_finish(
            result, estimate.scaled(scale), placed.unreachable_mass, float(run_weights.sum())
        )
    labels = gains[grades[draw_topic[counted], draw_slot[counted]]] / gains.max()
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
    return run_result_finish(result, scaled, reuse.unreachable_mass, float(run_weights.sum()))


def run_result_finish(
    result: dict[str, Any],
    estimate: Any,
    mass: float,
    total: float,
    bounds: tuple[float, float] | None = None,
) -> dict[str, Any]:
    """Fill a new run's evaluation `result` from its estimate and the weight the draws could not
    reach (`mass` of the run's `total`), with the warning when that share is not small; `bounds`
    cut the interval to the values the metric can take, as the estimate rows are cut (for an
    estimator that does not cut its own)."""

    def number(value: float) -> float | None:
        return None if not np.isfinite(value) else float(value)

    share = mass / total if total > 0 else 0.0
    # The core cut every interval to the metric's range; below the reliability threshold the
    # any-n bounds replace the CLT-type interval, as on the dashboard.
    low, high = estimate.low, estimate.high
    if not estimate.reliable and np.isfinite(estimate.any_n_low) and np.isfinite(estimate.any_n_high):
        low, high = estimate.any_n_low, estimate.any_n_high
    if bounds is not None:
        low, high = _clipped([low, high], bounds)
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
    if total > 0 and mass >= total * (1 - 1e-9):
        # Nothing the draws reached: the estimator's 0 is no measurement, and its interval no
        # certainty. No number rather than "0 [0, 0]".
        result.update(value=None, se=None, low=None, high=None, any_n_low=None, any_n_high=None)
        result["warning"] = (
            "none of this run's weight falls on documents the stored draws could reach (never judged): "
            "nothing to estimate from the stored judgments; add it as a run that arrives to judge its "
            "documents"
        )
    elif share > WARNING_SHARE:
        result["warning"] = (
            f"{100 * share:.1f} % of this run's weight falls on documents the stored draws could not reach "
            "(never judged): the estimate is unbiased only for the rest and may be too low"
        )
    return result
