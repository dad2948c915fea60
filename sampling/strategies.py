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

A strategy computes the distribution; its `Level` says what a draw is (a topic or an item)
and how the draws become estimates, new-run evaluations and exports. Callers ask
`strategy_for(campaign)` and call methods: no other module switches on the level's name. A new
strategy is one class here, registered in `STRATEGIES` (`register_strategy`); the class also
says how the New campaign form names it (`label`, `strategy_choices`) and how the campaign
planner names, explains and replays it (`planned_as`, `plan_words`, `paper`).
`sampling.draws.draws_top_up` draws.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any, ClassVar

import numpy as np

from estimation.metrics.moments import ranking_moments
from estimation.metrics.spec import Metric
from estimation.sampling.costs import query_costs
from estimation.sampling.draws import pair_unit_items, topic_unit_items
from estimation.sampling.item_estimators import item_level_weight_bound
from estimation.sampling.items import item_sampling_distribution, system_weights
from estimation.sampling.pool import Pool
from estimation.sampling.queries import optimal_query_distribution, passive_distribution
from estimation.sampling.results import SamplingDistribution
from labeling.metric import campaign_metric
from labeling.models import Campaign, Draw
from labeling.preflight import Problem
from sampling.arrival_design import arrival_labelling_judge
from sampling.difference_terms import DifferenceTerms, item_difference_terms, query_difference_terms
from sampling.judged import (
    JudgedDistribution,
    calibration_store,
    first_stage_room,
    judged_design,
    judged_inputs_problem,
)
from sampling.judged_estimates import (
    judged_difference_estimate,
    judged_difference_terms,
    judged_level_rows,
    judged_level_run_estimate,
)
from sampling.label_model import judged_grades
from sampling.level_estimates import (
    RunLayout,
    item_difference_estimate,
    item_level_rows,
    item_level_run_estimate,
    query_difference_estimate,
    query_level_rows,
    query_level_run_estimate,
)
from sampling.models import SamplingState
from sampling.pool_arrays import PoolArrays, pool_arrays_for

# The data the levels work on: a stored sampling state with its arrays decoded, and a new
# run laid over the pool. They live here, beside the levels, so the services that build them
# (sampling_state, evaluation) import this module and never the other way round.


@dataclass(frozen=True, eq=False)
class LoadedState:
    """A stored sampling state with its arrays decoded."""

    record: SamplingState
    q: np.ndarray  # (m,) or (m, n)
    query_cost: np.ndarray  # (m,)
    item_cost: np.ndarray  # (m, n)
    expected: np.ndarray  # (m,)

    @property
    def level(self) -> str:
        return self.record.level


