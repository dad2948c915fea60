"""The per-draw terms of a difference's estimate, in draw order, for a verdict to read after every
label (`sampling.verdicts`, `estimation.sampling.verdicts.stratified_look_arrays`).

Each level's difference estimate is a mean of terms per stratum (one stratum unless a run joined
the pool after draws were made; `CountedDraws.strata`). A verdict reads it after each top-up
draw, so it needs the terms themselves, and only over a prefix of the draws that all count (a
draw still open is a gap: the looks stop before it, and the next recompute reads on). The terms
here give exactly the level's difference row when every draw counts: the item level's plain
importance-sampling terms, the judged level's power-tuned ones (each weight fitted on earlier
draws only, so a prefix of the terms is the terms of the prefix), the query level's plain
estimator over the counted topic draws (a topic counts once fully judged). Values are in metric
units, so that a margin reads against them.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from estimation.sampling.items import system_weights
from labeling.metric import campaign_metric
from labeling.models import Campaign, Draw, Task
from sampling.level_estimates import counted_item_draws_and_gap, query_draws_counted, topic_metric_values
from sampling.pool_arrays import PoolArrays, pool_from_arrays


@dataclass(frozen=True)
class DifferenceTerms:
    """The terms of a difference's estimate over a prefix of the draws that all count: per
    stratum, longest first (suffixes of the draws), each draw's order and a key of what it drew
    (to count distinct labels)."""

    strata: list[np.ndarray]
    order: np.ndarray
    unit: np.ndarray

    @property
    def size(self) -> int:
        return int(self.order.size)

    def new_labels(self, after: int) -> np.ndarray:
        """Per draw after draw order `after`, the labels the top-up had paid for up to it: the
        distinct units first drawn since then (a unit drawn before was labelled then; a unit
        judged by several assessors counts once)."""
        stored = set(self.unit[self.order <= after].tolist())
        seen: set[int] = set()
        counts = []
        for unit in self.unit[self.order > after].tolist():
            if unit not in stored:
                seen.add(unit)
            counts.append(len(seen))
        return np.asarray(counts, dtype=np.int64)


def item_difference_terms(
    campaign: Campaign, arrays: PoolArrays, grades: np.ndarray, a: int, b: int
) -> DifferenceTerms:
    """The item level's terms of pooled system a minus b: each stratum's plain importance-sampling
    terms (`sampling.level_estimates.stratified_item_estimate`), in DCG units."""
    metric = campaign_metric(campaign, f"DCG@{campaign.metric_cutoff}")
    counted, gap = counted_item_draws_and_gap(campaign, arrays, grades)
    draws = counted.before(gap)
    pool = pool_from_arrays(arrays)
    target = system_weights(pool, metric, a) - system_weights(pool, metric, b)
    gains = metric.gain_table().astype(float)
    human = gains[grades[draws.topic, draws.slot]] if draws.size else np.zeros(0)
    strata = draws.strata(arrays, target) if draws.size else None
    chosen = strata or [(np.ones(target.shape, dtype=bool), np.ones(draws.size, dtype=bool))]
    terms = [
        (target * mask)[draws.topic[later], draws.slot[later]] * human[later] / draws.propensity[later]
        for mask, later in chosen
    ]
    return DifferenceTerms(terms, draws.order, draws.topic * arrays.n_slots + draws.slot)


def query_difference_terms(
    campaign: Campaign, arrays: PoolArrays, grades: np.ndarray, a: int, b: int
) -> DifferenceTerms:
    """The query level's terms of pooled system a minus b: the plain estimator's
    p(x) (L_a - L_b)(x) / q(x) per counted topic draw (p uniform over the pooled topics), over the
    draws before the first topic that does not count yet."""
    metric = campaign_metric(campaign)
    topics, propensities, order = _query_prefix(campaign, arrays, grades)
    delta = topic_metric_values(arrays, grades, metric, a) - topic_metric_values(arrays, grades, metric, b)
    terms = delta[topics] / arrays.n_topics / propensities if topics.size else np.zeros(0)
    return DifferenceTerms([terms], order, topics)


def _query_prefix(
    campaign: Campaign, arrays: PoolArrays, grades: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The counted topic draws before the first that does not count: topic indices,
    propensities and draw orders."""
    query_draws = Draw.objects.filter(campaign=campaign, kind=Draw.Kind.QUERY).order_by("order")
    orders = np.array(query_draws.values_list("order", flat=True), dtype=np.int64)
    topics, propensities, counted = query_draws_counted(campaign, arrays, grades)
    # A draw waits while its topic has an open task; one off the pool, or whose topic has
    # documents nobody will judge, never counts, and is no gap.
    open_pairs = Task.objects.filter(campaign=campaign, answered_at__isnull=True).values_list(
        "topic_id", flat=True
    )
    located = {int(topic_id): index for index, topic_id in enumerate(arrays.topic_ids)}
    held = np.zeros(arrays.n_topics + 1, dtype=bool)
    held[[located[int(t)] for t in set(open_pairs) if int(t) in located]] = True
    waiting = np.flatnonzero(~counted & (topics >= 0) & held[topics])
    end = int(waiting[0]) if waiting.size else counted.size
    kept = counted[:end]
    return topics[:end][kept], propensities[:end][kept], orders[:end][kept]


__all__ = ["DifferenceTerms", "item_difference_terms", "query_difference_terms"]
