"""Agreement with independent implementations on real qrels and runs.

References, each compared under its own convention:
- trec_eval's own expected output (``out.test.aq``) and pytrec_eval: nDCG@K with linear gain;
- gdeval through ir_measures: nDCG@K with exponential gain (``nDCG(dcg='exp-log2')``) and
  ERR@K with the top grade hard-coded to 4 (it prints 5 decimals);
- a plain-Python cascade for ERR with the data's own top grade (no tool offers it).
Every side orders tied scores as trec_eval does: score descending, then docno descending.
"""

from __future__ import annotations

import gzip
import shutil
from collections.abc import Iterator, Mapping
from pathlib import Path

import ir_measures
import numpy as np
import pytest
import pytrec_eval
from ir_measures import ERR, nDCG

from estimation.formats.trec import Run, read_qrels, read_run
from estimation.metrics.spec import Metric
from estimation.metrics.values import evaluate_run, summarize_run

GDEVAL_DECIMALS_TOLERANCE = 5e-6 + 1e-12
needs_perl = pytest.mark.skipif(shutil.which("perl") is None, reason="gdeval needs the perl binary")

ROBUST_RUNS = ("input.pircRBa1.gz", "input.rutcor03100.gz", "input.MU03rob01.gz", "input.NLPR03vb10.gz")
MQ_RUNS = (
    "runs/AdaRank.run",
    "runs/RankNet.run",
    "runs/svm_rank.run",
    "feature_runs/MQ2008_f41_PageRank.run",
)


@pytest.fixture(scope="module")
def robust(shared_data: Path) -> tuple[dict[str, dict[str, int]], list[Run]]:
    folder = shared_data / "robust03"
    return read_qrels(folder / "qrels.txt"), [read_run(folder / "runs" / name) for name in ROBUST_RUNS]


@pytest.fixture(scope="module")
def mq2008(shared_data: Path) -> tuple[dict[str, dict[str, int]], list[Run]]:
    folder = shared_data / "mq2008"
    return read_qrels(folder / "qrels.txt"), [read_run(folder / name) for name in MQ_RUNS]


def scored(run: Run) -> dict[str, dict[str, float]]:
    """The run as the reference tools take it: qid -> docno -> score (they sort it themselves)."""
    return {qid: dict(zip(run.rankings[qid], run.scores[qid], strict=True)) for qid in run.rankings}


def pytrec_ndcg_cut(qrels: Mapping, run: Run, cutoff: int) -> dict[str, float]:
    evaluator = pytrec_eval.RelevanceEvaluator(qrels, {f"ndcg_cut.{cutoff}"})
    return {qid: values[f"ndcg_cut_{cutoff}"] for qid, values in evaluator.evaluate(scored(run)).items()}


def gdeval_values(qrels: Mapping, run: Mapping[str, Mapping[str, float]], measure) -> dict[str, float]:
    return {result.query_id: result.value for result in ir_measures.gdeval.iter_calc([measure], qrels, run)}


def assert_matches_pytrec_eval(qrels: Mapping, runs: list[Run], cutoff: int) -> None:
    metric = Metric("nDCG", cutoff, gain="linear", y_max=2)
    for run in runs:
        reference = pytrec_ndcg_cut(qrels, run, cutoff)
        summary = summarize_run(qrels, run, metric)
        assert reference, run.tag
        for qid, value in reference.items():
            assert summary.per_query[qid] == pytest.approx(value, abs=1e-12), (run.tag, qid)
        # pytrec_eval leaves out topics the run misses; they count 0 in our mean.
        assert summary.mean == pytest.approx(sum(reference.values()) / len(qrels), abs=1e-12)
        assert summary.n_topics_missing_from_run == len(qrels) - len(reference)


# --------------------------------------------------------------------------------------------
# Linear gain: trec_eval and pytrec_eval


def test_it_reproduces_trec_evals_own_expected_ndcg_cut(shared_data: Path) -> None:
    folder = shared_data / "trec_eval_testdata"
    qrels = read_qrels(folder / "qrels.test")
    run = read_run(folder / "results.test")
    expected: dict[tuple[int, str], float] = {}
    for line in (folder / "out.test.aq").read_text().splitlines():
        name, qid, value = line.split()
        if name.startswith("ndcg_cut_"):
            expected[int(name.removeprefix("ndcg_cut_")), qid] = float(value)
    assert len(expected) == 9 * 4
    for cutoff in sorted({cutoff for cutoff, _ in expected}):
        summary = summarize_run(qrels, run, Metric("nDCG", cutoff, gain="linear", y_max=1))
        for qid, value in summary.per_query.items():
            assert value == pytest.approx(expected[cutoff, qid], abs=5e-5), (cutoff, qid)
        assert summary.mean == pytest.approx(expected[cutoff, "all"], abs=5e-5)


