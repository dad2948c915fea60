"""Sampling strategies: from the campaign's pool and label model to a sampling distribution.

Query level (one unit = a topic, labelled in full: every pool item of it), drawn with
replacement (Sawade et al. 2013, Algorithm 1):

- ``passive``: ``q = p``, uniform over topics;
- ``active``: ``q* ∝ p sqrt(E[(L - R)^2 | x; theta]) / sqrt(lambda(x))`` for the goal
  (one system, the difference of two, the sum over k), mixed with p at ``Campaign.mix``;
- ``active_uniform_labels`` / ``active_uniform_costs``: the same with theta uniform over the
  grades, or with every query costing 1 (the papers' comparison baselines).

Item level (one unit = a (topic, document) pair), with replacement (Schnabel et al. 2016):

- ``items``: ``Q* ∝ u~ P_S`` (one), ``u~ |P_a - P_b|`` (difference), ``u~ sqrt(sum P_S^2)``
  (leaderboard: absolute), ``u~ sqrt(sum (P_S - mean P)^2)`` (relative), mixed with the
  uniform distribution over pairs any pooled system ranks in its top K. DCG only.

A strategy only computes distributions; `labeling.services.sampling.draws_top_up` draws.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from typing import ClassVar

import numpy as np

from estimation.costs import query_costs
from estimation.item_sampling import item_sampling_distribution, system_weights
from estimation.metric_spec import Metric
from estimation.moments import ranking_moments
from estimation.pool import Pool
from estimation.results import SamplingDistribution
from estimation.sampling import optimal_query_distribution, passive_distribution
from labeling.models import Campaign


class SamplingStrategy(ABC):
    """Computes a campaign's sampling distribution over topics (query level) or pairs (item level)."""

    name: ClassVar[str]
    level: ClassVar[str]

    @abstractmethod
    def distribution(
        self, campaign: Campaign, pool: Pool, metric: Metric, focus: Sequence[int]
    ) -> SamplingDistribution:
        """q over the pool: shape (m,) at query level, (m, n) at item level."""


def planning_metric(metric: Metric) -> Metric:
    """The metric sampling plans with: nDCG plans with DCG at the same cutoff."""
    if metric.name == "nDCG":
        return Metric("DCG", metric.cutoff, gain=metric.gain, y_max=metric.y_max)
    return metric


def focus_expected(pool: Pool, metric: Metric, focus: Sequence[int]) -> np.ndarray:
    """E[L | x; theta] of the first focus system per topic (for plots)."""
    return ranking_moments(pool.theta, pool.rankings[focus[0]], planning_metric(metric)).mean


class QueryStrategy(SamplingStrategy):
    level = "query"
    uniform_labels: ClassVar[bool] = False
    unit_costs: ClassVar[bool] = False

    def distribution(
        self, campaign: Campaign, pool: Pool, metric: Metric, focus: Sequence[int]
    ) -> SamplingDistribution:
        # A query draw labels every pool item of the topic: lambda(x) sums over all systems' pools.
        cost = query_costs(pool, None)
        goal = {"one": "one", "difference": "difference"}.get(campaign.goal, "leaderboard")
        if goal == "difference" and len(focus) < 2:
            goal = "one"
        systems = (
            list(focus[:1]) if goal == "one" else list(focus[:2]) if goal == "difference" else list(focus)
        )
        return optimal_query_distribution(
            pool,
            planning_metric(metric),
            goal,  # type: ignore[arg-type]
            systems,
            query_cost=cost,
            mix=campaign.mix,
            uniform_labels=self.uniform_labels,
            unit_costs=self.unit_costs,
        )


class PassiveStrategy(QueryStrategy):
    """Topics uniformly at random with replacement: q = p (Sawade et al.'s passive baseline)."""

    name = "passive"

    def distribution(
        self, campaign: Campaign, pool: Pool, metric: Metric, focus: Sequence[int]
    ) -> SamplingDistribution:
        passive = passive_distribution(pool, query_cost=query_costs(pool, None))
        return SamplingDistribution(
            q=passive.q,
            optimal=passive.optimal,
            mix=0.0,
            cost=passive.cost,
            expected=focus_expected(pool, metric, focus),
        )


class ActiveStrategy(QueryStrategy):
    name = "active"


class ActiveUniformLabelsStrategy(QueryStrategy):
    name = "active_uniform_labels"
    uniform_labels = True


class ActiveUniformCostsStrategy(QueryStrategy):
    name = "active_uniform_costs"
    unit_costs = True


class ItemStrategy(SamplingStrategy):
    """Item-level importance sampling of (topic, document) pairs for DCG (Schnabel et al.)."""

    name = "items"
    level = "item"

    def distribution(
        self, campaign: Campaign, pool: Pool, metric: Metric, focus: Sequence[int]
    ) -> SamplingDistribution:
        goal = {"one": "one", "difference": "difference", "leaderboard": "absolute"}.get(
            campaign.goal, "relative"
        )
        systems = list(focus)
        if goal == "one":
            systems = systems[:1]
        elif goal == "difference":
            systems = systems[:2] if len(systems) >= 2 else systems[:1]
            goal = "difference" if len(systems) == 2 else "one"
        elif goal == "relative" and len(systems) < 2:
            goal = "absolute"
        result = item_sampling_distribution(pool, metric, goal, systems, prior="model", mix=campaign.mix)  # type: ignore[arg-type]
        return SamplingDistribution(
            q=result.q,
            optimal=result.optimal,
            mix=result.mix,
            cost=result.cost,
            expected=focus_expected(pool, metric, focus),
        )


STRATEGIES: dict[str, SamplingStrategy] = {
    strategy.name: strategy
    for strategy in (
        PassiveStrategy(),
        ActiveStrategy(),
        ActiveUniformLabelsStrategy(),
        ActiveUniformCostsStrategy(),
        ItemStrategy(),
    )
}


def strategy_for(campaign: Campaign) -> SamplingStrategy:
    """The campaign's strategy object; ValueError for an unknown name."""
    try:
        return STRATEGIES[campaign.strategy]
    except KeyError:
        raise ValueError(f"unknown sampling strategy {campaign.strategy!r}") from None


def item_weights(pool: Pool, metric: Metric) -> np.ndarray:
    """P(x, z; S) of every pooled system, shape (S, m, n) (DCG)."""
    return np.stack([system_weights(pool, metric, s) for s in range(pool.n_systems)])
