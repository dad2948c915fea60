"""Results: exports, agreement on a hand-made case, kappa metrics and merged orders."""

from __future__ import annotations

import csv
import io
import json
import math
from collections.abc import Callable

import pytest
from django.contrib.auth.models import AbstractBaseUser

from labeling.models import Campaign, Document, Judgment, Topic
from pairwise import exports, selectors, services
from pairwise.models import Comparison, PairwiseSettings, TopKHeap
from tests.pairwise.helpers import answer_pending, finish_all, record

pytestmark = pytest.mark.django_db


def test_it_exports_preferences_as_csv_and_jsonl(topk_campaign: Campaign, assessor: AbstractBaseUser) -> None:
    first = answer_pending(topk_campaign, assessor)
    second = answer_pending(topk_campaign, assessor)
    assert first is not None and second is not None
    rows = list(csv.DictReader(io.StringIO("".join(exports.preferences_csv(topk_campaign)))))
    assert [row["document_a"] for row in rows] == [first.left.docno, second.left.docno]
    assert [row["document_b"] for row in rows] == [first.right.docno, second.right.docno]
    assert {row["assessor"] for row in rows} == {"alice"}
    assert all(row["outcome"] in {"left", "tie", "right"} for row in rows)
    assert [row["side"] for row in rows] == ["right" if task.swapped else "left" for task in (first, second)]
    assert [float(row["seconds"]) for row in rows] == [1.5, 1.5]
    records = [json.loads(line) for line in exports.preferences_jsonl(topk_campaign)]
    assert [r["document_a"] for r in records] == [row["document_a"] for row in rows]
    assert records[0]["topic"] == first.topic.qid


def test_it_exports_top_k_orders_and_position_aware_qrels(
    topk_campaign: Campaign, assessor: AbstractBaseUser
) -> None:
    finish_all(topk_campaign, assessor)
    heaps = {
        heap.topic.qid: heap
        for heap in TopKHeap.objects.filter(campaign=topk_campaign).select_related("topic")
    }
    orders = [json.loads(line) for line in exports.topk_jsonl(topk_campaign)]
    assert {(o["topic"], tuple(o["order"]), o["done"]) for o in orders} == {
        (qid, tuple(heap.order), True) for qid, heap in heaps.items()
    }
    lines = [line.split() for line in "".join(exports.topk_qrels(topk_campaign, 3)).splitlines()]
    labels = {(qid, docno): int(label) for qid, _, docno, label in lines}
    for qid, heap in heaps.items():
        best, second, third = heap.order
        assert (labels[(qid, best)], labels[(qid, second)], labels[(qid, third)]) == (3, 2, 1)
        rest = set(heap.state["documents"]) - set(heap.order)
        assert {labels[(qid, docno)] for docno in rest} == {0}
        assert len([key for key in labels if key[0] == qid]) == 6


def test_it_measures_agreement_on_a_hand_made_case(
    make_campaign: Callable[..., Campaign], assessor: AbstractBaseUser, second_assessor: AbstractBaseUser
) -> None:
    campaign = make_campaign(mode="pairwise")
    # Four pairs of topic 401. Alice: A>B, A>B, A~B, A<B; Bob: A>B, A~B, A~B, A>B (pair 4 shown
    # the other way round to Bob, so his "right" means A>B).
    pairs = [("D401-1", "D401-2"), ("D401-1", "D401-3"), ("D401-2", "D401-3"), ("D401-6", "D401-7")]
    for (a, b), outcome in zip(pairs, ["left", "left", "tie", "right"], strict=True):
        record(campaign, assessor, "401", a, b, outcome)
    for (a, b), outcome in zip(pairs[:3], ["left", "tie", "tie"], strict=True):
        record(campaign, second_assessor, "401", a, b, outcome)
    record(campaign, second_assessor, "401", "D401-7", "D401-6", "right")
    agreement = selectors.campaign_agreement(campaign)["preferences"]
    between = agreement["between"][0]
    assert (between["first"], between["second"]) == ("alice", "bob")
    # Rows Alice (A>B, A~B, A<B), columns Bob.
    assert between["counts"] == [[1, 1, 0], [0, 1, 0], [1, 0, 0]]
    assert between["row_normalised"][0] == [0.5, 0.5, 0.0]
    assert between["overall"] == pytest.approx(2 / 4)
    assert between["ignoring_ties"] == pytest.approx(1 / 2)
    # Cohen: p_o = 1/2; marginals Alice (2, 1, 1)/4, Bob (2, 2, 0)/4, p_e = 6/16.
    assert between["kappa"] == pytest.approx((0.5 - 6 / 16) / (1 - 6 / 16))
    assert agreement["pooled"]["overall"] == pytest.approx(0.5)
    assert agreement["pooled"]["n_pairs"] == 4