@pytest.mark.slow
def test_it_matches_pytrec_eval_ndcg_cut_on_robust03(robust) -> None:
    qrels, runs = robust
    for cutoff in (5, 10, 20):
        assert_matches_pytrec_eval(qrels, runs, cutoff)


def test_it_matches_pytrec_eval_ndcg_cut_on_mq2008(mq2008) -> None:
    qrels, runs = mq2008
    for cutoff in (1, 5, 10):
        assert_matches_pytrec_eval(qrels, runs, cutoff)


def test_it_counts_mq2008_topics_without_relevant_documents_as_zero(mq2008) -> None:
    qrels, runs = mq2008
    summary = summarize_run(qrels, runs[0], Metric("nDCG", 10, gain="linear", y_max=2))
    assert (summary.n_topics, summary.n_topics_without_relevant) == (470, 140)
    without_relevant = [qid for qid, grades in qrels.items() if max(grades.values()) == 0]
    assert all(summary.per_query[qid] == 0.0 for qid in without_relevant)
    reference = pytrec_ndcg_cut(qrels, runs[0], 10)
    kept = [value for qid, value in reference.items() if qid not in without_relevant]
    assert summary.mean_over_topics_with_relevant == pytest.approx(sum(kept) / len(kept), abs=1e-12)


# --------------------------------------------------------------------------------------------
# Exponential gain and ERR: gdeval


@needs_perl
@pytest.mark.slow
def test_it_matches_gdeval_exponential_ndcg_on_robust03_and_mq2008(robust, mq2008) -> None:
    for qrels, runs in (robust, mq2008):
        # The runs with the most ties: rutcor03100, MU03rob01, AdaRank and the PageRank feature.
        for run in (runs[1], runs[2]) if runs[0].tag == "pircRBa1" else (runs[0], runs[3]):
            # gdeval reads the whole run in perl: hand it each topic's top 50 (in the test's own
            # trec_eval order), which decides every value at cutoffs up to 50.
            top = {
                qid: {docno: scores[docno] for docno in ordered[:50]}
                for qid, scores in scored(run).items()
                for ordered in [run_in_trec_eval_order({qid: scores})[qid]]
            }
            for cutoff in (5, 20):
                reference = gdeval_values(qrels, top, nDCG(dcg="exp-log2") @ cutoff)
                ours = evaluate_run(qrels, run, Metric("nDCG", cutoff, gain="exp", y_max=2))
                assert set(reference) == set(ours)
                for qid, value in reference.items():
                    assert ours[qid] == pytest.approx(value, abs=GDEVAL_DECIMALS_TOLERANCE), (run.tag, qid)


def mslr_queries(path: Path) -> Iterator[tuple[str, list[tuple[int, float]]]]:
    """(qid, [(grade, BM25 score = feature 110)]) per query, dropping the cut-off last query."""
    current: str | None = None
    rows: list[tuple[int, float]] = []
    with gzip.open(path, "rt") as lines:
        for line in lines:
            label, qid_field, *features = line.split()
            qid = qid_field.removeprefix("qid:")
            if qid != current and current is not None:
                yield current, rows
                rows = []
            current = qid
            bm25 = next(float(f.split(":")[1]) for f in features if f.startswith("110:"))
            rows.append((int(label), bm25))
    # The sample ends mid-query: the last query is incomplete and is dropped.


@needs_perl
def test_it_matches_gdeval_err_and_ndcg_on_the_0_to_4_mslr_sample(shared_data: Path) -> None:
    qrels: dict[str, dict[str, int]] = {}
    run: dict[str, dict[str, float]] = {}
    for name in ("msn1.fold1.train.5k.txt.gz", "msn1.fold1.test.5k.txt.gz"):
        for qid, rows in mslr_queries(shared_data / "mslr_sample" / name):
            docnos = [f"d{index:04d}" for index in range(len(rows))]  # synthetic ids
            qrels[qid] = {docno: grade for docno, (grade, _) in zip(docnos, rows, strict=True)}
            run[qid] = {docno: score for docno, (_, score) in zip(docnos, rows, strict=True)}
    assert len(qrels) >= 80
    assert max(max(grades.values()) for grades in qrels.values()) == 4
    for cutoff in (5, 10, 20):
        for measure, metric in (
            (ERR @ cutoff, Metric("ERR", cutoff, y_max=4)),
            (nDCG(dcg="exp-log2") @ cutoff, Metric("nDCG", cutoff, gain="exp", y_max=4)),
        ):
            reference = gdeval_values(qrels, run, measure)
            ours = evaluate_run(qrels, run_in_trec_eval_order(run), metric)
            assert set(reference) == set(ours)
            for qid, value in reference.items():
                assert ours[qid] == pytest.approx(value, abs=GDEVAL_DECIMALS_TOLERANCE), (str(measure), qid)
            assert max(reference.values()) > 0.1


