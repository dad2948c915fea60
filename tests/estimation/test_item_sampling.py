"""Item-level sampling distributions (Schnabel et al. 2016) on a hand-worked pool.

Toy pool: two queries, four slots, grades 0..2 with exponential gain g = (0, 1, 3), so
u = g / 3 = (0, 1/3, 1); DCG@2 with discounts (1, d2), d2 = 1/log2(3); p = (1/4, 3/4).

    query 0: slots 0, 1, 2, 3 used; slot 3 is ranked by no system (a judged extra document)
    query 1: slots 0, 1 used
    system 0 ranks  q0: (0, 1)   q1: (0, 1)
    system 1 ranks  q0: (1, 2)   q1: (1, -)
    system 2 ranks  q0: (2, 0)   q1: nothing
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from estimation.formats.trec import read_run
from estimation.metrics.spec import Metric
from estimation.sampling.items import expected_utility, item_sampling_distribution, system_weights
from estimation.sampling.pool import Pool
from estimation.sampling.pool_build import build_pool

DCG2 = Metric("DCG", 2, gain="exp", y_max=2)
D2 = 1.0 / math.log2(3.0)
P_X = np.array([0.25, 0.75])
# P(x, z; S) = p(x) * discount of z's position in S(x), written out by hand.
WEIGHTS = np.array(
    [
        [[0.25, 0.25 * D2, 0.0, 0.0], [0.75, 0.75 * D2, 0.0, 0.0]],
        [[0.0, 0.25, 0.25 * D2, 0.0], [0.0, 0.75, 0.0, 0.0]],
        [[0.25 * D2, 0.0, 0.25, 0.0], [0.0, 0.0, 0.0, 0.0]],
    ]
)
SUPPORT = np.array([[True, True, True, False], [True, True, False, False]])  # 5 weighted pairs


def _theta(seed: int = 3) -> np.ndarray:
    return np.random.default_rng(seed).dirichlet(np.ones(3), size=(2, 4))


def _pool(theta: np.ndarray | None = None) -> Pool:
    slot_used = np.array([[True, True, True, True], [True, True, False, False]])
    rankings = np.array(
        [
            [[0, 1], [0, 1]],
            [[1, 2], [1, -1]],
            [[2, 0], [-1, -1]],
        ]
    )
    return Pool(
        _theta() if theta is None else theta,
        slot_used,
        rankings,
        np.where(slot_used, 1.0, 0.0),
        P_X * 4.0,  # any scale: the pool normalises p
    )


def _utility(theta: np.ndarray) -> np.ndarray:
    return np.where(_pool(theta).slot_used, theta @ np.array([0.0, 1.0 / 3.0, 1.0]), 0.0)


def _mixed(score: np.ndarray, mix: float) -> np.ndarray:
    return (1.0 - mix) * score / score.sum() + mix * SUPPORT / SUPPORT.sum()


def test_it_weights_pairs_by_query_weight_and_discount() -> None:
    pool = _pool()
    for system in range(3):
        assert system_weights(pool, DCG2, system) == pytest.approx(WEIGHTS[system])
    top1 = system_weights(pool, Metric("DCG", 1, y_max=2), 1)
    assert top1 == pytest.approx(np.array([[0.0, 0.25, 0.0, 0.0], [0.0, 0.75, 0.0, 0.0]]))


def test_it_takes_the_prior_utility_from_the_label_model() -> None:
    theta = _theta()
    assert expected_utility(_pool(theta), DCG2) == pytest.approx(_utility(theta))


def test_it_samples_one_system_in_proportion_to_utility_times_weight() -> None:
    theta = _theta()
    plan = item_sampling_distribution(_pool(theta), DCG2, "one", (0,))
    assert plan.optimal == pytest.approx(_utility(theta) * WEIGHTS[0] / (_utility(theta) * WEIGHTS[0]).sum())
    assert plan.q == pytest.approx(_mixed(_utility(theta) * WEIGHTS[0], 0.1))
    assert plan.q.sum() == pytest.approx(1.0)
    # Slot 2 of query 0 only matters to systems 1 and 2: it is reachable through the mix alone.
    assert plan.optimal[0, 2] == 0.0
    assert plan.q[0, 2] == pytest.approx(0.1 / 5)
    # No system ranks slot 3 of query 0 (nor the unused slots of query 1): never drawn.
    assert np.all(plan.q[~SUPPORT] == 0.0)
    assert plan.cost == pytest.approx(_pool(theta).item_cost)


def test_it_uses_the_root_sum_of_squares_for_absolute_values() -> None:
    theta = _theta()
    plan = item_sampling_distribution(_pool(theta), DCG2, "absolute", (0, 1, 2), mix=0.2)
    score = _utility(theta) * np.sqrt((WEIGHTS**2).sum(axis=0))
    assert plan.q == pytest.approx(_mixed(score, 0.2))


def test_it_uses_the_absolute_weight_difference_for_two_systems() -> None:
    theta = _theta()
    plan = item_sampling_distribution(_pool(theta), DCG2, "difference", (0, 1))
    score = _utility(theta) * np.abs(WEIGHTS[0] - WEIGHTS[1])
    assert plan.q == pytest.approx(_mixed(score, 0.1))
    # Slot 1 of query 0 sits at rank 2 in system 0 and rank 1 in system 1: weight 0.25 (1 - d2).
    assert score[0, 1] == pytest.approx(_utility(theta)[0, 1] * 0.25 * (1.0 - D2))


def test_it_uses_the_spread_around_the_mean_for_relative_values() -> None:
    theta = _theta()
    plan = item_sampling_distribution(_pool(theta), DCG2, "relative", (0, 1, 2), mix=0.0)
    centred = WEIGHTS - WEIGHTS.mean(axis=0)
    score = _utility(theta) * np.sqrt((centred**2).sum(axis=0))
    assert plan.q == pytest.approx(score / score.sum())
    # With two systems the spread around their mean is |P_S - P_S'| / sqrt(2): same as a difference.
    pair = item_sampling_distribution(_pool(theta), DCG2, "relative", (0, 2))
    difference = item_sampling_distribution(_pool(theta), DCG2, "difference", (0, 2))
    assert pair.q == pytest.approx(difference.q)


def test_it_ignores_labels_under_the_uniform_prior() -> None:
    plan = item_sampling_distribution(_pool(), DCG2, "one", (1,), prior="uniform", mix=0.0)
    assert plan.q == pytest.approx(WEIGHTS[1] / WEIGHTS[1].sum())


def test_it_falls_back_to_the_uniform_floor_when_no_pair_is_informative() -> None:
    certain_zero = np.zeros((2, 4, 3))
    certain_zero[..., 0] = 1.0
    plan = item_sampling_distribution(_pool(certain_zero), DCG2, "absolute", (0, 1, 2), mix=0.0)
    assert plan.q == pytest.approx(SUPPORT / SUPPORT.sum())
    pool = _pool()
    twins = Pool(pool.theta, pool.slot_used, pool.rankings[[0, 0, 1]], pool.item_cost, pool.query_weight)
    identical = item_sampling_distribution(twins, DCG2, "difference", (0, 1), mix=0.0)
    # The floor covers every pair a system of the pool ranks (here systems 0 and 1).
    reachable = np.array([[True, True, True, False], [True, True, False, False]])
    assert identical.q == pytest.approx(reachable / reachable.sum())


@pytest.mark.parametrize(
    ("metric", "goal", "systems", "options", "message"),
    [
        (Metric("ERR", 2, y_max=2), "one", (0,), {}, "not linear"),
        (Metric("nDCG", 2, y_max=2), "one", (0,), {}, "not linear"),
        (DCG2, "one", (0, 1), {}, "exactly 1"),
        (DCG2, "difference", (0, 1, 2), {}, "exactly 2"),
        (DCG2, "relative", (0,), {}, "at least 2"),
        (DCG2, "sideways", (0,), {}, "unknown goal"),
        (DCG2, "one", (5,), {}, "out of range"),
        (DCG2, "one", (0,), {"prior": "flat"}, "unknown prior"),
        (DCG2, "one", (0,), {"mix": -0.1}, r"\[0, 1\]"),
        (Metric("DCG", 2, y_max=3), "one", (0,), {}, "grade scale"),
    ],
)
def test_it_rejects_impossible_requests(
    metric: Metric, goal: str, systems: tuple[int, ...], options: dict, message: str
) -> None:
    with pytest.raises(ValueError, match=message):
        item_sampling_distribution(_pool(), metric, goal, systems, **options)  # type: ignore[arg-type]


def test_it_rejects_err_for_system_weights() -> None:
    with pytest.raises(ValueError, match="not linear"):
        system_weights(_pool(), Metric("ERR", 2, y_max=2), 0)


def test_it_covers_every_pair_any_real_run_ranks(shared_data: Path) -> None:
    runs = [read_run(path) for path in sorted((shared_data / "mq2008" / "runs").glob("*.run"))]
    pool = build_pool(runs, 10, y_max=2)
    metric = Metric("DCG", 10, y_max=2)
    for goal, systems in (("one", (0,)), ("absolute", tuple(range(8))), ("relative", tuple(range(8)))):
        plan = item_sampling_distribution(pool, metric, goal, systems)  # type: ignore[arg-type]
        assert plan.q.sum() == pytest.approx(1.0)
        # Every slot of this pool comes from some run's top 10, so every used pair is reachable.
        assert np.all(plan.q[pool.slot_used] > 0)
        assert np.all(plan.q[~pool.slot_used] == 0)