class Level(ABC):
    """What one draw is (a topic or an item) and how draws become estimates and exports."""

    name: ClassVar[str]  # stored in SamplingState.level and EstimateSnapshot.level
    draw_kind: ClassVar[str]  # Draw.kind of its draws
    # How the dashboard shows its estimate rows (`presentation`): the main interval's column
    # header, further intervals of each row's "intervals" as (key, header), and what the
    # numbers are, in plain words.
    interval_header: ClassVar[str] = "95 % CI"
    extra_intervals: ClassVar[tuple[tuple[str, str], ...]] = ()
    method_note: ClassVar[str] = ""
    # Whether a run may arrive with a top-up (`sampling.arrivals`).
    takes_arrivals: ClassVar[bool] = False
    # Whether its draws are whole topics: a run that arrives first completes the topics already
    # drawn (`sampling.arrival_topics`), and the difference counts a topic once fully judged.
    draws_whole_topics: ClassVar[bool] = False
    # Whether a top-up can be planned for an interval width (`sampling.arrivals.topup_plan`, which
    # predicts the variance of single-document draws).
    topup_by_width: ClassVar[bool] = False
    # Whether its verdicts may be read after every label (the sequential and anytime rules need
    # `difference_terms`); a level without them offers the fixed rule only.
    sequential_verdicts: ClassVar[bool] = True

    def presentation(self) -> dict[str, Any]:
        return {
            "interval_header": self.interval_header,
            "extra_intervals": [list(pair) for pair in self.extra_intervals],
            "note": self.method_note,
        }

    @abstractmethod
    def unit_items(self, unit: int, slot_used: np.ndarray) -> tuple[int, np.ndarray]:
        """The topic and candidate slots of a flat unit of q."""

    @abstractmethod
    def item_slot(self, unit: int, n_slots: int) -> int | None:
        """The slot an item draw names (stored on the Draw); None when a draw is a whole topic."""

    @abstractmethod
    def check_metric(self, strategy_name: str, metric: Metric) -> None:
        """ValueError when the level cannot estimate the campaign's metric."""

    def weight_bounds(
        self, pool: Pool, metric: Metric, q: np.ndarray, bounds: dict[str, float]
    ) -> dict[str, float]:
        """The stored per-system weight bounds after a new q (unchanged unless the level uses them)."""
        return bounds

    # `estimate_rows` and `run_estimate` are functions of `sampling/level_estimates.py` (or of a
    # module of the level's own below this one), set as static methods with these signatures.
    @abstractmethod
    def estimate_rows(
        self,
        campaign: Campaign,
        arrays: PoolArrays,
        grades: np.ndarray,
        spent: float,
        weight_bound: float | None,
    ) -> tuple[list[dict], dict | None, int]:
        """Per system and metric rows, the difference row, and the number of draws counted
        (`weight_bound`: the strategy's bound on p / q, `SamplingStrategy.weight_bound`)."""

    @abstractmethod
    def difference_estimate(
        self, campaign: Campaign, arrays: PoolArrays, grades: np.ndarray, a: int, b: int
    ) -> dict:
        """The row of pooled system a minus pooled system b (what an arrival and a two-system
        campaign's verdict read)."""

    @abstractmethod
    def difference_terms(
        self, campaign: Campaign, arrays: PoolArrays, grades: np.ndarray, a: int, b: int
    ) -> DifferenceTerms:
        """The per-draw terms of that difference over the draws that all count, in draw order
        (`sampling.difference_terms`): what a verdict reads after every label."""

    @abstractmethod
    def evaluation_metric(self, campaign: Campaign) -> Metric:
        """The metric a new run is evaluated with."""

    @abstractmethod
    def run_estimate(
        self,
        campaign: Campaign,
        arrays: PoolArrays,
        grades: np.ndarray,
        metric: Metric,
        run: RunLayout,
        result: dict[str, Any],
        weight_bound: float | None,
    ) -> dict[str, Any]:
        """A new run's estimate from the stored draws, filled into `result`."""

    @abstractmethod
    def sampling_rows(self, state: LoadedState, arrays: PoolArrays) -> list[list[str]]:
        """The sampling-distribution export: a header and one row per unit (none when the stored
        q no longer fits the pool)."""


class QueryLevel(Level):
    """One draw = a topic, labelled in full (Sawade et al. 2013)."""

    name = "query"
    draw_kind = Draw.Kind.QUERY
    method_note = (
        "Query-level importance sampling (Sawade et al.): a draw counts once every pool document of "
        "its topic is judged; intervals are skewness-corrected t intervals (Hall 1992), cut to the "
        "metric's range. "
    )

    estimate_rows = staticmethod(query_level_rows)
    run_estimate = staticmethod(query_level_run_estimate)
    difference_terms = staticmethod(query_difference_terms)
    # A run arrives by completing the drawn topics first (`sampling.arrival_topics`).
    takes_arrivals = True
    draws_whole_topics = True

    def difference_estimate(
        self, campaign: Campaign, arrays: PoolArrays, grades: np.ndarray, a: int, b: int
    ) -> dict:
        """The row of pooled system a minus b over the counted topic draws."""
        bound = strategy_for(campaign).weight_bound(campaign)
        return query_difference_estimate(campaign, arrays, grades, a, b, bound)

    def unit_items(self, unit: int, slot_used: np.ndarray) -> tuple[int, np.ndarray]:
        return topic_unit_items(unit, slot_used)

    def item_slot(self, unit: int, n_slots: int) -> int | None:
        return None

    def check_metric(self, strategy_name: str, metric: Metric) -> None:
        """Every metric: a drawn topic is labelled in full, so L(x) is known for any metric."""

    def evaluation_metric(self, campaign: Campaign) -> Metric:
        return campaign_metric(campaign)

    def sampling_rows(self, state: LoadedState, arrays: PoolArrays) -> list[list[str]]:
        if state.q.shape != (arrays.n_topics,):
            return []
        return [["topic", "q", "cost", "expected"]] + [
            [
                qid,
                repr(float(state.q[index])),
                repr(float(state.query_cost[index])),
                repr(float(state.expected[index])),
            ]
            for index, qid in enumerate(arrays.topic_qids)
        ]