def run_in_trec_eval_order(run: Mapping[str, Mapping[str, float]]) -> dict[str, list[str]]:
    """Score descending, then docno descending, written out independently of estimation.formats.trec."""
    return {
        qid: [docno for docno, _ in sorted(scores.items(), key=lambda item: (item[1], item[0]), reverse=True)]
        for qid, scores in run.items()
    }


@needs_perl
def test_it_matches_gdeval_err_on_rag_qrels_graded_0_to_3(shared_data: Path) -> None:
    folder = shared_data / "trec_eval_testdata"
    # gdeval keeps only the digits after the last '-' of a topic id; strip them on both sides.
    qrels = {
        qid.rsplit("-", 1)[-1]: grades for qid, grades in read_qrels(folder / "qrels.comment.test").items()
    }
    run = read_run(folder / "results.comment.test")
    rankings = {qid.rsplit("-", 1)[-1]: docnos for qid, docnos in run.rankings.items()}
    all_scores = scored(run)
    scores = {
        qid.rsplit("-", 1)[-1]: all_scores[qid] for qid in run.rankings if qid.rsplit("-", 1)[-1] in qrels
    }
    assert {grade for grades in qrels.values() for grade in grades.values()} == {0, 1, 2, 3}
    for cutoff in (3, 10):
        reference = gdeval_values(qrels, scores, ERR @ cutoff)
        ours = evaluate_run(qrels, rankings, Metric("ERR", cutoff, y_max=4))
        assert set(reference) == set(ours)
        for qid, value in reference.items():
            assert ours[qid] == pytest.approx(value, abs=GDEVAL_DECIMALS_TOLERANCE), qid


# --------------------------------------------------------------------------------------------
# ERR on the data's own scale: a plain-Python cascade


def cascade_err(grades_in_rank_order: list[int], y_max: int, cutoff: int) -> float:
    total, not_stopped = 0.0, 1.0
    for rank, grade in enumerate(grades_in_rank_order[:cutoff], start=1):
        stop = (2**grade - 1) / 2**y_max
        total += not_stopped * stop / rank
        not_stopped *= 1 - stop
    return total


@pytest.mark.slow
def test_it_matches_a_plain_cascade_err_with_top_grade_2(shared_data: Path, robust, mq2008) -> None:
    for (qrels, runs), folder, names in (
        (robust, shared_data / "robust03" / "runs", ROBUST_RUNS),
        (mq2008, shared_data / "mq2008", MQ_RUNS),
    ):
        for run, name in zip(runs, names, strict=True):
            path = folder / name
            lines = gzip.open(path, "rt") if path.suffix == ".gz" else path.open()
            with lines:
                raw: dict[str, dict[str, float]] = {}
                for line in lines:
                    qid, _, docno, _, score, _ = line.split()
                    raw.setdefault(qid, {})[docno] = float(score)
            ordered = run_in_trec_eval_order(raw)
            ours = evaluate_run(qrels, run, Metric("ERR", 10, y_max=2))
            for qid, grades in qrels.items():
                expected = cascade_err([grades.get(d, 0) for d in ordered.get(qid, [])], 2, 10)
                assert ours[qid] == pytest.approx(expected, abs=1e-12), (run.tag, qid)


# --------------------------------------------------------------------------------------------
# Score precision: ListNet's scores differ below float32 resolution


def test_it_orders_by_double_precision_scores_like_current_trec_eval(shared_data: Path) -> None:
    # ListNet scores many documents 0.99999999x. trec_eval stored scores as C floats until
    # its float-to-double change (usnistgov/trec_eval PR #38); the pytrec-eval-terrier wheel
    # still does, so those documents tie there and fall back to docno order. We keep the
    # doubles (as current trec_eval and gdeval do): rounding the scores to float32 on our side
    # reproduces pytrec_eval exactly, and without rounding gdeval agrees with us.
    qrels = read_qrels(shared_data / "mq2008" / "qrels.txt")
    run = read_run(shared_data / "mq2008" / "runs" / "ListNet.run")
    scores = scored(run)
    metric = Metric("nDCG", 10, gain="linear", y_max=2)
    reference = pytrec_ndcg_cut(qrels, run, 10)
    ours = evaluate_run(qrels, run, metric)
    assert sum(abs(ours[qid] - value) > 1e-9 for qid, value in reference.items()) > 100
    as_float32 = {qid: {d: float(np.float32(s)) for d, s in by_doc.items()} for qid, by_doc in scores.items()}
    rounded = evaluate_run(qrels, run_in_trec_eval_order(as_float32), metric)
    for qid, value in reference.items():
        assert rounded[qid] == pytest.approx(value, abs=1e-12), qid
    if shutil.which("perl") is not None:
        exp_metric = Metric("nDCG", 10, gain="exp", y_max=2)
        exp_ours = evaluate_run(qrels, run, exp_metric)
        for qid, value in gdeval_values(qrels, scores, nDCG(dcg="exp-log2") @ 10).items():
            assert exp_ours[qid] == pytest.approx(value, abs=GDEVAL_DECIMALS_TOLERANCE), qid
