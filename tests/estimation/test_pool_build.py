"""Building a pool from runs: query order, slots as the union of the top K, theta, costs."""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np
import pytest

from estimation.formats.trec import read_run
from estimation.sampling.pool import EMPTY, Pool
from estimation.sampling.pool_build import build_pool

RUN_A = ("A", {"9": ("d1", "d2", "d3"), "10": ("e1", "e2")})
RUN_B = ("B", {"10": ("e2", "e3", "e1"), "2": ("f1",)})


def _docs(pool: Pool, query: int, system: int) -> list[str]:
    """The docnos a system ranks for a query, read back through the pool's slots."""
    return [pool.item_ids[query][slot] for slot in pool.rankings[system, query] if slot != EMPTY]


def test_it_builds_the_union_of_the_runs_top_k() -> None:
    pool = build_pool([RUN_A, RUN_B], 2, y_max=1)
    assert pool.query_ids == ("2", "9", "10")  # numeric order, not "10" < "2" < "9"
    assert pool.system_names == ("A", "B")
    assert pool.rankings.shape == (2, 3, 2)
    # Slots: run A's top 2 first, then run B's new documents; d3 and e1 (B's rank 3) are cut.
    assert pool.item_ids == (("f1",), ("d1", "d2"), ("e1", "e2", "e3"))
    assert pool.slot_used.sum(axis=1).tolist() == [1, 2, 3]
    assert _docs(pool, 1, 0) == ["d1", "d2"]
    assert _docs(pool, 2, 0) == ["e1", "e2"]
    assert _docs(pool, 2, 1) == ["e2", "e3"]
    assert _docs(pool, 0, 1) == ["f1"]
    # A query a run does not list, and a ranking shorter than K, leave empty positions.
    assert pool.rankings[0, 0].tolist() == [EMPTY, EMPTY]
    assert pool.rankings[1, 0].tolist() == [0, EMPTY]
    assert pool.query_weight == pytest.approx(np.full(3, 1 / 3))


def test_it_reads_theta_from_labels_and_defaults_to_uniform() -> None:
    labels = {("10", "e3"): (0.2, 0.3, 0.5), ("9", "d1"): (1.0, 0.0, 0.0), ("9", "zz"): (0.0, 0.0, 1.0)}
    pool = build_pool([RUN_A, RUN_B], 2, y_max=2, labels=labels)
    assert pool.theta.shape == (3, 3, 3)
    assert pool.theta[2, 2] == pytest.approx([0.2, 0.3, 0.5])  # e3 is slot 2 of query "10"
    assert pool.theta[1, 0] == pytest.approx([1.0, 0.0, 0.0])  # d1
    assert pool.theta[1, 1] == pytest.approx(np.full(3, 1 / 3))  # d2: not listed
    assert pool.theta[2, 0] == pytest.approx(np.full(3, 1 / 3))


def test_it_takes_item_costs_query_weights_and_extra_items() -> None:
    costs = {"d1": 1.0, "d2": 2.0, "e1": 3.0, "e2": 4.0, "e3": 5.0, "f1": 6.0, "g1": 7.0, "x9": 0.5}
    pool = build_pool(
        [RUN_A, RUN_B],
        2,
        y_max=1,
        item_cost=costs,
        query_weight={"2": 1.0, "9": 1.0, "10": 2.0, "77": 0.0},
        extra_items={"9": ("x9", "d1"), "77": ("g1",)},
    )
    assert pool.query_ids == ("2", "9", "10", "77")
    assert pool.item_ids[1] == ("d1", "d2", "x9")
    assert pool.item_ids[3] == ("g1",)
    assert pool.rankings[:, 3].tolist() == [[EMPTY, EMPTY], [EMPTY, EMPTY]]
    assert pool.item_cost[1] == pytest.approx([1.0, 2.0, 0.5])
    assert pool.item_cost[2] == pytest.approx([3.0, 4.0, 5.0])
    assert pool.item_cost[0] == pytest.approx([6.0, 0.0, 0.0])
    assert pool.query_weight == pytest.approx([0.25, 0.25, 0.5, 0.0])


