"""kappa-NDCG@l and kappa-ERR: hand-worked values, the paper's formulas, and runs."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from estimation.topk.kappa import (
    kappa_err,
    kappa_ndcg,
    position_labels,
    summarize_run_kappa,
    topk_qrels,
)


def paper_kappa_ndcg(ranking: list[str], order: list[str], k: int, cutoff: int) -> float:
    """Eq. 2 written out: labels k+1-position, gain 2^y - 1, discount 1/log2(1+j)."""
    label = {docno: k + 1 - position for position, docno in enumerate(order, start=1)}

    def dcg(labels: list[int]) -> float:
        return sum((2.0**y - 1.0) / math.log2(1 + j) for j, y in enumerate(labels[:cutoff], start=1))

    ideal = dcg(sorted(label.values(), reverse=True))
    return dcg([label.get(docno, 0) for docno in ranking]) / ideal if ideal else 0.0


def paper_kappa_err(ranking: list[str], order: list[str], k: int) -> float:
    """Eq. 3 with the rank 1/s (not the printed 1/n): R(y) = (2^y - 1) / 2^k."""
    label = {docno: k + 1 - position for position, docno in enumerate(order, start=1)}
    total, reach = 0.0, 1.0
    for s, docno in enumerate(ranking, start=1):
        stop = (2.0 ** label.get(docno, 0) - 1.0) / 2.0**k
        total += reach * stop / s
        reach *= 1.0 - stop
    return total


def test_it_labels_positions_k_down_to_1() -> None:
    assert position_labels(["a", "b", "c"], 3) == {"a": 3, "b": 2, "c": 1}
    # A short order (n < k) keeps the top label k.
    assert position_labels(["a", "b"], 10) == {"a": 10, "b": 9}
    with pytest.raises(ValueError, match="cannot list"):
        position_labels(["a", "b", "c"], 2)
    with pytest.raises(ValueError, match="twice"):
        position_labels(["a", "a"], 2)


def test_it_scores_a_hand_worked_ranking() -> None:
    # k = 2, truth (a, b): labels a=2, b=1. Ranking (b, x, a): gains 1, 0, 3.
    # DCG@3 = 1/log2(2) + 0 + 3/log2(4) = 2.5; ideal = 3/1 + 1/log2(3).
    assert kappa_ndcg(["b", "x", "a"], ["a", "b"], 2, 3) == pytest.approx(2.5 / (3 + 1 / math.log2(3)))
    # kappa-ERR: R(1) = 1/4, R(2) = 3/4: 1/4 + 0 + (3/4)(3/4)/3 = 0.4375.
    assert kappa_err(["b", "x", "a"], ["a", "b"], 2) == pytest.approx(0.4375)
    # The truth itself scores 1 on kappa-NDCG.
    assert kappa_ndcg(["a", "b", "x"], ["a", "b"], 2, 2) == pytest.approx(1.0)


@settings(max_examples=150, deadline=None)
@given(
    n=st.integers(1, 15),
    k=st.integers(1, 8),
    cutoff=st.integers(1, 12),
    data=st.data(),
)
def test_it_matches_the_papers_formulas(n, k, cutoff, data) -> None:
    documents = [f"d{i}" for i in range(n)]
    ranking = data.draw(st.permutations(documents))
    order = data.draw(st.permutations(documents))[: min(k, n)]
    assert kappa_ndcg(ranking, order, k, cutoff) == pytest.approx(paper_kappa_ndcg(ranking, order, k, cutoff))
    assert kappa_err(ranking, order, k) == pytest.approx(paper_kappa_err(ranking, order, k))


def test_it_evaluates_a_run_per_topic_with_the_same_kernel() -> None:
    rng = np.random.default_rng(7)
    documents = {f"t{t}": [f"t{t}-d{i}" for i in range(12)] for t in range(5)}
    orders = {topic: list(rng.permutation(docs)[:4]) for topic, docs in documents.items()}
    run = {topic: list(rng.permutation(docs)) for topic, docs in documents.items() if topic != "t4"}
    ndcg5 = summarize_run_kappa(orders, run, 4, "kappa-NDCG@5")
    errs = summarize_run_kappa(orders, run, 4, "kappa-ERR")
    for topic in run:
        assert ndcg5.per_query[topic] == pytest.approx(paper_kappa_ndcg(run[topic], orders[topic], 4, 5))
        assert errs.per_query[topic] == pytest.approx(paper_kappa_err(run[topic], orders[topic], 4))
    assert ndcg5.per_query["t4"] == 0.0  # the run omits t4
    assert ndcg5.mean == pytest.approx(np.mean(list(ndcg5.per_query.values())))
    with pytest.raises(ValueError, match="unknown kappa metric"):
        summarize_run_kappa(orders, run, 4, "kappa-MAP")


def test_it_writes_qrels_with_the_rest_at_zero() -> None:
    qrels = topk_qrels({"q1": ["a", "b"]}, 3, documents={"q1": ["a", "b", "c", "d"]})
    assert qrels == {"q1": {"a": 3, "b": 2, "c": 0, "d": 0}}