class ItemLevel(Level):
    """One draw = a (topic, document) pair (Schnabel et al. 2016); DCG only."""

    name = "item"
    takes_arrivals = True
    topup_by_width = True
    draw_kind = Draw.Kind.ITEM
    interval_header = "95 % CI (CLT)"
    extra_intervals: ClassVar[tuple[tuple[str, str], ...]] = (
        ("hoeffding", "Hoeffding"),
        ("bernstein", "Emp. Bernstein"),
    )
    method_note = (
        "Item-level importance sampling (Schnabel et al.): Hoeffding and empirical-Bernstein "
        "intervals hold for any sample size; the CLT interval is tighter but asymptotic. "
    )

    estimate_rows = staticmethod(item_level_rows)
    run_estimate = staticmethod(item_level_run_estimate)
    # The row of pooled system a minus b (campaign, arrays, grades, a, b): what an arrival reports.
    difference_estimate = staticmethod(item_difference_estimate)
    difference_terms = staticmethod(item_difference_terms)

    def unit_items(self, unit: int, slot_used: np.ndarray) -> tuple[int, np.ndarray]:
        return pair_unit_items(unit, slot_used)

    def item_slot(self, unit: int, n_slots: int) -> int | None:
        return int(unit % n_slots)

    def check_metric(self, strategy_name: str, metric: Metric) -> None:
        if metric.name != "DCG":
            raise ValueError(
                f"the {strategy_name!r} strategy (item-level importance sampling) estimates DCG only; "
                f"{metric} is not linear in the item labels: choose a query-level strategy (passive, "
                "active, ...) or DCG@K"
            )

    def weight_bounds(
        self, pool: Pool, metric: Metric, q: np.ndarray, bounds: dict[str, float]
    ) -> dict[str, float]:
        bounds = dict(bounds)
        weights = item_weights(pool, metric)
        for index, name in enumerate(pool.system_names):
            # Every draw so far came from some stored q: the largest P/Q over them bounds each term.
            bounds[name] = max(bounds.get(name, 0.0), item_level_weight_bound(weights[index], q))
        return bounds

    def evaluation_metric(self, campaign: Campaign) -> Metric:
        return campaign_metric(campaign, f"DCG@{campaign.metric_cutoff}")

    def sampling_rows(self, state: LoadedState, arrays: PoolArrays) -> list[list[str]]:
        if state.q.shape != arrays.slot_used.shape:
            return []
        return [["topic", "docno", "q", "cost"]] + [
            [qid, docno, repr(float(state.q[index, slot])), repr(float(state.item_cost[index, slot]))]
            for index, qid in enumerate(arrays.topic_qids)
            for slot, docno in enumerate(arrays.docnos[index])
        ]


class JudgedLevel(ItemLevel):
    """One draw = a (topic, document) pair, estimated with a judge's calibrated labels as the
    control variate (`sampling.judged`); a new run is estimated the same way, with its own
    weights, so a run ranked as a pooled one gets that run's row."""

    name = "judged"
    interval_header = "95 % CI"
    extra_intervals = ()
    method_note = (
        "Model labels + human sample: each drawn item counts the calibrated judge's value of every "
        "item plus the importance-weighted human correction of the drawn one, so the estimate is "
        "unbiased whatever the judge's quality; Student t intervals, cut to the metric's range (see "
        "Model judges below). "
    )

    estimate_rows = staticmethod(judged_level_rows)
    run_estimate = staticmethod(judged_level_run_estimate)
    difference_estimate = staticmethod(judged_difference_estimate)
    difference_terms = staticmethod(judged_difference_terms)


