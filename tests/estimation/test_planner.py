"""`estimation.simulation.planner`: hand-worked toy campaigns, the oracles against the truth, and an
independent replay of the same seeds through the one-draw-at-a-time loop.

Toy data: binary grades, DCG@2 with exponential gain (g(1) = 1), discounts (1, d2) with
d2 = 1/log2(3); every document costs 1, so a topic costs its pooled documents.

    qrels   topic 1: a = 1, b = 0     topic 2: c = 1, d = 1     topic 3: e = 1 (no run ranks it)
    run A   topic 1: a, b             topic 2: c, d
    run B   topic 1: b, a             topic 2: d, c

    DCG of A: topic 1 = 1, topic 2 = 1 + d2, topic 3 = 0   -> truth (2 + d2) / 3
    DCG of B: topic 1 = d2, topic 2 = 1 + d2, topic 3 = 0  -> A - B = (1 - d2) / 3
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from estimation.formats.trec import Run, read_qrels, read_run
from estimation.metrics.spec import Metric
from estimation.metrics.values import evaluate_run, summarize_run
from estimation.sampling.estimators import query_level_estimate
from estimation.sampling.item_estimators import item_level_difference_estimate
from estimation.sampling.items import item_sampling_distribution, system_weights
from estimation.sampling.pool_build import build_pool
from estimation.sampling.queries import optimal_query_distribution
from estimation.simulation.loop import simulate_item_level, simulate_query_level
from estimation.simulation.planner import (
    budget_needed,
    default_budgets,
    plan_budgets,
    prepare_replay,
    saving,
)

D2 = 1.0 / math.log2(3.0)
QRELS = {"1": {"a": 1, "b": 0}, "2": {"c": 1, "d": 1}, "3": {"e": 1}}
METRIC = Metric.parse("DCG@2", y_max=1)


def _run(tag: str, rankings: dict[str, tuple[str, ...]]) -> Run:
    return Run(tag=tag, rankings=rankings, scores={qid: (2.0, 1.0) for qid in rankings})


RUN_A = _run("A", {"1": ("a", "b"), "2": ("c", "d")})
RUN_B = _run("B", {"1": ("b", "a"), "2": ("d", "c")})


def test_it_targets_evaluates_mean_over_every_qrels_topic() -> None:
    replay = prepare_replay(QRELS, [RUN_A, RUN_B], METRIC, "one")
    assert replay.truth == pytest.approx((2 + D2) / 3, abs=1e-12)
    assert replay.pool.query_ids == ("1", "2")
    assert replay.scale == pytest.approx(2 / 3)
    np.testing.assert_allclose(replay.topic_values, [1.0, 1 + D2])
    np.testing.assert_allclose(replay.topic_cost, [2.0, 2.0])
    np.testing.assert_allclose(replay.utility, [[1.0, 0.0], [1.0, 1.0]])
    difference = prepare_replay(QRELS, [RUN_A, RUN_B], METRIC, "difference")
    assert difference.truth == pytest.approx((1 - D2) / 3, abs=1e-12)
    np.testing.assert_allclose(difference.topic_values, [1 - D2, 0.0], atol=1e-15)
    np.testing.assert_allclose(default_budgets(replay), [20.0, 40.0, 80.0])


def test_it_judges_one_topic_on_a_budget_of_one_topic() -> None:
    """Budget 2 buys one topic; repeats of it are free, the other topic is unaffordable. The
    estimate is that topic's value (times 2/3), so every campaign errs by exactly
    (2/3) |L1 - L2| / 2 = d2 / 3, and its mean is the truth."""
    replay = prepare_replay(QRELS, [RUN_A, RUN_B], METRIC, "one")
    (row,) = plan_budgets(replay, ["passive"], [2.0], repetitions=2000, seed=1)
    assert row.topics_judged == 1.0
    assert row.spent == 2.0
    assert row.rmse == pytest.approx(D2 / 3, abs=1e-12)
    assert abs(row.mean - row.truth) < 4 * row.bias_se
    assert row.n_without_estimate == 0


def test_it_is_exact_when_every_topic_scores_the_same() -> None:
    qrels = {"1": {"a": 1}, "2": {"c": 1}}
    replay = prepare_replay(qrels, [RUN_A, RUN_B], METRIC, "one")
    for row in plan_budgets(replay, ["passive", "active"], [2.0, 4.0], repetitions=20):
        assert row.mean == pytest.approx(1.0, abs=1e-12)
        assert row.rmse == pytest.approx(0.0, abs=1e-12)


def test_it_reports_no_estimate_when_nothing_is_affordable() -> None:
    replay = prepare_replay(QRELS, [RUN_A], METRIC, "one")
    (row,) = plan_budgets(replay, ["passive"], [1.0], repetitions=5)
    assert row.n_without_estimate == 5
    assert math.isnan(row.mean) and math.isnan(row.rmse)
    assert row.coverage == 1.0 and row.mean_width == math.inf and row.topics_judged == 0


def test_it_keeps_item_level_estimates_unbiased() -> None:
    """Budget 1 buys one (topic, document) pair per campaign: an unbiased single term."""
    replay = prepare_replay(QRELS, [RUN_A, RUN_B], METRIC, "difference")
    (row,) = plan_budgets(replay, ["items"], [1.0], repetitions=4000, seed=3)
    assert row.topics_judged == 1.0
    assert abs(row.mean - row.truth) < 4 * row.bias_se


def test_it_refuses_strategies_the_metric_does_not_support() -> None:
    err_replay = prepare_replay(QRELS, [RUN_A], Metric.parse("ERR@2", y_max=1), "one")
    with pytest.raises(ValueError, match="items cannot estimate ERR@2"):
        plan_budgets(err_replay, ["items"], [2.0])
    ndcg_replay = prepare_replay(QRELS, [RUN_A], Metric.parse("nDCG@2", y_max=1), "one")
    assert [row.strategy for row in plan_budgets(ndcg_replay, None, [2.0], repetitions=2)] == ["passive"]
    with pytest.raises(ValueError, match="at least 2 run"):
        prepare_replay(QRELS, [RUN_A], METRIC, "difference")
    with pytest.raises(ValueError, match="budgets must be positive"):
        plan_budgets(err_replay, ["passive"], [0.0])


def test_it_interpolates_the_budget_for_a_target_in_log_log() -> None:
    from estimation.simulation.planner import PlannerRow

    def row(strategy: str, budget: float, rmse: float) -> PlannerRow:
        return PlannerRow(strategy, budget, 0.0, 0.0, 0.0, rmse, 0.95, 1.0, 1.0, budget, 10, 0)

    # rmse = 1 / sqrt(budget) for passive; items reach the same error on a quarter of the budget.
    rows = [row("passive", b, b**-0.5) for b in (10, 20, 40)] + [
        row("items", b, (4 * b) ** -0.5) for b in (10, 20, 40)
    ]
    need = budget_needed(rows, "passive", 30**-0.5)
    assert need.budget == pytest.approx(30.0) and not need.extrapolated
    assert saving(rows, "items", 40.0).budget == pytest.approx(0.75)
    assert not saving(rows, "items", 40.0).extrapolated
    assert saving(rows, "items", 10.0).budget == pytest.approx(0.75)  # below the grid: the line extended
    assert saving(rows, "items", 10.0).extrapolated


@pytest.fixture(scope="module")
def robust(shared_data: Path) -> tuple[dict, list[Run]]:
    folder = shared_data / "robust03"
    runs = [read_run(folder / "runs" / f"input.{name}.gz") for name in ("pircRBa1", "NLPR03vb10", "uwmtCR0")]
    return read_qrels(folder / "qrels.txt"), runs


@pytest.mark.parametrize("metric_text", ["DCG@10", "ERR@10"])
def test_it_builds_oracles_that_average_to_the_truth(
    robust: tuple[dict, list[Run]], metric_text: str
) -> None:
    qrels, runs = robust
    metric = Metric.parse(metric_text, y_max=2)
    for goal in ("one", "difference"):
        replay = prepare_replay(qrels, runs, metric, goal)
        assert replay.topic_values.mean() * replay.scale == pytest.approx(replay.truth, abs=1e-12)
        if metric.is_linear_in_labels:
            weights = [system_weights(replay.pool, metric, s) for s in replay.systems]
            target = weights[0] if goal == "one" else weights[0] - weights[1]
            item_truth = float((target * replay.utility).sum()) * metric.gain_table().max() * replay.scale
            assert item_truth == pytest.approx(replay.truth, abs=1e-12)


def test_it_matches_an_independent_replay_of_the_same_seeds(robust: tuple[dict, list[Run]]) -> None:
    """Each repetition replayed alone through the one-draw-at-a-time loop, per budget."""
    qrels, runs = robust
    metric = Metric.parse("DCG@10", y_max=2)
    seed, repetitions, budgets = 7, 25, [100.0, 250.0]
    rows = plan_budgets(
        prepare_replay(qrels, runs, metric, "difference"), None, budgets, repetitions=repetitions, seed=seed
    )

    # Independently: the pool, the per-topic values from evaluate_run, the truth from summarize_run.
    kept = [(run.tag, {qid: docs for qid, docs in run.rankings.items() if qid in qrels}) for run in runs]
    pool = build_pool(kept, 10, y_max=2)
    per_topic = [evaluate_run(qrels, run, metric) for run in runs[:2]]
    values = np.array([per_topic[0][qid] - per_topic[1][qid] for qid in pool.query_ids])
    truth = summarize_run(qrels, runs[0], metric).mean - summarize_run(qrels, runs[1], metric).mean
    scale = pool.n_queries / len(qrels)
    topic_cost = pool.item_cost.sum(axis=1)
    gains = metric.gain_table()
    utility = np.zeros(pool.slot_used.shape)
    for row_index, (qid, docnos) in enumerate(zip(pool.query_ids, pool.item_ids, strict=True)):
        utility[row_index, : len(docnos)] = [
            gains[qrels[qid].get(docno, 0)] / gains.max() for docno in docnos
        ]
    weight_a, weight_b = (system_weights(pool, metric, s) for s in (0, 1))
    query_q = {
        "passive": pool.query_weight,
        "active": optimal_query_distribution(pool, metric, "difference", (0, 1), query_cost=topic_cost).q,
    }
    item_q = item_sampling_distribution(pool, metric, "difference", (0, 1)).q

    for row in rows:
        estimates, covered, topics = [], [], []
        for r in range(repetitions):
            rng = np.random.default_rng([seed, r])
            if row.strategy == "items":
                result = simulate_item_level(
                    utility,
                    item_q,
                    np.stack([weight_a, weight_b]),
                    rng,
                    budget=row.budget,
                    item_cost=pool.item_cost,
                )
                x, z = result.draws.T
                estimate = item_level_difference_estimate(
                    result.labels, weight_a[x, z], weight_b[x, z], result.propensities
                )
                factor = gains.max() * scale
                topics.append(np.unique(x).size)
            else:
                result = simulate_query_level(
                    values, topic_cost, query_q[row.strategy], pool.query_weight, row.budget, rng
                )
                # The planner's batch path reports the t interval (it has no skewness terms).
                estimate = query_level_estimate(
                    result.values,
                    result.propensities,
                    pool.query_weight[result.draws],
                    interval="t",
                    n_judged=result.n_judged,
                )
                factor = scale
                topics.append(result.n_judged)
            estimates.append(estimate.value * factor)
            covered.append(estimate.low * factor <= truth <= estimate.high * factor)
        assert row.truth == pytest.approx(truth, abs=1e-12)
        assert row.mean == pytest.approx(np.mean(estimates), abs=1e-9), row.strategy
        assert row.coverage == np.mean(covered), row.strategy
        assert row.topics_judged == np.mean(topics), row.strategy


def test_a_strategy_registered_with_the_planner_is_replayed_and_refused_by_its_own_rule(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The planner's seam: a strategy is a PlannedStrategy in PLANNED (no if-chain to extend)."""
    from estimation.simulation import planner

    def replay_truth(replay, budgets, repetitions, seed, confidence):  # type: ignore[no-untyped-def]
        exact = np.full(repetitions, replay.truth)
        return [(exact, exact, exact, np.ones(repetitions), np.full(repetitions, b)) for b in budgets]

    def only_dcg(metric: Metric, judge: bool) -> str | None:
        return None if metric.name == "DCG" else "DCG only"

    oracle = planner.PlannedStrategy("oracle", replay_truth, only_dcg)
    monkeypatch.setitem(planner.PLANNED, "oracle", oracle)
    replay = prepare_replay(QRELS, [RUN_A, RUN_B], METRIC, "one")
    (row,) = plan_budgets(replay, ["oracle"], [2.0], repetitions=3)
    assert row.strategy == "oracle" and row.rmse == 0.0 and row.spent == 2.0
    assert "oracle" in planner.applicable_strategies(METRIC)
    assert "oracle" not in planner.applicable_strategies(Metric.parse("ERR@2", y_max=1))
    with pytest.raises(ValueError, match="cannot estimate ERR@2: DCG only"):
        plan_budgets(prepare_replay(QRELS, [RUN_A, RUN_B], Metric.parse("ERR@2", y_max=1), "one"), ["oracle"])
