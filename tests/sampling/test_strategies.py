"""Sampling strategies own their level: what a draw is, the metric rule, the export shape."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

from estimation.metrics.spec import Metric
from labeling.forms import CampaignCreateForm
from labeling.models import Campaign, Draw
from labeling.serializers import CampaignOutputSerializer
from sampling.strategies import (
    ITEM_LEVEL,
    LEVELS,
    QUERY_LEVEL,
    STRATEGIES,
    PassiveStrategy,
    QueryStrategy,
    level_named,
    register_strategy,
    strategy_for,
)


def test_it_registers_every_strategy_once_with_a_known_level_and_the_form_offers_them() -> None:
    assert list(STRATEGIES) == [
        "passive",
        "active",
        "items",
        "active_uniform_labels",
        "active_uniform_costs",
        "judged",
    ]
    offered = CampaignCreateForm().fields["strategy"].choices
    assert offered == [(name, strategy.label) for name, strategy in STRATEGIES.items()]
    # The API's schema lists them too (its field was made before the modes registered).
    assert list(CampaignOutputSerializer().fields["strategy"].choices) == list(STRATEGIES)
    with pytest.raises(ValueError, match="two sampling strategies are called 'passive'"):
        register_strategy(type("Other", (PassiveStrategy,), {})())
    for strategy in STRATEGIES.values():
        assert level_named(strategy.level.name) is strategy.level
    assert STRATEGIES["items"].level is ITEM_LEVEL
    assert STRATEGIES["passive"].level is QUERY_LEVEL
    assert set(LEVELS) == {"query", "item", "judged"}
    assert STRATEGIES["judged"].level.draw_kind == ITEM_LEVEL.draw_kind  # judged draws are item draws


def test_it_refuses_an_unknown_strategy_naming_the_available_ones() -> None:
    with pytest.raises(ValueError, match="unknown strategy 'nope'; available: active"):
        strategy_for(Campaign(strategy="nope"))
    with pytest.raises(ValueError, match="unknown sampling level"):
        level_named("topic")


@pytest.mark.parametrize("metric", ["nDCG@10", "ERR@5"])
def test_it_lets_only_query_level_strategies_estimate_non_linear_metrics(metric: str) -> None:
    parsed = Metric.parse(metric, y_max=3)
    STRATEGIES["active"].validate(parsed)
    with pytest.raises(ValueError, match="'items' strategy .* estimates DCG only"):
        STRATEGIES["items"].validate(parsed)
    STRATEGIES["items"].validate(Metric.parse("DCG@10", y_max=3))


def test_it_says_what_a_draw_is_at_each_level() -> None:
    slot_used = np.array([[True, True, False], [True, False, False]])

    topic, slots = QUERY_LEVEL.unit_items(0, slot_used)
    assert (topic, slots.tolist(), QUERY_LEVEL.item_slot(0, 3)) == (0, [0, 1], None)
    assert QUERY_LEVEL.draw_kind == Draw.Kind.QUERY

    topic, slots = ITEM_LEVEL.unit_items(4, slot_used)  # topic 1, slot 1: unused
    assert (topic, slots.tolist(), ITEM_LEVEL.item_slot(4, 3)) == (1, [], 1)
    assert ITEM_LEVEL.draw_kind == Draw.Kind.ITEM


def test_it_exports_q_per_topic_or_per_pair_and_nothing_when_q_no_longer_fits() -> None:
    arrays = SimpleNamespace(
        n_topics=2,
        topic_qids=("1", "2"),
        docnos=(("a", "b"), ("c",)),
        slot_used=np.array([[True, True], [True, False]]),
    )
    per_topic = SimpleNamespace(
        q=np.array([0.25, 0.75]),
        query_cost=np.array([1.0, 2.0]),
        item_cost=np.ones((2, 2)),
        expected=np.array([0.5, 0.0]),
    )
    per_pair = SimpleNamespace(q=np.array([[0.5, 0.25], [0.25, 0.0]]), item_cost=np.ones((2, 2)))

    assert QUERY_LEVEL.sampling_rows(per_topic, arrays) == [
        ["topic", "q", "cost", "expected"],
        ["1", "0.25", "1.0", "0.5"],
        ["2", "0.75", "2.0", "0.0"],
    ]
    assert ITEM_LEVEL.sampling_rows(per_pair, arrays) == [
        ["topic", "docno", "q", "cost"],
        ["1", "a", "0.5", "1.0"],
        ["1", "b", "0.25", "1.0"],
        ["2", "c", "0.25", "1.0"],
    ]
    assert QUERY_LEVEL.sampling_rows(per_pair, arrays) == []
    assert ITEM_LEVEL.sampling_rows(per_topic, arrays) == []


def test_the_planner_replays_exactly_the_strategies_the_core_can_replay_and_explains_each() -> None:
    from estimation.simulation.planner import PLANNED
    from sampling.strategies import planned_strategies

    planned = planned_strategies()
    assert set(planned) == set(PLANNED)
    for name, strategy in planned.items():
        label, how = strategy.plan_words
        assert label and how and strategy.paper, f"{name}: the planner shows its words and paper"


def test_a_strategy_says_whether_the_planner_replays_it_and_why_not() -> None:
    """No silent default: a strategy that does not state `planned_as` is refused, as is one
    that is not planned without a reason; the comparison strategies give theirs."""
    silent = type("Silent", (QueryStrategy,), {"name": "silent", "label": "Silent"})
    with pytest.raises(TypeError, match="does not say whether the planner replays it"):
        register_strategy(silent())
    reasonless = type(
        "Reasonless", (QueryStrategy,), {"name": "reasonless", "label": "R", "planned_as": None}
    )
    with pytest.raises(TypeError, match="say why in unplanned_reason"):
        register_strategy(reasonless())
    assert "silent" not in STRATEGIES and "reasonless" not in STRATEGIES
    unplanned = {name for name, strategy in STRATEGIES.items() if strategy.planned_as is None}
    assert unplanned == {"active_uniform_labels", "active_uniform_costs"}
    assert all(STRATEGIES[name].unplanned_reason for name in unplanned)