def test_it_defaults_to_one_unit_per_document() -> None:
    pool = build_pool([RUN_A, RUN_B], 3, y_max=1)
    assert pool.item_cost.sum(axis=1).tolist() == [1.0, 3.0, 3.0]
    assert np.all(pool.item_cost[~pool.slot_used] == 0.0)


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"runs": [("A", {"1": ("d1", "d2", "d1")})]}, "twice"),
        ({"labels": {("9", "d1"): (0.5, 0.5)}}, "expected 3"),
        ({"item_cost": {"d1": 1.0}}, "no cost"),
        ({"query_weight": {"9": 1.0}}, "no query weight"),
        ({"query_weight": np.ones(2)}, "shape"),
        ({"runs": []}, "at least one run"),
        ({"runs": [("A", {})]}, "no queries"),
        ({"cutoff": 0}, "cutoff"),
    ],
)
def test_it_rejects_inconsistent_input(options: dict, message: str) -> None:
    arguments = {"runs": [RUN_A, RUN_B], "cutoff": 3, "y_max": 2} | options
    runs = arguments.pop("runs")
    cutoff = arguments.pop("cutoff")
    with pytest.raises(ValueError, match=message):
        build_pool(runs, cutoff, **arguments)


def test_it_builds_real_runs_as_the_union_of_their_top_k(shared_data: Path) -> None:
    runs = [read_run(path) for path in sorted((shared_data / "mq2008" / "runs").glob("*.run"))]
    cutoff = 10
    pool = build_pool(runs, cutoff, y_max=2)
    query_ids = {qid for run in runs for qid in run.rankings}
    assert set(pool.query_ids) == query_ids
    assert list(pool.query_ids) == sorted(query_ids, key=int)
    assert pool.rankings.shape == (len(runs), len(query_ids), cutoff)
    assert pool.system_names == tuple(run.tag for run in runs)
    for query, qid in enumerate(pool.query_ids):
        union = {doc for run in runs for doc in run.rankings.get(qid, ())[:cutoff]}
        assert set(pool.item_ids[query]) == union
        assert len(pool.item_ids[query]) == len(union) == pool.slot_used[query].sum()
        for system, run in enumerate(runs):
            assert tuple(_docs(pool, query, system)) == run.rankings.get(qid, ())[:cutoff]
    assert pool.n_slots == max(len(items) for items in pool.item_ids)


@pytest.mark.slow
def test_it_scales_to_thirty_thousand_queries() -> None:
    # Two runs that each return 20 of a query's documents; K = 20 keeps up to 40 slots.
    rng = np.random.default_rng(11)
    m, depth = 30_000, 20
    runs = []
    for system in range(2):
        picks = rng.permuted(np.tile(np.arange(30), (m, 1)), axis=1)[:, :depth]
        runs.append((f"s{system}", {str(q): tuple(f"q{q}-d{item}" for item in picks[q]) for q in range(m)}))
    started = time.perf_counter()
    pool = build_pool(runs, depth, y_max=4)
    elapsed = time.perf_counter() - started
    assert pool.rankings.shape == (2, m, depth)
    assert pool.theta.shape[2] == 5
    assert pool.n_slots <= 2 * depth
    for query in (0, 123, m - 1):
        union = set(runs[0][1][str(query)]) | set(runs[1][1][str(query)])
        assert set(pool.item_ids[query]) == union
        assert _docs(pool, query, 1) == list(runs[1][1][str(query)])
    assert elapsed < 30.0  # a few seconds on a shared two-core machine


def test_it_keeps_every_estimand_topic_even_when_no_run_ranks_it() -> None:
    # Repro: topics no run ranks were dropped silently, so estimates targeted the mean over
    # the pooled topics while evaluate averages over the qrels topics.
    runs = [("A", {"1": ["a", "b"], "4": ["x"]}), ("B", {"1": ["b"]})]
    pool = build_pool(runs, 2, y_max=1, topics=["1", "2", "10"])
    assert pool.query_ids == ("1", "2", "10")  # run topic 4 is not in the estimand: dropped
    assert pool.slot_used.any(axis=1).tolist() == [True, False, False]
    assert np.all(pool.rankings[:, 1:] == -1)
    assert pool.item_cost[1:].sum() == 0.0
    assert pool.query_weight == pytest.approx([1 / 3] * 3)