QUERY_LEVEL = QueryLevel()
ITEM_LEVEL = ItemLevel()
JUDGED_LEVEL = JudgedLevel()
LEVELS: dict[str, Level] = {level.name: level for level in (QUERY_LEVEL, ITEM_LEVEL, JUDGED_LEVEL)}


def level_presentations() -> dict[str, dict[str, Any]]:
    """Per level name, how the dashboard shows its estimate rows (`Level.presentation`)."""
    return {name: level.presentation() for name, level in LEVELS.items()}


def level_named(name: str) -> Level:
    """The level a stored state or snapshot names ("query", "item")."""
    try:
        return LEVELS[name]
    except KeyError:
        raise ValueError(f"unknown sampling level {name!r}") from None


class SamplingStrategy(ABC):
    """Computes a campaign's sampling distribution over topics (query level) or pairs (item level)."""

    name: ClassVar[str]  # stored in Campaign.strategy
    label: ClassVar[str]  # the New campaign form's choice, in plain words (papers: in its help)
    level: ClassVar[Level]
    # Whether it samples with a model judge's labels (the judges panel then offers to choose one).
    uses_judge: ClassVar[bool] = False
    # The campaign planner (sampling.planning): the numeric core's replay of this strategy
    # (estimation.simulation.planner.PLANNED), its name and what it does in plain words, and the
    # paper it comes from. Every strategy states it (`register_strategy` refuses one that does
    # not): None with `unplanned_reason` when the planner does not replay it, which the plan page
    # then says.
    planned_as: ClassVar[str | None]
    unplanned_reason: ClassVar[str] = ""
    plan_words: ClassVar[tuple[str, str]] = ("", "")
    paper: ClassVar[str] = ""

    def validate(self, metric: Metric) -> None:
        """ValueError when the campaign's settings do not suit the strategy."""
        self.level.check_metric(self.name, metric)

    @abstractmethod
    def distribution(
        self, campaign: Campaign, pool: Pool, metric: Metric, focus: Sequence[int]
    ) -> SamplingDistribution:
        """q over the pool: shape (m,) at query level, (m, n) at item level."""

    def state_saved(self, campaign: Campaign, version: int, distribution: SamplingDistribution) -> None:
        """Called in the transaction that stores sampling version `version` (nothing by default)."""
        return None

    def topup_sigma(self, distribution: SamplingDistribution) -> np.ndarray | None:
        """The label spread per item a run's top-up design weighs (None: 1 everywhere). While a
        top-up is open, the engine draws every item-level strategy's items from that design
        (`sampling.state.design_with_topup`); a strategy never calls it itself."""
        return None

    def items_drawable(self, campaign: Campaign) -> int | None:
        """How many more items the current sampling version may draw (None: no limit)."""
        return None

    def weight_bound(self, campaign: Campaign) -> float | None:
        """``W >= max p / q`` for the query level's any-n bounds: ``1 / mix`` for the defensive
        mixture ``q >= mix p``; None (the largest drawn weight) without a mixture."""
        return 1.0 / campaign.mix if campaign.mix and campaign.mix > 0 else None

    def preflight_problems(self, campaign: Campaign) -> list[Problem]:
        """What the strategy lacks before Start (its inputs), in the pre-flight's words."""
        return []


def planning_metric(metric: Metric) -> Metric:
    """The metric sampling plans with: nDCG plans with DCG at the same cutoff."""
    if metric.name == "nDCG":
        return Metric("DCG", metric.cutoff, gain=metric.gain, y_max=metric.y_max)
    return metric


def focus_expected(pool: Pool, metric: Metric, focus: Sequence[int], goal: str) -> np.ndarray:
    """Per topic, the expectation under the label model of what the campaign's goal measures
    (the dashboard colours the sampling chart with it): E[L_A - L_B | x; theta] for a
    difference of two systems, the mean of E[L_S | x; theta] over the focus systems for a
    leaderboard, E[L | x; theta] of the one system otherwise, as the active strategies'
    `optimal_query_distribution` reports it."""
    planned = planning_metric(metric)
    if goal == Campaign.Goal.DIFFERENCE and len(focus) >= 2:
        chosen = list(focus[:2])
    elif goal in (Campaign.Goal.LEADERBOARD, Campaign.Goal.RELATIVE):
        chosen = list(focus)
    else:
        chosen = list(focus[:1])
    means = [ranking_moments(pool.theta, pool.rankings[system], planned).mean for system in chosen]
    if goal == Campaign.Goal.DIFFERENCE and len(means) == 2:
        return means[0] - means[1]
    return np.mean(means, axis=0)


