"""Query-level sampling distributions (Sawade et al. 2013) on hand-worked pools.

Toy pool: three queries, two slots each, binary grades, DCG@2 with exponential gain
(g(0) = 0, g(1) = 1) and discounts d = (1, 1/log2(3)). System 0 ranks (slot 0, slot 1),
system 1 ranks (slot 1, slot 0). With a_i = P(y = 1) of the item at rank i, the DCG of one
ranking has E[L] = sum d_i a_i and Var[L] = sum d_i^2 a_i (1 - a_i).
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from estimation.formats.trec import read_run
from estimation.metrics.spec import Metric
from estimation.sampling.pool import Pool
from estimation.sampling.pool_build import build_pool
from estimation.sampling.queries import DEFAULT_MIX, optimal_query_distribution, passive_distribution
from tests.estimation import bruteforce

DCG2 = Metric("DCG", 2, gain="exp", y_max=1)
D = np.array([1.0, 1.0 / math.log2(3.0)])
# P(y = 1) per query and slot.
RELEVANT = np.array([[0.5, 0.0], [1.0, 0.2], [0.9, 0.5]])
ITEM_COST = np.array([[1.0, 2.0], [1.0, 1.0], [3.0, 1.0]])  # lambda = 3, 2, 4


def _pool(
    relevant: np.ndarray = RELEVANT,
    query_weight: tuple[float, ...] = (1.0, 1.0, 1.0),
    second_system: tuple[int, int] = (1, 0),
) -> Pool:
    theta = np.stack([1.0 - relevant, relevant], axis=-1)
    m = relevant.shape[0]
    rankings = np.stack([np.tile([0, 1], (m, 1)), np.tile(second_system, (m, 1))])
    return Pool(theta, np.ones((m, 2), dtype=bool), rankings, ITEM_COST[:m], np.array(query_weight))


def _dcg_moments(relevant: np.ndarray, order: tuple[int, int]) -> tuple[np.ndarray, np.ndarray]:
    a = relevant[:, list(order)]
    return a @ D, (a * (1.0 - a)) @ D**2


def _expected_q(p: np.ndarray, second_moment: np.ndarray, cost: np.ndarray, mix: float) -> np.ndarray:
    optimal = p * np.sqrt(second_moment) / np.sqrt(cost)
    return (1.0 - mix) * optimal / optimal.sum() + mix * p


def test_it_follows_the_cost_optimal_formula_for_one_system() -> None:
    mean, variance = _dcg_moments(RELEVANT, (0, 1))
    p = np.full(3, 1.0 / 3.0)
    second_moment = variance + (mean - p @ mean) ** 2
    plan = optimal_query_distribution(_pool(), DCG2, "one", (0,))
    assert plan.mix == DEFAULT_MIX == 0.1
    assert plan.expected == pytest.approx(mean)
    assert plan.second_moment == pytest.approx(second_moment)
    assert plan.cost == pytest.approx(np.array([3.0, 2.0, 4.0]) / 3.0)
    assert plan.q == pytest.approx(_expected_q(p, second_moment, np.array([3.0, 2.0, 4.0]), 0.1))
    assert plan.q.sum() == pytest.approx(1.0)
    assert plan.optimal.sum() == pytest.approx(1.0)


def test_it_keeps_the_mixing_floor_where_a_query_carries_no_information() -> None:
    # Query 1 is certain and sits exactly at the average: E[(L - R)^2] = 0 so q*(x) = 0.
    # E[L] = 0.5, 1 and 1 + 0.5 = 1.5 (a_1 d_2 = 0.5), so R = 1 = E[L | query 1].
    relevant = np.array([[0.5, 0.0], [1.0, 0.0], [1.0, 0.5 * math.log2(3.0)]])
    assert (relevant @ D).mean() == pytest.approx(1.0)
    pool = _pool(relevant)
    p = 1.0 / 3.0
    for mix in (0.0, 0.1, 0.3):
        plan = optimal_query_distribution(pool, DCG2, "one", mix=mix)
        assert plan.second_moment[1] == pytest.approx(0.0, abs=1e-12)
        assert plan.optimal[1] == pytest.approx(0.0, abs=1e-7)
        assert plan.q[1] == pytest.approx(mix * p, abs=1e-7)
        assert np.all(plan.q >= mix * p - 1e-12)


def test_it_is_invariant_to_scaling_costs_and_query_weights() -> None:
    pool = _pool(query_weight=(1.0, 2.0, 3.0))
    reference = optimal_query_distribution(pool, DCG2, "one", query_cost=np.array([3.0, 2.0, 4.0]))
    scaled_cost = optimal_query_distribution(pool, DCG2, "one", query_cost=np.array([21.0, 14.0, 28.0]))
    scaled_p = optimal_query_distribution(_pool(query_weight=(5.0, 10.0, 15.0)), DCG2, "one")
    assert scaled_cost.q == pytest.approx(reference.q)
    assert scaled_p.q == pytest.approx(reference.q)


def test_it_weights_queries_by_p() -> None:
    p = np.array([1.0, 2.0, 3.0]) / 6.0
    mean, variance = _dcg_moments(RELEVANT, (0, 1))
    second_moment = variance + (mean - p @ mean) ** 2
    plan = optimal_query_distribution(_pool(query_weight=(1.0, 2.0, 3.0)), DCG2, "one")
    assert plan.second_moment == pytest.approx(second_moment)
    assert plan.q == pytest.approx(_expected_q(p, second_moment, np.array([3.0, 2.0, 4.0]), 0.1))


def test_it_ignores_the_label_model_for_active_unid() -> None:
    p = np.full(3, 1.0 / 3.0)
    uniform = np.full((3, 2), 0.5)
    mean, variance = _dcg_moments(uniform, (0, 1))  # equal for every query: only costs matter
    plan = optimal_query_distribution(_pool(), DCG2, "one", uniform_labels=True, mix=0.0)
    active = optimal_query_distribution(_pool(), DCG2, "one", mix=0.0)
    assert plan.second_moment == pytest.approx(variance + (mean - p @ mean) ** 2)
    assert plan.q == pytest.approx(_expected_q(p, plan.second_moment, np.array([3.0, 2.0, 4.0]), 0.0))
    assert plan.q == pytest.approx((1 / np.sqrt([3.0, 2.0, 4.0])) / (1 / np.sqrt([3.0, 2.0, 4.0])).sum())
    assert not np.allclose(plan.q, active.q)


def test_it_ignores_costs_in_q_for_active_unic_but_reports_them() -> None:
    p = np.full(3, 1.0 / 3.0)
    plan = optimal_query_distribution(_pool(), DCG2, "one", unit_costs=True)
    active = optimal_query_distribution(_pool(), DCG2, "one")
    assert plan.q == pytest.approx(_expected_q(p, plan.second_moment, np.ones(3), 0.1))
    assert plan.cost == pytest.approx(active.cost)
    assert plan.second_moment == pytest.approx(active.second_moment)
    assert not np.allclose(plan.q, active.q)


def test_it_matches_one_system_for_a_leaderboard_of_one() -> None:
    one = optimal_query_distribution(_pool(), DCG2, "one", (1,))
    board = optimal_query_distribution(_pool(), DCG2, "leaderboard", (1,))
    assert board.q == pytest.approx(one.q)
    assert board.second_moment == pytest.approx(one.second_moment)
    assert board.expected == pytest.approx(one.expected)


def test_it_sums_second_moments_over_a_leaderboard() -> None:
    pool = _pool()
    first = optimal_query_distribution(pool, DCG2, "one", (0,))
    second = optimal_query_distribution(pool, DCG2, "one", (1,))
    board = optimal_query_distribution(pool, DCG2, "leaderboard", (0, 1))
    p = np.full(3, 1.0 / 3.0)
    assert board.second_moment == pytest.approx(first.second_moment + second.second_moment)
    assert board.expected == pytest.approx((first.expected + second.expected) / 2.0)
    # Both systems rank the same two slots, so the union costs what one ranking costs.
    assert board.q == pytest.approx(_expected_q(p, board.second_moment, np.array([3.0, 2.0, 4.0]), 0.1))


def test_it_follows_the_formula_for_a_difference() -> None:
    # delta = (g(y0) - g(y1)) (1 - d2): E = (1 - d2)(a0 - a1), Var = (1 - d2)^2 (sum a(1 - a)).
    weight = 1.0 - D[1]
    mean = weight * (RELEVANT[:, 0] - RELEVANT[:, 1])
    variance = weight**2 * (RELEVANT * (1.0 - RELEVANT)).sum(axis=1)
    p = np.full(3, 1.0 / 3.0)
    second_moment = variance + (mean - p @ mean) ** 2
    plan = optimal_query_distribution(_pool(), DCG2, "difference", (0, 1))
    assert plan.expected == pytest.approx(mean)
    assert plan.second_moment == pytest.approx(second_moment)
    assert plan.q == pytest.approx(_expected_q(p, second_moment, np.array([3.0, 2.0, 4.0]), 0.1))
    reversed_plan = optimal_query_distribution(_pool(), DCG2, "difference", (1, 0))
    assert reversed_plan.expected == pytest.approx(-mean)
    assert reversed_plan.q == pytest.approx(plan.q)


def test_it_falls_back_to_p_for_a_difference_of_identical_rankings() -> None:
    pool = _pool(query_weight=(1.0, 2.0, 5.0), second_system=(0, 1))
    plan = optimal_query_distribution(pool, DCG2, "difference", (0, 1))
    assert plan.second_moment == pytest.approx(np.zeros(3), abs=1e-15)
    assert plan.optimal == pytest.approx(pool.query_weight)
    assert plan.q == pytest.approx(pool.query_weight)


def test_it_charges_only_the_union_within_the_metric_cutoff() -> None:
    # DCG@1: system 0 needs slot 0, system 1 slot 1; the union is both slots only for the pair.
    dcg1 = Metric("DCG", 1, gain="exp", y_max=1)
    one = optimal_query_distribution(_pool(), dcg1, "one", (0,))
    pair = optimal_query_distribution(_pool(), dcg1, "difference", (0, 1))
    assert one.cost == pytest.approx(ITEM_COST[:, 0] / ITEM_COST[:, 0].mean())
    assert pair.cost == pytest.approx(ITEM_COST.sum(axis=1) / ITEM_COST.sum(axis=1).mean())


def test_it_matches_brute_force_for_an_err_difference() -> None:
    rng = np.random.default_rng(7)
    metric = Metric("ERR", 3, y_max=2)
    theta = rng.dirichlet(np.ones(3), size=(4, 4))
    rankings = np.array([[[0, 1, 2]] * 4, [[3, 0, 1], [2, 1, 0], [0, 1, 2], [1, 3, -1]]])
    pool = Pool(theta, np.ones((4, 4), dtype=bool), rankings, np.ones((4, 4)), np.full(4, 0.25))
    plan = optimal_query_distribution(pool, metric, "difference", (0, 1), mix=0.0)
    moments = [
        bruteforce.difference_mean_variance(theta[x], rankings[0, x], rankings[1, x], metric)
        for x in range(4)
    ]
    mean = np.array([moment[0] for moment in moments])
    second_moment = np.array([moment[1] for moment in moments]) + (mean - mean.mean()) ** 2
    cost = np.array([4.0, 3.0, 3.0, 4.0])  # the union of the two top-3 lists
    assert plan.second_moment == pytest.approx(second_moment, abs=1e-12)
    assert plan.q == pytest.approx(_expected_q(np.full(4, 0.25), second_moment, cost, 0.0))


def test_it_gives_passive_sampling_p() -> None:
    pool = _pool(query_weight=(1.0, 1.0, 2.0))
    plan = passive_distribution(pool, query_cost=np.array([3.0, 2.0, 4.0]))
    assert plan.q == pytest.approx([0.25, 0.25, 0.5])
    assert plan.mix == 0.0
    assert plan.cost == pytest.approx([3.0, 2.0, 4.0])
    with pytest.raises(ValueError, match="> 0"):
        passive_distribution(pool, query_cost=np.array([3.0, 0.0, 4.0]))


@pytest.mark.parametrize(
    ("metric", "goal", "systems", "options", "message"),
    [
        (Metric("nDCG", 2, y_max=1), "one", (0,), {}, "nDCG"),
        (DCG2, "one", (0, 1), {}, "exactly 1"),
        (DCG2, "difference", (0,), {}, "exactly 2"),
        (DCG2, "leaderboard", (), {}, "at least one"),
        (DCG2, "everything", (0,), {}, "unknown goal"),
        (DCG2, "one", (2,), {}, "out of range"),
        (DCG2, "one", (0,), {"mix": 1.5}, r"\[0, 1\]"),
        (DCG2, "one", (0,), {"query_cost": np.array([1.0, 0.0, 1.0])}, "> 0"),
        (DCG2, "one", (0,), {"query_cost": np.array([1.0, -1.0, 1.0])}, "non-negative"),
        (DCG2, "one", (0,), {"query_cost": np.ones(2)}, "shape"),
    ],
)
def test_it_rejects_impossible_requests(
    metric: Metric, goal: str, systems: tuple[int, ...], options: dict, message: str
) -> None:
    with pytest.raises(ValueError, match=message):
        optimal_query_distribution(_pool(), metric, goal, systems, **options)  # type: ignore[arg-type]


def test_it_plans_a_run_that_misses_a_topic() -> None:
    # Repro: a run that misses topic 1 could not be planned ("query has no item to label
    # (cost 0)"). Topic 1 is known (DCG 0) and free; it keeps a positive q, charged like the
    # cheapest topic, so the self-normalised estimate still averages over both topics.
    pool = Pool(
        np.full((2, 2, 2), 0.5),
        np.ones((2, 2), dtype=bool),
        np.array([[[0, 1], [-1, -1]]]),
        np.ones((2, 2)),
        np.full(2, 0.5),
    )
    plan = optimal_query_distribution(pool, DCG2, "one", mix=0.0)
    assert plan.cost.tolist() == [2.0, 0.0]  # normalised to a mean of 1
    assert plan.expected[1] == 0.0
    # Both topics sit at the same distance from R; topic 0 adds its own variance.
    mean0 = 0.5 + 0.5 * D[1]
    second = np.array([0.25 * (1 + D[1] ** 2) + (mean0 / 2) ** 2, (mean0 / 2) ** 2])
    assert plan.q == pytest.approx(np.sqrt(second) / np.sqrt(second).sum())
    assert plan.q[1] > 0
    passive = passive_distribution(pool, query_cost=plan.cost)
    assert passive.q.tolist() == [0.5, 0.5]


def test_it_still_rejects_a_free_query_that_has_items_to_label() -> None:
    with pytest.raises(ValueError, match="has an item to label"):
        optimal_query_distribution(_pool(), DCG2, "one", query_cost=np.array([1.0, 0.0, 1.0]))


def test_it_plans_real_runs_with_every_query_reachable(shared_data: Path) -> None:
    runs = [read_run(shared_data / "mq2008" / "runs" / name) for name in ("AdaRank.run", "RankBoost.run")]
    pool = build_pool(runs, 10, y_max=2)
    union_sizes = np.array(
        [len({doc for run in runs for doc in run.rankings.get(qid, ())[:10]}) for qid in pool.query_ids]
    )
    same = np.all(pool.rankings[0] == pool.rankings[1], axis=1)
    assert same.any() and not same.all()
    for metric in (Metric("DCG", 10, y_max=2), Metric("ERR", 10, y_max=2)):
        plan = optimal_query_distribution(pool, metric, "difference", (0, 1))
        assert plan.q.sum() == pytest.approx(1.0)
        assert np.all(plan.q >= 0.1 * pool.query_weight - 1e-15)
        assert plan.cost == pytest.approx(union_sizes / union_sizes.mean())
        # Identical top-10 lists have delta = 0 for every labelling: only (0 - Delta)^2 remains.
        delta = pool.query_weight @ plan.expected
        assert plan.expected[same] == pytest.approx(0.0, abs=1e-12)
        assert plan.second_moment[same] == pytest.approx(np.full(same.sum(), delta**2))


def test_it_falls_back_to_p_for_an_err_difference_of_identical_rankings() -> None:
    # Repro: ERR's second moment of delta for identical rankings came out as rounding noise
    # (about 2e-16), and q/p ranged from 0.10 to 4.98 instead of falling back to p as DCG does.
    rng = np.random.default_rng(11)
    m, n = 40, 5
    theta = rng.dirichlet(np.ones(3), (m, n))
    ranking = np.stack([rng.permutation(n) for _ in range(m)])
    pool = Pool(
        theta, np.ones((m, n), dtype=bool), np.stack([ranking, ranking]), np.ones((m, n)), np.full(m, 1 / m)
    )
    err5 = Metric("ERR", 5, y_max=2)
    plan = optimal_query_distribution(pool, err5, "difference", (0, 1), mix=0.0)
    assert np.all(plan.second_moment == 0.0)
    assert np.array_equal(plan.optimal, pool.query_weight)


def test_it_gives_certain_err_labels_a_variance_of_exactly_zero() -> None:
    from estimation.metrics.moments import ranking_moments

    rng = np.random.default_rng(5)
    grades = rng.integers(0, 3, (30, 4))
    theta = np.eye(3)[grades]  # every label certain
    ranking = np.tile(np.arange(4), (30, 1))
    assert np.all(ranking_moments(theta, ranking, Metric("ERR", 4, y_max=2)).variance == 0.0)
