"""Judgments per topic of the HeapSort top-k procedure on real MQ2008 data, n = 50, k = 10.

Niu et al. (SIGIR 2012) report 142.76 judgments per topic in their user study (n = 50,
k = 10); a plain simulation with a noiseless oracle needs about 150; selecting and ordering
the top 10 of 50 by comparisons needs 94 in the worst case without prior knowledge.

Ground truth. No total-order relevance data is available, so one is built from real data
(LETOR 4.0 MQ2008): the official grade (0/1/2) first, ties broken by a real ranker's score
(the RankBoost run, in trec_eval's order: score descending, then docno descending). The
topics are the 38 of 470 MQ2008 queries with at least 50 judged documents; from each, 50
documents are drawn without replacement (seeded per topic, as the paper sampled 50 per
query). The assessor is a noiseless oracle of that total order.

Variants: the paper's plain algorithm (random insertion order, averaged over seeds), each
improvement alone, and all together. The insertion-order prior comes from a *different*
real ranker: BM25 (the MQ2008 feature-run of feature 25, an unsupervised baseline) and, as
a second row, ListNet (a learned ranker, closer to RankBoost). The simulated assessor
uses the "clearly irrelevant" click on a document the first time it is shown if its grade
is 0 and the true order puts it outside the top 10 (a document of grade 0 that the truth
still needs in its top 10, in topics with fewer than 10 relevant documents, is judged
normally). A click is counted as an action, next to the pairwise judgments. Every variant
must return the identical top-10 order; the script fails otherwise.

A second table answers ties as ties (grades only, a weak order): closer to a human
assessor with a three-grade notion of relevance; there the check is that the order is a
valid top-10 (its grades, best first, are the 10 highest grades).

A second data set repeats both tables on the MSLR-WEB sample (grades 0-4, many more
relevant documents per query): every query with >= 50 documents (the last, truncated query
of each file dropped), 50 sampled; ties broken by the LMIR.DIR score of the whole document
(feature 120), prior from BM25 of the whole document (feature 110). Both are single-feature
rankers of the same text, so this prior is closer to the tie-break than on MQ2008.

Usage: ``python bench/bench_topk.py [--seeds 20]``. Writes ``bench/results/topk.json`` and
``bench/results/topk.md``. Data: ``$SHARED_DATA_DIR`` or ``../shared/data``.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import platform
import re
import statistics
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

REPO_ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO_ROOT))

from estimation.formats.trec import read_qrels, read_run  # noqa: E402
from estimation.topk.state import answer, mark_bad, next_pair, result, start_topk  # noqa: E402

SHARED_DATA = Path(os.environ.get("SHARED_DATA_DIR", REPO_ROOT.parent / "shared" / "data"))
DATA_DIR = SHARED_DATA / "mq2008"
MSLR_FILES = ("msn1.fold1.train.5k.txt.gz", "msn1.fold1.test.5k.txt.gz")
MSLR_TIE_BREAK_FEATURE = 120  # LMIR.DIR, whole document
MSLR_PRIOR_FEATURE = 110  # BM25, whole document
RESULTS = REPO_ROOT / "bench" / "results"
N_DOCUMENTS = 50
K = 10
SAMPLE_SEED = 2012
TIE_BREAK_RUN = "runs/RankBoost.run"
PRIOR_RUNS = {"BM25": "feature_runs/MQ2008_f25_BM25_whole.run", "ListNet": "runs/ListNet.run"}
PAPER_USER_STUDY = 142.76
PLAIN_SIMULATION = 150
LOWER_BOUND = 94
TARGET = 90


@dataclass(frozen=True)
class Topic:
    qid: str
    documents: tuple[str, ...]  # the sample, in docno order
    grade: dict[str, int]
    truth: tuple[str, ...]  # the total order, best first
    priors: dict[str, tuple[str, ...]]

    @property
    def n_relevant(self) -> int:
        return sum(1 for docno in self.documents if self.grade[docno] > 0)


@dataclass(frozen=True)
class Variant:
    name: str
    prior: str | None
    reuse_answers: bool
    use_transitivity: bool
    bad_shortcut: bool


VARIANTS = (
    Variant("plain (paper, random order)", None, False, False, False),
    Variant("+ never ask a pair twice", None, True, False, False),
    Variant("+ transitivity", None, False, True, False),
    Variant("+ prior order (BM25)", "BM25", False, False, False),
    Variant("+ prior order (ListNet)", "ListNet", False, False, False),
    Variant("+ clearly-irrelevant click", None, False, False, True),
    Variant("all, prior BM25", "BM25", True, True, True),
    Variant("all, prior ListNet", "ListNet", True, True, True),
    Variant("all but the click, prior BM25", "BM25", True, True, False),
    Variant("all but the click, prior ListNet", "ListNet", True, True, False),
)


def load_topics(data_dir: Path) -> list[Topic]:
    qrels = read_qrels(data_dir / "qrels.txt")
    tie_break = read_run(data_dir / TIE_BREAK_RUN)
    prior_runs = {name: read_run(data_dir / path) for name, path in PRIOR_RUNS.items()}
    topics = []
    for qid in sorted((q for q, judged in qrels.items() if len(judged) >= N_DOCUMENTS), key=int):
        judged = sorted(qrels[qid])
        rng = np.random.default_rng([SAMPLE_SEED, int(qid)])
        sample = tuple(judged[i] for i in sorted(rng.choice(len(judged), N_DOCUMENTS, replace=False)))
        position = {docno: rank for rank, docno in enumerate(tie_break.rankings[qid])}
        missing = [docno for docno in sample if docno not in position]
        if missing:
            raise ValueError(f"{TIE_BREAK_RUN}: topic {qid} does not rank {missing[0]}")
        grade = {docno: qrels[qid][docno] for docno in sample}
        truth = tuple(sorted(sample, key=lambda docno: (-grade[docno], position[docno])))
        in_sample = set(sample)
        priors = {}
        for name, run in prior_runs.items():
            ranked = [docno for docno in run.rankings.get(qid, ()) if docno in in_sample]
            priors[name] = tuple(ranked + sorted(in_sample - set(ranked)))
        topics.append(Topic(qid, sample, grade, truth, priors))
    return topics


def load_mslr_topics(data_dir: Path) -> list[Topic]:
    """MSLR sample queries with >= 50 documents; docnos are made up as file:line."""
    topics = []
    for name in MSLR_FILES:
        rows: dict[str, list[tuple[str, int, float, float]]] = {}
        with gzip.open(data_dir / name, "rt", encoding="utf-8") as handle:
            for number, line in enumerate(handle, start=1):
                tokens = line.split()
                features = dict(token.split(":", 1) for token in tokens[1:])
                qid = features["qid"]
                rows.setdefault(qid, []).append(
                    (
                        f"{name.split('.')[2]}:{number}",
                        int(tokens[0]),
                        float(features[str(MSLR_TIE_BREAK_FEATURE)]),
                        float(features[str(MSLR_PRIOR_FEATURE)]),
                    )
                )
        rows.pop(list(rows)[-1])  # the file stops in the middle of its last query
        for qid, documents in rows.items():
            if len(documents) < N_DOCUMENTS:
                continue
            rng = np.random.default_rng([SAMPLE_SEED, int(qid)])
            sample = [documents[i] for i in sorted(rng.choice(len(documents), N_DOCUMENTS, replace=False))]
            grade = {docno: g for docno, g, _, _ in sample}
            # Score descending, then docno descending, as trec_eval orders a run.
            truth = sorted(sample, key=lambda row: (row[1], row[2], row[0]), reverse=True)
            prior = sorted(sample, key=lambda row: (row[3], row[0]), reverse=True)
            topics.append(
                Topic(
                    f"{name.split('.')[2]}-{qid}",
                    tuple(row[0] for row in sample),
                    grade,
                    tuple(row[0] for row in truth),
                    {"BM25": tuple(row[0] for row in prior)},
                )
            )
    return topics


def simulate(topic: Topic, variant: Variant, seed: int, ties: bool) -> tuple[int, int, tuple[str, ...]]:
    """(pairwise judgments, clearly-irrelevant clicks, order) of one noiseless assessor."""
    if ties:
        value = topic.grade
        # With ties a grade-0 document is outside every valid top-k only if k are relevant.
        bad = {d for d in topic.documents if topic.grade[d] == 0} if topic.n_relevant >= K else set()
    else:
        value = {docno: N_DOCUMENTS - rank for rank, docno in enumerate(topic.truth)}
        bad = {d for d in topic.truth[K:] if topic.grade[d] == 0}
    if not variant.bad_shortcut:
        bad = set()
    state = start_topk(
        topic.documents,
        K,
        prior_order=None if variant.prior is None else topic.priors[variant.prior],
        reuse_answers=variant.reuse_answers,
        use_transitivity=variant.use_transitivity,
        allow_bad_shortcut=variant.bad_shortcut,
        seed=seed,
    )
    while (pair := next_pair(state)) is not None:
        shown_bad = [docno for docno in (pair.left, pair.right) if docno in bad]
        if shown_bad:
            state = mark_bad(state, shown_bad[0])
            continue
        left, right = value[pair.left], value[pair.right]
        state = answer(state, pair, "left" if left > right else "right" if left < right else "tie")
    final = result(state)
    return final.judgments, final.bad_marks, final.order


def is_valid_topk(order: tuple[str, ...], topic: Topic) -> bool:
    return [topic.grade[d] for d in order] == sorted(topic.grade.values(), reverse=True)[:K]


def run_variant(topics: list[Topic], variant: Variant, seeds: int, ties: bool) -> dict:
    repeats = 1 if variant.prior is not None else seeds
    per_topic: dict[str, list[float]] = {}
    judgments_all: list[int] = []
    actions_all: list[int] = []
    correct = 0
    for topic in topics:
        judgments, actions = [], []
        topic_correct = True
        for seed in range(repeats):
            asked, clicks, order = simulate(topic, variant, seed, ties)
            judgments.append(asked)
            actions.append(asked + clicks)
            topic_correct &= is_valid_topk(order, topic) if ties else order == topic.truth[:K]
        correct += topic_correct
        judgments_all += judgments
        actions_all += actions
        # Per topic: [mean judgments, max judgments, mean actions], compact for the JSON file.
        per_topic[topic.qid] = [
            round(statistics.fmean(judgments), 2),
            max(judgments),
            round(statistics.fmean(actions), 2),
        ]
    return {
        "variant": variant.name,
        "runs_per_topic": repeats,
        "mean_judgments": round(statistics.fmean(judgments_all), 3),
        "max_judgments": max(judgments_all),
        "mean_actions": round(statistics.fmean(actions_all), 3),
        "max_actions": max(actions_all),
        "check": "valid top-10" if ties else "identical top-10",
        "topics_correct": correct,
        "per_topic_mean_max_actions": per_topic,
    }


def dataset_report(topics: list[Topic], seeds: int, description: str) -> dict:
    priors = set(topics[0].priors)
    variants = [variant for variant in VARIANTS if variant.prior is None or variant.prior in priors]
    return {
        "description": description,
        "n_topics": len(topics),
        "median_relevant": statistics.median(topic.n_relevant for topic in topics),
        "topics_with_k_relevant": sum(topic.n_relevant >= K for topic in topics),
        "relevant_per_topic": {topic.qid: topic.n_relevant for topic in topics},
        "total_order": [run_variant(topics, variant, seeds, ties=False) for variant in variants],
        "grades_only": [run_variant(topics, variant, seeds, ties=True) for variant in variants],
    }


def dataset_markdown(title: str, data: dict, seeds: int) -> list[str]:
    n_topics = data["n_topics"]
    lines = [
        f"## {title}",
        "",
        f"{data['description']} {n_topics} topics; median {data['median_relevant']} relevant documents "
        f"per 50-document sample ({data['topics_with_k_relevant']} topics have >= {K}). Random-order rows "
        f"average {seeds} insertion orders per topic; max is over all runs.",
        "",
        "Total order (grade, then the tie-break ranker):",
        "",
        "| variant | mean judgments | max judgments | mean actions | max actions | identical top-10 |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for row in data["total_order"]:
        lines.append(
            f"| {row['variant']} | {row['mean_judgments']:.1f} | {row['max_judgments']} | "
            f"{row['mean_actions']:.1f} | {row['max_actions']} | {row['topics_correct']}/{n_topics} |"
        )
    lines += [
        "",
        "Grades only (ties answered as ties):",
        "",
        "| variant | mean judgments | max judgments | mean actions | max actions | valid top-10 |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for row in data["grades_only"]:
        lines.append(
            f"| {row['variant']} | {row['mean_judgments']:.1f} | {row['max_judgments']} | "
            f"{row['mean_actions']:.1f} | {row['max_actions']} | {row['topics_correct']}/{n_topics} |"
        )
    return lines + [""]


def markdown(report: dict) -> str:
    lines = [
        "# HeapSort top-k: judgments per topic (n = 50, k = 10, noiseless oracle)",
        "",
        f"References: {PAPER_USER_STUDY} in the paper's user study; about {PLAIN_SIMULATION} for the plain "
        f"algorithm in simulation; {LOWER_BOUND} = worst-case lower bound without prior knowledge; "
        f"target <= {TARGET} mean with all improvements. Judgments are pairwise answers; actions add the "
        "clearly-irrelevant clicks (one per document, the first time a grade-0 document outside the true "
        "top-10 is shown). Produced by `python bench/bench_topk.py`; the method is in its docstring.",
        "",
    ]
    lines += dataset_markdown("MQ2008", report["mq2008"], report["seeds"])
    lines += dataset_markdown("MSLR-WEB sample", report["mslr"], report["seeds"])
    lines += [f"Machine: {report['machine']}; wall time {report['seconds']:.1f} s.", ""]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=20, help="random insertion orders per topic")
    args = parser.parse_args()
    if not DATA_DIR.is_dir():
        raise SystemExit(f"MQ2008 data not found at {DATA_DIR} (set SHARED_DATA_DIR)")
    started = time.perf_counter()
    report = {
        "n_documents": N_DOCUMENTS,
        "k": K,
        "seeds": args.seeds,
        "sample_seed": SAMPLE_SEED,
        "references": {
            "paper_user_study": PAPER_USER_STUDY,
            "plain_simulation": PLAIN_SIMULATION,
            "lower_bound": LOWER_BOUND,
            "target": TARGET,
        },
        "mq2008": dataset_report(
            load_topics(DATA_DIR),
            args.seeds,
            f"MQ2008 queries with >= 50 judged documents, grades 0-2; tie-break {TIE_BREAK_RUN}; "
            f"priors {PRIOR_RUNS}.",
        ),
        "mslr": dataset_report(
            load_mslr_topics(SHARED_DATA / "mslr_sample"),
            args.seeds,
            f"MSLR-WEB Fold1 sample queries with >= 50 documents, grades 0-4; tie-break feature "
            f"{MSLR_TIE_BREAK_FEATURE} (LMIR.DIR); prior feature {MSLR_PRIOR_FEATURE} (BM25).",
        ),
        "machine": f"{platform.machine()}, Python {platform.python_version()}, numpy {np.__version__}",
    }
    report["seconds"] = time.perf_counter() - started
    failures = [
        f"{name}: {row['variant']}"
        for name in ("mq2008", "mslr")
        for row in report[name]["total_order"] + report[name]["grades_only"]
        if row["topics_correct"] != report[name]["n_topics"]
    ]
    RESULTS.mkdir(parents=True, exist_ok=True)
    text = json.dumps(report, indent=1)
    # One line per topic instead of one per number.
    text = re.sub(r"\[\s+([^\[\]]*?)\s+\]", lambda m: "[" + " ".join(m.group(1).split()) + "]", text)
    (RESULTS / "topk.json").write_text(text + "\n")
    (RESULTS / "topk.md").write_text(markdown(report))
    print(markdown(report))
    if failures:
        raise SystemExit(f"variants that changed the top-k: {failures}")


if __name__ == "__main__":
    main()