class QueryStrategy(SamplingStrategy):
    level = QUERY_LEVEL
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
            goal,  # type: ignore[arg-type]  # the campaign's goal field holds one of the literal goals
            systems,
            query_cost=cost,
            mix=campaign.mix,
            uniform_labels=self.uniform_labels,
            unit_costs=self.unit_costs,
        )


class PassiveStrategy(QueryStrategy):
    """Topics uniformly at random with replacement: q = p (Sawade et al.'s passive baseline)."""

    name = "passive"
    label = "Topics at random (passive)"
    planned_as = "passive"
    plan_words = ("Topics at random", "every document of a randomly drawn topic is judged")
    paper = "Sawade et al. 2013, the passive baseline"

    def weight_bound(self, campaign: Campaign) -> float | None:
        return 1.0  # q = p

    def distribution(
        self, campaign: Campaign, pool: Pool, metric: Metric, focus: Sequence[int]
    ) -> SamplingDistribution:
        passive = passive_distribution(pool, query_cost=query_costs(pool, None))
        return SamplingDistribution(
            q=passive.q,
            optimal=passive.optimal,
            mix=0.0,
            cost=passive.cost,
            expected=focus_expected(pool, metric, focus, campaign.goal),
        )


class ActiveStrategy(QueryStrategy):
    name = "active"
    label = "Uncertain topics first (active)"
    planned_as = "active"
    plan_words = (
        "Uncertain topics first",
        "topics whose metric the label model is least sure of, per unit of cost, are judged first",
    )
    paper = "Sawade et al. 2013, cost-sensitive active evaluation"


class ActiveUniformLabelsStrategy(QueryStrategy):
    name = "active_uniform_labels"
    label = "Uncertain topics, labels assumed uniform (comparison)"
    uniform_labels = True
    planned_as = None
    unplanned_reason = (
        "a comparison from the paper (the active strategy without its label model): the planner "
        "replays the strategies a campaign would choose to save judgments"
    )


class ActiveUniformCostsStrategy(QueryStrategy):
    name = "active_uniform_costs"
    label = "Uncertain topics, every topic costing the same (comparison)"
    unit_costs = True
    planned_as = None
    unplanned_reason = (
        "a comparison from the paper (the active strategy without its cost model): the planner "
        "replays the strategies a campaign would choose to save judgments"
    )


class ItemStrategy(SamplingStrategy):
    """Item-level importance sampling of (topic, document) pairs for DCG (Schnabel et al.)."""

    name = "items"
    label = "Single documents where they matter most (items; DCG only)"
    level = ITEM_LEVEL
    planned_as = "items"
    plan_words = (
        "Single documents",
        "single documents are drawn where they can change the metric most; DCG only",
    )
    paper = "Schnabel et al. 2016, item-level importance sampling"

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
        result = item_sampling_distribution(pool, metric, goal, systems, prior="model", mix=campaign.mix)  # type: ignore[arg-type]  # the campaign's goal field holds one of the literal goals
        return SamplingDistribution(
            q=result.q,
            optimal=result.optimal,
            mix=result.mix,
            cost=result.cost,
            expected=focus_expected(pool, metric, focus, campaign.goal),
        )


