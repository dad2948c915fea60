"""The budget planner's table on three real data sets, and the budget active and item-level
sampling save against passive at equal RMSE.

Data (``$SHARED_DATA_DIR`` or ``../shared/data``; nothing is copied into the repository):

- MSLR-WEB sample (grades 0-4): both 5,000-line files, the truncated last query of each
  dropped (84 queries); no document ids, so docnos are made up as ``file:line``. Runs are
  single features of the whole document: BM25 (110), LMIR.DIR (120), LMIR.JM (125).
- Robust03 (grades 0-2, 100 topics): the official qrels and three submitted runs, pircRBa1,
  NLPR03vb10, uwmtCR0.
- TREC RAG 2024 from trec_eval's fixtures (grades 0-3, 31 qrels topics): ``qrels.comment.test``
  and its only run ``results.comment.test``; with one run there is no difference to plan.

Metric DCG@10 with exponential gain (the one metric all three strategies estimate), y_max the
largest qrels grade; every document costs 1, so a topic costs its pooled documents (the union
of the runs' top 10). No label model is given (the planner's default, uniform over the
grades), as for a campaign that starts without prior judgments. Budgets: 0.625 to 80 topics'
worth (times the mean pooled topic cost). Every strategy and budget is replayed
``--repetitions`` times through `estimation.simulation.planner.plan_budgets` with seed 0.

Savings: for passive's RMSE at a budget, the budget the other strategy needs for the same RMSE
(log-log interpolation between the budgets simulated, `estimation.simulation.planner.budget_needed`),
as a share of passive's budget; ``*`` marks a value extrapolated beyond the budgets simulated.

Usage: ``python bench/bench_planner.py [--repetitions 2000]``. Writes
``bench/results/planner.json`` and ``bench/results/planner.md``.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import platform
import sys
import time
from pathlib import Path

import numpy as np

REPO_ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO_ROOT))

from estimation.formats.trec import Run, read_qrels, read_run  # noqa: E402
from estimation.metrics.spec import Metric  # noqa: E402
from estimation.simulation.planner import default_budgets, plan_budgets, prepare_replay, saving  # noqa: E402

SHARED_DATA = Path(os.environ.get("SHARED_DATA_DIR", REPO_ROOT.parent / "shared" / "data"))
RESULTS = REPO_ROOT / "bench" / "results"
MSLR_FILES = ("msn1.fold1.train.5k.txt.gz", "msn1.fold1.test.5k.txt.gz")
MSLR_FEATURES = {"BM25": 110, "LMIR.DIR": 120, "LMIR.JM": 125}
ROBUST_RUNS = ("pircRBa1", "NLPR03vb10", "uwmtCR0")
TOPIC_MULTIPLES = (0.625, 1.25, 2.5, 5, 10, 20, 40, 80)
REPORTED_MULTIPLES = (10, 20, 40)
SEED = 0


def load_mslr() -> tuple[dict[str, dict[str, int]], list[Run]]:
    qrels: dict[str, dict[str, int]] = {}
    scores: dict[str, dict[str, list[tuple[float, str]]]] = {name: {} for name in MSLR_FEATURES}
    for name in MSLR_FILES:
        rows: dict[str, list[tuple[str, int, dict[str, str]]]] = {}
        with gzip.open(SHARED_DATA / "mslr_sample" / name, "rt", encoding="utf-8") as handle:
            for number, line in enumerate(handle, start=1):
                tokens = line.split()
                features = dict(token.split(":", 1) for token in tokens[1:])
                qid = f"{name.split('.')[2]}-{features['qid']}"
                rows.setdefault(qid, []).append((f"{name.split('.')[2]}:{number}", int(tokens[0]), features))
        rows.pop(list(rows)[-1])  # the file stops in the middle of its last query
        for qid, documents in rows.items():
            qrels[qid] = {docno: grade for docno, grade, _ in documents}
            for run, feature in MSLR_FEATURES.items():
                scores[run][qid] = [
                    (float(features[str(feature)]), docno) for docno, _, features in documents
                ]
    runs = []
    for run, by_query in scores.items():
        # trec_eval's order: score descending, then docno descending.
        ordered = {qid: sorted(pairs, reverse=True) for qid, pairs in by_query.items()}
        runs.append(
            Run(
                tag=run,
                rankings={qid: tuple(docno for _, docno in pairs) for qid, pairs in ordered.items()},
                scores={qid: tuple(score for score, _ in pairs) for qid, pairs in ordered.items()},
            )
        )
    return qrels, runs


def load_robust() -> tuple[dict[str, dict[str, int]], list[Run]]:
    folder = SHARED_DATA / "robust03"
    return read_qrels(folder / "qrels.txt"), [
        read_run(folder / "runs" / f"input.{name}.gz") for name in ROBUST_RUNS
    ]


def load_rag() -> tuple[dict[str, dict[str, int]], list[Run]]:
    folder = SHARED_DATA / "trec_eval_testdata"
    return read_qrels(folder / "qrels.comment.test"), [read_run(folder / "results.comment.test")]


DATASETS = {
    "MSLR-WEB sample": (
        load_mslr,
        "grades 0-4, 84 queries, runs BM25 / LMIR.DIR / LMIR.JM (features 110/120/125)",
    ),
    "Robust03": (load_robust, f"grades 0-2, 100 topics, runs {' / '.join(ROBUST_RUNS)}"),
    "RAG 2024 (trec_eval)": (load_rag, "grades 0-3, 31 topics, the one run results.comment.test"),
}


def run_cell(qrels: dict, runs: list[Run], goal: str, repetitions: int) -> dict:
    y_max = max(max(grades.values()) for grades in qrels.values())
    metric = Metric.parse("DCG@10", y_max=max(y_max, 1))
    replay = prepare_replay(qrels, runs, metric, goal)
    mean_cost = float(default_budgets(replay, (1,))[0])
    budgets = default_budgets(replay, TOPIC_MULTIPLES)
    started = time.perf_counter()
    rows = plan_budgets(replay, None, budgets, repetitions=repetitions, seed=SEED)
    seconds = time.perf_counter() - started
    savings = {}
    for strategy in ("active", "items"):
        for multiple, budget in zip(TOPIC_MULTIPLES, budgets, strict=True):
            if multiple in REPORTED_MULTIPLES:
                need = saving(rows, strategy, float(budget))
                savings[f"{strategy}@{multiple:g}"] = {
                    "saving": need.budget,
                    "extrapolated": need.extrapolated,
                }
    return {
        "goal": goal,
        "metric": str(metric),
        "y_max": metric.y_max,
        "runs": [run.tag for run in runs[: 1 if goal == "one" else 2]],
        "pooled_runs": [run.tag for run in runs],
        "topics": len(qrels),
        "pool_topics": replay.pool.n_queries,
        "mean_topic_cost": mean_cost,
        "rows": [
            {**row.__dict__, "topics_worth": multiple}
            for row, multiple in zip(rows, list(TOPIC_MULTIPLES) * 3, strict=True)
        ],
        "savings": savings,
        "seconds": seconds,
    }


def _percent(entry: dict) -> str:
    value = entry["saving"]
    if not np.isfinite(value):
        return "n/a"
    return f"{100 * value:+.0f} %{'*' if entry['extrapolated'] else ''}"


def markdown(report: dict) -> str:
    lines = [
        "# Budget planner: coverage and savings on real data",
        "",
        f"Produced by `python bench/bench_planner.py --repetitions {report['repetitions']}`; "
        "the method is in its docstring. DCG@10 (exp gain), 1 cost unit per document, "
        "no label model (uniform), "
        f"seed {SEED}. Budgets in topics' worth (x the mean pooled topic cost). Coverage of the "
        "95 % interval (query level: Student t with the n/(n-1) variance; items: CLT) over "
        f"{report['repetitions']} campaigns (standard error about "
        f"{100 * np.sqrt(0.95 * 0.05 / report['repetitions']):.1f} points at 0.95).",
        "",
        "## Key table",
        "",
        "| data set | goal | topics' worth | coverage passive / active / items "
        "| saving active | saving items |",
        "|---|---|---:|---|---:|---:|",
    ]
    for cell in report["cells"]:
        by = {(row["strategy"], row["topics_worth"]): row for row in cell["rows"]}
        for multiple in REPORTED_MULTIPLES:
            coverage = " / ".join(
                f"{by[(s, multiple)]['coverage']:.3f}" for s in ("passive", "active", "items")
            )
            lines.append(
                f"| {cell['dataset']} | {cell['goal']} | {multiple} | {coverage} | "
                f"{_percent(cell['savings'][f'active@{multiple}'])} | "
                f"{_percent(cell['savings'][f'items@{multiple}'])} |"
            )
    lines += [
        "",
        "Savings: share of passive's budget saved at passive's RMSE (negative: the strategy needs more); "
        f"* = extrapolated outside the budgets simulated ({TOPIC_MULTIPLES[0]:g} to {TOPIC_MULTIPLES[-1]:g} "
        "topics' worth).",
        "",
    ]
    for cell in report["cells"]:
        lines += [
            f"## {cell['dataset']}, {cell['goal']} ({' minus '.join(cell['runs'])})",
            "",
            f"{cell['description']}. {cell['pool_topics']} of {cell['topics']} qrels topics pooled; "
            f"mean topic cost {cell['mean_topic_cost']:.1f} documents; pooled runs "
            f"{', '.join(cell['pooled_runs'])}; {cell['seconds']:.1f} s.",
            "",
            "| strategy | topics' worth | budget | truth | mean | bias_se | rmse | coverage | mean_width "
            "| topics_judged |",
            "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
        ]
        for row in cell["rows"]:
            lines.append(
                f"| {row['strategy']} | {row['topics_worth']:g} | {row['budget']:.0f} | {row['truth']:.4f} | "
                f"{row['mean']:.4f} | {row['bias_se']:.4f} | {row['rmse']:.4f} | {row['coverage']:.3f} | "
                f"{row['mean_width']:.4f} | {row['topics_judged']:.1f} |"
            )
        lines.append("")
    lines += [f"Machine: {report['machine']}; wall time {report['seconds']:.1f} s.", ""]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repetitions", type=int, default=2000, help="campaigns per strategy and budget")
    args = parser.parse_args()
    if not SHARED_DATA.is_dir():
        raise SystemExit(f"shared data not found at {SHARED_DATA} (set SHARED_DATA_DIR)")
    started = time.perf_counter()
    cells = []
    for dataset, (load, description) in DATASETS.items():
        qrels, runs = load()
        for goal in ("one", "difference") if len(runs) >= 2 else ("one",):
            cell = run_cell(qrels, runs, goal, args.repetitions)
            cells.append({"dataset": dataset, "description": description, **cell})
            print(f"{dataset} {goal}: {cell['seconds']:.1f} s", file=sys.stderr)
    report = {
        "repetitions": args.repetitions,
        "seed": SEED,
        "topic_multiples": list(TOPIC_MULTIPLES),
        "cells": cells,
        "machine": f"{platform.machine()}, Python {platform.python_version()}, numpy {np.__version__}",
        "seconds": time.perf_counter() - started,
    }
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "planner.json").write_text(json.dumps(report, indent=1, allow_nan=True) + "\n")
    (RESULTS / "planner.md").write_text(markdown(report))
    print(markdown(report))


if __name__ == "__main__":
    main()