def test_it_measures_agreement_on_preferences_inferred_from_grades(
    make_campaign: Callable[..., Campaign], assessor: AbstractBaseUser, second_assessor: AbstractBaseUser
) -> None:
    campaign = make_campaign(start=False)
    topic = Topic.objects.get(campaign=campaign, qid="401")
    documents = {d.docno: d for d in Document.objects.filter(campaign=campaign)}
    grades = {
        "alice": {"D401-1": 2, "D401-2": 1, "D401-3": 0},
        "bob": {"D401-1": 1, "D401-2": 1, "D401-3": 0},
    }
    for user in (assessor, second_assessor):
        for docno, grade in grades[user.username].items():
            Judgment.objects.create(
                campaign=campaign, topic=topic, document=documents[docno], assessor=user, grade=grade
            )
    inferred = selectors.campaign_agreement(campaign)["inferred_from_grades"]["between"][0]
    # (1, 2): Alice A>B, Bob A~B; (1, 3) and (2, 3): both A>B.
    assert inferred["counts"] == [[2, 1, 0], [0, 0, 0], [0, 0, 0]]
    assert inferred["overall"] == pytest.approx(2 / 3)
    assert inferred["ignoring_ties"] == pytest.approx(1.0)


def hand_kappa_err(ranking: list[str], order: list[str], k: int) -> float:
    """kappa-ERR from docs/judging.md, written out: sum_s 1/s R(y_s) prod_{t<s} (1 - R(y_t))."""
    label = {docno: k + 1 - position for position, docno in enumerate(order, start=1)}
    value, not_stopped = 0.0, 1.0
    for rank, docno in enumerate(ranking, start=1):
        stop = (2 ** label.get(docno, 0) - 1) / 2**k
        value += not_stopped * stop / rank
        not_stopped *= 1 - stop
    return value


def hand_kappa_ndcg(ranking: list[str], order: list[str], k: int, cutoff: int) -> float:
    label = {docno: k + 1 - position for position, docno in enumerate(order, start=1)}

    def dcg(docnos: list[str]) -> float:
        return sum(
            (2 ** label.get(d, 0) - 1) / math.log2(1 + j) for j, d in enumerate(docnos[:cutoff], start=1)
        )

    return dcg(ranking) / dcg(list(order))


def test_it_scores_every_run_with_kappa_metrics_on_the_dashboard_data(
    topk_campaign: Campaign, assessor: AbstractBaseUser
) -> None:
    finish_all(topk_campaign, assessor)
    data = selectors.pairwise_results(topk_campaign, PairwiseSettings.objects.get(campaign=topk_campaign))
    orders = {row["topic"]: row["order"] for row in data["topk"]}
    runs = selectors.run_rankings(topk_campaign)
    kappa = {row["system"]: row for row in data["kappa"]}
    assert set(kappa) == {"good", "poor"}
    for system, row in kappa.items():
        ndcg = [hand_kappa_ndcg(runs[system][qid], orders[qid], 3, 3) for qid in orders]
        err = [hand_kappa_err(runs[system][qid], orders[qid], 3) for qid in orders]
        assert row["kappa_ndcg"] == pytest.approx(sum(ndcg) / len(ndcg))
        assert row["kappa_err"] == pytest.approx(sum(err) / len(err))
        assert row["topics"] == 2
    assert kappa["good"]["kappa_ndcg"] == pytest.approx(1.0), "the good run ranks by true relevance"
    assert kappa["poor"]["kappa_ndcg"] < kappa["good"]["kappa_ndcg"]
    assert kappa["poor"]["kappa_err"] < kappa["good"]["kappa_err"]


def test_it_merges_two_assessors_into_one_order_next_to_their_own(
    make_campaign: Callable[..., Campaign], assessor: AbstractBaseUser, second_assessor: AbstractBaseUser
) -> None:
    campaign = make_campaign(overlap=2)
    finish_all(campaign, assessor)
    finish_all(campaign, second_assessor)
    merged = {row["topic"]: row for row in selectors.merged_orders(campaign, 3)}
    assert set(merged) == {"401", "402"}
    for row in merged.values():
        assert {own["assessor"] for own in row["own"]} == {"alice", "bob"}
        own_orders = {tuple(own["order"]) for own in row["own"]}
        assert own_orders == {tuple(row["order"])}, "consistent assessors: the merge agrees with both"
        assert (
            row["comparisons"]
            == Comparison.objects.filter(topic__qid=row["topic"], campaign=campaign).count()
        )
        assert row["scores"] == sorted(row["scores"], reverse=True)
    # Agreement between two noiseless assessors is perfect where they overlap.
    agreement = selectors.campaign_agreement(campaign)["preferences"]
    assert agreement is not None and agreement["pooled"]["overall"] == pytest.approx(1.0)
    services.pairwise_configure(campaign=campaign)  # no change requested: allowed after answers


def test_the_merged_order_ranks_only_compared_documents(
    make_campaign: Callable[..., Campaign], assessor: AbstractBaseUser
) -> None:
    campaign = make_campaign()
    task = services.pair_next(campaign=campaign, assessor=assessor)
    services.pair_answer(task=task, assessor=assessor, outcome="right", seconds=1.0)
    (row,) = selectors.merged_orders(campaign, 3)
    shown = [task.right.docno, task.left.docno]
    assert row["order"] == shown, "the winner first; no never-compared document above the loser"
    assert row["not_compared"] == 6 - 2, "n = 6 documents per topic, two compared"