class JudgedStrategy(SamplingStrategy):
    """Model labels + human sample: a judge labelled the pool; humans label where the calibrated
    judge is least sure and the item matters most (`estimation.judges`). DCG only."""

    name = "judged"
    label = "Model labels + human sample (a judge labels all; humans certify; DCG only)"
    uses_judge = True
    level = JUDGED_LEVEL
    planned_as = "judged"
    plan_words = (
        "Model labels + human sample",
        "a model judge labelled every document; assessors judge where the calibrated judge is least "
        "sure, and the estimate corrects the judge with them; DCG only",
    )
    paper = (
        "prediction-powered inference with importance-sampled human labels (Angelopoulos et al. "
        "2023; Zrnic and Candes 2024)"
    )

    def distribution(
        self, campaign: Campaign, pool: Pool, metric: Metric, focus: Sequence[int]
    ) -> SamplingDistribution:
        arrays = pool_arrays_for(campaign)
        design = judged_design(campaign, arrays, pool, metric, focus, judged_grades(campaign, arrays))
        return replace(design, expected=focus_expected(pool, metric, focus, campaign.goal))

    def topup_sigma(self, distribution: SamplingDistribution) -> np.ndarray | None:
        # The top-up draws where the calibrated judge is least sure, as the judged design does.
        return distribution.sigma if isinstance(distribution, JudgedDistribution) else None

    def state_saved(self, campaign: Campaign, version: int, distribution: SamplingDistribution) -> None:
        if isinstance(distribution, JudgedDistribution) and distribution.calibration is not None:
            calibration_store(campaign, version, distribution.calibration, distribution.judge)

    def items_drawable(self, campaign: Campaign) -> int | None:
        if arrival_labelling_judge(campaign) is not None:
            return 0  # the judge labels an arrival's new documents first: the top-up waits for them
        return first_stage_room(campaign)

    def preflight_problems(self, campaign: Campaign) -> list[Problem]:
        problem = judged_inputs_problem(campaign)
        return [problem] if problem is not None else []


STRATEGIES: dict[str, SamplingStrategy] = {}


def register_strategy(strategy: SamplingStrategy) -> SamplingStrategy:
    """Make a strategy available to campaigns; a name registers once. A strategy states whether
    the planner replays it (`planned_as`), and why not when it does not (`unplanned_reason`)."""
    if not hasattr(strategy, "planned_as"):
        raise TypeError(
            f"the strategy {strategy.name!r} does not say whether the planner replays it: set "
            "planned_as (a name of estimation.simulation.planner.PLANNED, or None with unplanned_reason)"
        )
    if strategy.planned_as is None and not strategy.unplanned_reason:
        raise TypeError(f"the strategy {strategy.name!r} is not planned: say why in unplanned_reason")
    existing = STRATEGIES.get(strategy.name)
    if existing is not None and type(existing) is not type(strategy):
        raise ValueError(f"two sampling strategies are called {strategy.name!r}")
    STRATEGIES[strategy.name] = strategy
    return strategy


# In the order the New campaign form lists them.
for _builtin in (
    PassiveStrategy(),
    ActiveStrategy(),
    ItemStrategy(),
    ActiveUniformLabelsStrategy(),
    ActiveUniformCostsStrategy(),
    JudgedStrategy(),
):
    register_strategy(_builtin)


def strategy_choices() -> list[tuple[str, str]]:
    """(name, label) of every strategy, for the New campaign form."""
    return [(strategy.name, strategy.label) for strategy in STRATEGIES.values()]


def unplanned_strategies() -> list[SamplingStrategy]:
    """The strategies the campaign planner does not replay, each with its reason."""
    return [strategy for strategy in STRATEGIES.values() if strategy.planned_as is None]


def planned_strategies() -> dict[str, SamplingStrategy]:
    """The strategies the campaign planner replays, by their name in the numeric core's planner."""
    return {strategy.planned_as: strategy for strategy in STRATEGIES.values() if strategy.planned_as}


def strategy_for(campaign: Campaign) -> SamplingStrategy:
    """The campaign's strategy object; ValueError naming the available ones for an unknown name."""
    try:
        return STRATEGIES[campaign.strategy]
    except KeyError:
        raise ValueError(
            f"unknown strategy {campaign.strategy!r}; available: {', '.join(sorted(STRATEGIES))}"
        ) from None


def item_weights(pool: Pool, metric: Metric) -> np.ndarray:
    """P(x, z; S) of every pooled system, shape (S, m, n) (DCG)."""
    return np.stack([system_weights(pool, metric, s) for s in range(pool.n_systems)])
