"""Tests for the draw queue's sampling loop (inverse-CDF draws with replacement)."""

from __future__ import annotations

import numpy as np
import pytest

from estimation.sampling.draws import (
    STOP_BUDGET,
    STOP_EXHAUSTED,
    draw_batch,
    pair_unit_items,
    seeded_draw,
    topic_unit_items,
)

# Topic 0 has slots 0 and 1, topic 1 has slot 0.
SLOT_USED = np.array([[True, True, False], [True, False, False]])


def _nothing_covered(topic: int) -> np.ndarray:
    return np.zeros(SLOT_USED.shape[1], dtype=bool)


def _per_slot(topic: int, slots: np.ndarray) -> float:
    return float(slots.size)


def _batch(q: np.ndarray, unit_items=topic_unit_items, **options) -> object:
    arguments = {
        "seed": 7,
        "first_order": 1,
        "covered_row": _nothing_covered,
        "uncovered": int(SLOT_USED.sum()),
        "cost": _per_slot,
        "budget_left": 100.0,
        "items_wanted": 100,
        "max_draws": 50,
        **options,
    }
    return draw_batch(q, SLOT_USED, unit_items, **arguments)


def test_it_draws_by_inverse_cdf_with_one_uniform_per_seed_and_order() -> None:
    cumulative = np.cumsum([1.0, 3.0])  # q = (1/4, 3/4)
    for order in range(1, 30):
        uniform = np.random.default_rng([5, order]).random()
        assert seeded_draw(cumulative, 5, order) == (0 if uniform < 0.25 else 1)
    assert seeded_draw(np.cumsum([0.0, 2.0, 0.0]), 1, 1) == 1


def test_it_maps_units_to_a_topics_items_or_one_pair() -> None:
    topic, slots = topic_unit_items(0, SLOT_USED)
    assert topic == 0 and slots.tolist() == [0, 1]
    topic, slots = pair_unit_items(4, SLOT_USED)  # 4 = topic 1 * 3 slots + slot 1: unused
    assert topic == 1 and slots.tolist() == []
    topic, slots = pair_unit_items(1, SLOT_USED)
    assert topic == 0 and slots.tolist() == [1]


def test_it_keeps_free_repeats_of_a_covered_topic_until_the_draw_limit() -> None:
    batch = _batch(np.array([1.0, 0.0]), max_draws=4)

    assert batch.units.tolist() == [0, 0, 0, 0]
    assert [slots.tolist() for slots in batch.new_slots] == [[0, 1], [], [], []]
    assert batch.costs.tolist() == [2.0, 0.0, 0.0, 0.0]
    assert batch.propensities.tolist() == [1.0] * 4
    assert batch.stopped == ""


def test_it_stops_when_every_item_is_covered_having_covered_each_once() -> None:
    batch = _batch(np.array([0.5, 0.5]))

    assert batch.stopped == STOP_EXHAUSTED
    covered = sorted(
        (int(t), int(s)) for t, slots in zip(batch.topics, batch.new_slots, strict=True) for s in slots
    )
    assert covered == [(0, 0), (0, 1), (1, 0)]
    assert batch.costs.sum() == 3.0


def test_it_stops_before_a_draw_that_costs_more_than_is_left() -> None:
    batch = _batch(np.array([1.0, 0.0]), budget_left=1.5)

    assert batch.stopped == STOP_BUDGET
    assert batch.n_draws == 0
    assert _batch(np.array([1.0, 0.0]), budget_left=2.0, max_draws=1).n_draws == 1


def test_it_stops_once_the_new_items_times_the_copies_reach_the_target() -> None:
    batch = _batch(np.array([0.5, 0.5]), items_wanted=2, copies=2)

    assert batch.n_draws == 1
    assert batch.stopped == ""


def test_it_creates_nothing_for_items_covered_before_the_batch() -> None:
    def topic_zero_covered(topic: int) -> np.ndarray:
        return SLOT_USED[0] if topic == 0 else np.zeros(3, dtype=bool)

    batch = _batch(np.array([1.0, 0.0]), covered_row=topic_zero_covered, uncovered=1, max_draws=3)

    assert [slots.size for slots in batch.new_slots] == [0, 0, 0]
    assert batch.costs.tolist() == [0.0, 0.0, 0.0]


def test_it_draws_pairs_at_item_level_with_their_propensities() -> None:
    q = np.array([[1.0, 3.0, 0.0], [4.0, 0.0, 0.0]])

    batch = _batch(q, unit_items=pair_unit_items)

    assert batch.stopped == STOP_EXHAUSTED
    assert set(batch.units.tolist()) == {0, 1, 3}
    np.testing.assert_allclose(batch.propensities, q.ravel()[batch.units] / 8.0)
    assert all(slots.size <= 1 for slots in batch.new_slots)


@pytest.mark.parametrize("split", [1, 2, 5])
def test_it_draws_the_same_units_however_the_batches_are_split(split: int) -> None:
    q = np.array([0.3, 0.7])
    whole = _batch(q, covered_row=lambda topic: np.zeros(3, dtype=bool), uncovered=10**6, max_draws=8)

    units: list[int] = []
    while len(units) < 8:
        part = _batch(q, first_order=1 + len(units), uncovered=10**6, max_draws=min(split, 8 - len(units)))
        units += part.units.tolist()

    assert units == whole.units.tolist()


def test_it_draws_units_in_proportion_to_q() -> None:
    q = np.array([1.0, 3.0])
    batch = _batch(q, uncovered=10**6, max_draws=4000)

    share = np.mean(batch.units == 1)
    assert abs(share - 0.75) < 0.03  # 4000 draws: standard error 0.007


def test_it_takes_draws_that_spend_exactly_the_budget_up_to_rounding() -> None:
    # Ten draws of cost 0.1 against a budget of 1: the running sum reaches
    # 0.9999999999999999, and the tenth draw must still fit.
    slot_used = np.ones((10, 1), dtype=bool)
    batch = draw_batch(
        np.full(10, 0.1),
        slot_used,
        topic_unit_items,
        seed=1,
        first_order=1,
        covered_row=lambda topic: np.zeros(1, dtype=bool),
        uncovered=10,
        cost=lambda topic, slots: 0.1 * slots.size,
        budget_left=1.0,
        items_wanted=1000,
        max_draws=1000,
    )
    assert sum(slots.size for slots in batch.new_slots) == 10
    assert batch.stopped == STOP_EXHAUSTED
