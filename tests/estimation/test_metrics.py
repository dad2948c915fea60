"""DCG, nDCG and ERR: hand-worked toy rankings, brute force, invariances and validation."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from estimation.formats.trec import Run
from estimation.metrics.spec import Metric
from estimation.metrics.values import QrelsIndex, dcg, err, evaluate_run, metric_values, ndcg, summarize_run

LOG2 = math.log2


# --------------------------------------------------------------------------------------------
# Hand-worked toy rankings


def test_it_computes_exponential_dcg_by_hand() -> None:
    # grades 3, 2, 3, 0, 1, 2 at ranks 1..6; gains 2^y - 1 = 7, 3, 7, 0, 1, 3
    expected = 7 / LOG2(2) + 3 / LOG2(3) + 7 / LOG2(4) + 0 + 1 / LOG2(6) + 3 / LOG2(7)
    assert dcg([3, 2, 3, 0, 1, 2], Metric("DCG", 6, gain="exp", y_max=3)) == pytest.approx(
        expected, abs=1e-12
    )


def test_it_computes_linear_dcg_and_cuts_at_k_by_hand() -> None:
    # grades 3, 2, 3, 0, 1, 2; linear gains; DCG@3 stops after the third position
    expected = 3 / LOG2(2) + 2 / LOG2(3) + 3 / LOG2(4)
    assert dcg([3, 2, 3, 0, 1, 2], Metric("DCG", 3, gain="linear", y_max=3)) == pytest.approx(
        expected, abs=1e-12
    )


def test_it_computes_ndcg_against_the_ideal_of_the_judged_grades_by_hand() -> None:
    # ranking grades 0, 2, 1; the query's judged grades also hold an unretrieved 2
    # exp gains: DCG@3 = 0 + 3/log2(3) + 1/2; ideal 2, 2, 1 -> 3 + 3/log2(3) + 1/2
    metric = Metric("nDCG", 3, gain="exp", y_max=2)
    expected = (3 / LOG2(3) + 1 / 2) / (3 + 3 / LOG2(3) + 1 / 2)
    assert ndcg([0, 2, 1], [1, 2, 0, 2, 0], metric) == pytest.approx(expected, abs=1e-12)


def test_it_gives_ndcg_zero_when_no_document_is_relevant() -> None:
    metric = Metric("nDCG", 5, gain="linear", y_max=2)
    assert ndcg([0, 0, 0], [0, 0, 0, 0], metric) == 0.0
    assert ndcg([0, 0], [], metric) == 0.0


def test_it_computes_err_by_hand() -> None:
    # grades 2, 0, 1 on a 0..2 scale: l = 3/4, 0, 1/4
    # ERR = 3/4 + (1/2)(0)(1/4) + (1/3)(1/4)(1)(1/4) = 3/4 + 1/48
    assert err([2, 0, 1], Metric("ERR", 10, y_max=2)) == pytest.approx(3 / 4 + 1 / 48, abs=1e-15)


def test_it_computes_err_with_gdevals_top_grade_by_hand() -> None:
    # grades 1, 1 with y_max = 4: l = 1/16 each; ERR = 1/16 + (1/2)(15/16)(1/16)
    assert err([1, 1], Metric("ERR", 5, y_max=4)) == pytest.approx(1 / 16 + 15 / 512, abs=1e-15)


# --------------------------------------------------------------------------------------------
# Brute force


def err_by_enumeration(grades: list[int], y_max: int, cutoff: int) -> float:
    """E[1 / rank of the first satisfying document] under the cascade model, enumerating
    which positions would satisfy the user (independently, with probability l(y))."""
    stop = [(2.0**grade - 1.0) / 2.0**y_max for grade in grades[:cutoff]]
    expected = 0.0
    for satisfied in itertools.product((False, True), repeat=len(stop)):
        probability = math.prod(p if s else 1 - p for p, s in zip(stop, satisfied, strict=True))
        first = next((rank for rank, s in enumerate(satisfied, start=1) if s), None)
        if first is not None:
            expected += probability / first
    return expected


def dcg_by_definition(grades: list[int], metric: Metric) -> float:
    gain = (lambda y: float(y)) if metric.gain == "linear" else (lambda y: 2.0**y - 1.0)
    return sum(gain(y) / LOG2(rank + 1) for rank, y in enumerate(grades[: metric.cutoff], start=1))


def test_it_matches_err_by_enumeration_of_stopping_events() -> None:
    rng = np.random.default_rng(20260101)
    for _ in range(200):
        y_max = int(rng.integers(1, 5))
        length = int(rng.integers(1, 9))
        cutoff = int(rng.integers(1, 10))
        grades = rng.integers(0, y_max + 1, size=length).tolist()
        assert err(grades, Metric("ERR", cutoff, y_max=y_max)) == pytest.approx(
            err_by_enumeration(grades, y_max, cutoff), abs=1e-12
        )


def test_it_matches_ndcg_by_trying_every_permutation_for_the_ideal() -> None:
    rng = np.random.default_rng(7)
    for _ in range(60):
        gain = str(rng.choice(["exp", "linear"]))
        metric = Metric("nDCG", int(rng.integers(1, 6)), gain=gain, y_max=3)  # type: ignore[arg-type]
        judged = rng.integers(0, 4, size=int(rng.integers(1, 7))).tolist()
        ranking = [judged[i] for i in rng.permutation(len(judged))[: int(rng.integers(1, len(judged) + 1))]]
        ideal = max(dcg_by_definition(list(order), metric) for order in itertools.permutations(judged))
        expected = dcg_by_definition(ranking, metric) / ideal if ideal > 0 else 0.0
        assert ndcg(ranking, judged, metric) == pytest.approx(expected, abs=1e-12)


# --------------------------------------------------------------------------------------------
# The padded kernel


def test_it_evaluates_a_padded_matrix_like_the_per_query_functions() -> None:
    rng = np.random.default_rng(11)
    m, width = 40, 12
    lengths = rng.integers(0, width + 1, size=m)
    grades = rng.integers(0, 4, size=(m, width))
    grades[np.arange(width)[None, :] >= lengths[:, None]] = -1
    judged = rng.integers(0, 4, size=(m, 15))
    for name in ("DCG", "nDCG", "ERR"):
        metric = Metric(name, 10, gain="exp", y_max=3)  # type: ignore[arg-type]
        values = metric_values(grades, metric, judged if name == "nDCG" else None)
        assert values.shape == (m,)
        for row in range(m):
            ranking = grades[row, : lengths[row]].tolist()
            if not ranking:
                assert values[row] == 0.0  # an empty row (a query the system omits) scores 0
            elif name == "DCG":
                assert values[row] == pytest.approx(dcg(ranking, metric), abs=1e-12)
            elif name == "nDCG":
                assert values[row] == pytest.approx(ndcg(ranking, judged[row], metric), abs=1e-12)
            else:
                assert values[row] == pytest.approx(err(ranking, metric), abs=1e-12)


def test_it_treats_an_empty_position_as_contributing_nothing_but_keeping_its_rank() -> None:
    metric = Metric("DCG", 5, gain="linear", y_max=2)
    # grades 2, (empty), 1: 2/log2(2) + 1/log2(4)
    assert metric_values(np.array([[2, -1, 1]]), metric)[0] == pytest.approx(2 + 1 / 2, abs=1e-12)


def test_it_permutes_outputs_with_rows_and_ignores_columns_past_the_cutoff() -> None:
    rng = np.random.default_rng(3)
    grades = rng.integers(0, 3, size=(25, 8))
    metric = Metric("ERR", 4, y_max=2)
    order = rng.permutation(25)
    values = metric_values(grades, metric)
    np.testing.assert_allclose(metric_values(grades[order], metric), values[order], rtol=0, atol=1e-15)
    np.testing.assert_allclose(metric_values(grades[:, :4], metric), values, rtol=0, atol=1e-15)


def test_it_keeps_ndcg_in_unit_interval_and_one_for_the_ideal_ranking() -> None:
    rng = np.random.default_rng(5)
    judged = rng.integers(0, 5, size=(50, 9))
    shuffled = rng.permuted(judged, axis=1)
    ideal = -np.sort(-judged, axis=1)
    metric = Metric("nDCG", 6, gain="exp", y_max=4)
    values = metric_values(shuffled, metric, judged)
    assert np.all((values >= 0) & (values <= 1 + 1e-12))
    has_relevant = judged.max(axis=1) > 0
    np.testing.assert_allclose(metric_values(ideal, metric, judged)[has_relevant], 1.0, rtol=0, atol=1e-12)


def test_it_sorts_the_ideal_by_gain_for_custom_gain_tables() -> None:
    # Custom gains that do not grow with the grade: grade 1 is worth more than grade 2.
    metric = Metric("nDCG", 3, y_max=2, gain_values=(0.0, 5.0, 1.0))
    # judged grades 2, 1, 0: the ideal puts grade 1 first (5/1 + 1/log2(3))
    assert ndcg([1, 2, 0], [2, 1, 0], metric) == pytest.approx(1.0, abs=1e-12)
    assert ndcg([2, 1, 0], [2, 1, 0], metric) == pytest.approx(
        (1 + 5 / LOG2(3)) / (5 + 1 / LOG2(3)), abs=1e-12
    )


def test_it_keeps_err_below_one_and_monotone_in_a_grade() -> None:
    rng = np.random.default_rng(9)
    metric = Metric("ERR", 10, y_max=3)
    grades = rng.integers(0, 3, size=(100, 10))
    better = grades.copy()
    better[:, 4] += 1  # raise one document's grade
    values, improved = metric_values(grades, metric), metric_values(better, metric)
    assert np.all(values <= 1.0) and np.all(values >= 0.0)
    assert np.all(improved >= values - 1e-15)
    assert np.all(metric_values(np.full((1, 10), 3), metric) < 1.0)


# --------------------------------------------------------------------------------------------
# Validation


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: dcg([], Metric("DCG", 5)), "must not be empty"),
        (lambda: err([], Metric("ERR", 5)), "must not be empty"),
        (lambda: dcg([1, 5], Metric("DCG", 5, y_max=4)), "grade 5 is outside 0..4"),
        (lambda: err([3], Metric("ERR", 5, y_max=2)), "grade 3 is outside 0..2"),
        (lambda: dcg([1, -1], Metric("DCG", 5)), "grades must be >= 0"),
        (lambda: dcg([1.5], Metric("DCG", 5)), "grades must be integers"),
        (lambda: dcg([[1, 2]], Metric("DCG", 5)), "1-D"),
        (lambda: dcg([1], Metric("ERR", 5)), "needs a DCG or nDCG metric"),
        (lambda: err([1], Metric("DCG", 5)), "needs an ERR metric"),
        (lambda: ndcg([1], [1, 7], Metric("nDCG", 5, y_max=4)), "grade 7 is outside"),
        (lambda: ndcg([1], [-2, 1], Metric("nDCG", 5)), "judged_grades"),
        (lambda: metric_values(np.array([1, 2]), Metric("DCG", 5)), "must be 2-D"),
        (lambda: metric_values(np.array([[1, -2]]), Metric("DCG", 5)), "grade -2 is outside"),
        (lambda: metric_values(np.array([["a"]]), Metric("DCG", 5)), "must be integers"),
        (lambda: metric_values(np.array([[1]]), Metric("nDCG", 5)), "needs ideal_grade_matrix"),
        (lambda: metric_values(np.array([[1]]), Metric("DCG", 5), np.array([[1]])), "only nDCG"),
        (lambda: metric_values(np.array([[1]]), Metric("nDCG", 5), np.array([[1], [2]])), "has 2 rows"),
    ],
)
def test_it_rejects_bad_input(call, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        call()


# --------------------------------------------------------------------------------------------
# A run against qrels


QRELS = {
    "q1": {"a": 2, "b": 1, "c": 0, "d": 2},  # relevant: a, b, d
    "q2": {"e": 1},  # the run misses q2
    "q3": {"f": 0, "g": 0},  # no relevant document
}


def test_it_evaluates_a_run_on_every_qrels_topic() -> None:
    # q1 ranks a (2), x (unjudged: 0), b (1); q3 ranks f (0); q9 is not in the qrels
    run = Run(
        tag="toy",
        rankings={"q1": ("a", "x", "b"), "q3": ("f",), "q9": ("a",)},
        scores={"q1": (3.0, 2.0, 1.0), "q3": (1.0,), "q9": (1.0,)},
        tags=("toy",),
    )
    metric = Metric("nDCG", 3, gain="linear", y_max=2)
    values = evaluate_run(QRELS, run, metric)
    # q1: (2 + 0 + 1/2) / ideal (2 + 2/log2(3) + 1/2)
    q1 = 2.5 / (2 + 2 / LOG2(3) + 0.5)
    assert list(values) == ["q1", "q2", "q3"]
    assert values == pytest.approx({"q1": q1, "q2": 0.0, "q3": 0.0}, abs=1e-12)
    summary = summarize_run(QRELS, run, metric)
    assert summary.run_tag == "toy"
    assert summary.mean == pytest.approx(q1 / 3, abs=1e-12)
    assert (summary.n_topics, summary.n_topics_without_relevant) == (3, 1)
    assert (summary.n_topics_missing_from_run, summary.n_run_topics_without_qrels) == (1, 1)
    assert summary.mean_over_topics_with_relevant == pytest.approx(q1 / 2, abs=1e-12)


def test_it_accepts_plain_rankings_in_rank_order() -> None:
    # q1 ranks d (2), a (2): linear DCG@2 = 2 + 2/log2(3)
    values = evaluate_run(QRELS, {"q1": ["d", "a"]}, Metric("DCG", 2, gain="linear", y_max=2))
    assert values["q1"] == pytest.approx(2 + 2 / LOG2(3), abs=1e-12)
    assert values["q2"] == values["q3"] == 0.0


def test_it_evaluates_many_runs_against_one_prepared_qrels_as_against_the_dict() -> None:
    index = QrelsIndex(QRELS)
    rankings = {"q1": ("a", "x", "b"), "q2": ("d",), "q3": ("f", "a")}
    for metric in (Metric("nDCG", 2, y_max=2), Metric("nDCG", 3, y_max=2), Metric("ERR", 3, y_max=3)):
        assert summarize_run(index, rankings, metric) == summarize_run(QRELS, rankings, metric)
    assert (index.lowest_grade, index.largest_grade, index.n_topics_without_relevant) == (0, 2, 1)
    with pytest.raises(ValueError, match="grade 2 of document 'a' for topic 'q1' is outside 0..1"):
        summarize_run(index, rankings, Metric("ERR", 3, y_max=1))


def test_it_reads_only_the_first_cutoff_documents_of_each_ranking() -> None:
    # A run cut to the cutoff (what the streaming reader keeps) gives the same evaluation.
    rankings = {"q1": ("x", "b", "a", "c"), "q2": ("d", "y")}
    for metric in (Metric("nDCG", 2, y_max=2), Metric("ERR", 2, y_max=2), Metric("DCG", 2, y_max=2)):
        cut = {qid: docnos[:2] for qid, docnos in rankings.items()}
        assert summarize_run(QRELS, cut, metric) == summarize_run(QRELS, rankings, metric)


@pytest.mark.parametrize(
    ("qrels", "rankings", "metric", "message"),
    [
        (
            QRELS,
            {"q1": ["a"]},
            Metric("ERR", 5, y_max=1),
            "grade 2 of document 'a' for topic 'q1' is outside 0..1",
        ),
        (QRELS, {"q1": []}, Metric("DCG", 5, y_max=2), "topic 'q1' has an empty ranking"),
        (QRELS, {"q1": ["a", "a"]}, Metric("DCG", 5, y_max=2), "lists a document twice"),
        ({}, {"q1": ["a"]}, Metric("DCG", 5, y_max=2), "no topics"),
    ],
)
def test_it_rejects_bad_runs_and_qrels(qrels, rankings, metric: Metric, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        evaluate_run(qrels, rankings, metric)


@pytest.mark.parametrize("name", ["DCG", "nDCG", "ERR"])
def test_it_bounds_every_ranking_by_the_metrics_value_bounds(name: str) -> None:
    # Every ranking of 6 documents over grades 0-2 at cutoff 4, all 3**6 gradings: the metric
    # stays inside value_bounds, and DCG reaches both ends (all grade 0, all grade 2).
    metric = Metric(name, 4, y_max=2)
    low, high = metric.value_bounds()
    seen = []
    for grading in itertools.product(range(3), repeat=6):
        labels = np.array(grading, dtype=int)[None, :]
        ideal = labels if name == "nDCG" else None  # nDCG's ideal: the same judged documents
        seen.append(float(metric_values(labels, metric, ideal)[0]))
    assert low <= min(seen) and max(seen) <= high + 1e-12
    if name == "DCG":
        assert (min(seen), max(seen)) == pytest.approx((low, high))
        assert high == pytest.approx(3.0 * (1 + 1 / np.log2(3) + 0.5 + 1 / np.log2(5)))
