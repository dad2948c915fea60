"""Model judges next to human labels: the human labels the judged design needs at equal RMSE,
relative to item sampling without a model, and the coverage of its intervals.

Data (``$SHARED_DATA_DIR`` or ``../shared/data``; nothing is copied into the repository):

- DL19 mini (``llm_judges/dl19_mini``, grades 0-3, 13 topics): NIST qrels ``qrels/nist.txt``,
  the 13 official runs of ``runs/``, and two judges with the UMBRELA prompt, DeepSeek-V3
  (``qrels/umbrela_bing_DSV3.txt``, the good judge) and Llama-3-8B-Instruct
  (``qrels/umbrela_bing_Llama-3-8B-Instruct.txt``, the weak one). A pooled pair the judge did
  not label falls into the calibration's MISSING class.
- Robust03 (``robust03``, grades 0-2, 100 topics): the official qrels and the 17 submitted runs,
  with a judge *simulated* from a real confusion matrix: P(judge grade | NIST grade) of
  DeepSeek-V3 (``llm_judges/dl23_llmjudge/qrels/farzi_zeroshot_bing_DSV3.txt``) against NIST
  (``.../nist.txt``) on the 4,423 DL23 pairs, grades 0-3. Robust's grade is mapped to a NIST grade
  as 0 -> 0, 1 -> 2, 2 -> 3: Robust's "relevant" is a document that answers the topic, which is
  DL's "highly relevant" (2), not its "related" (1), and Robust's "highly relevant" is DL's
  "perfectly relevant". Each pooled document (the union of the 17 runs' top 10; unjudged ones
  count as Robust 0) gets one judge grade drawn from its NIST row with the fixed seed
  `JUDGE_SEED` (the judge is data; ``--seed`` only moves the campaigns), and the judge grade is
  brought back to the 0-2 scale by the same correspondence, 0 and 1 -> 0, 2 -> 1, 3 -> 2
  (`estimation.judges.judge_classes` needs classes within 0..y_max).

Metric DCG@10 with exponential gain, y_max = the qrels' top grade (3 resp. 2); every human label
costs 1. Calibrations of the judge (`estimation.judges`):

- external: DL19 judges on the same judge's DL23 labels, the ``farzi_zeroshot_bing_*`` file of
  the same model against DL23's NIST qrels (`estimation.judges.files.external_calibration`);
  the simulated Robust judge on the DL23 pairs (NIST vs DeepSeek-V3) themselves, both sides
  mapped to 0-2 as above (`estimation.judges.fit_calibration`). DL23's share of relevant
  documents is far higher than Robust's, so this calibration's h is too high for Robust: it
  costs variance, not bias.
- internal: none given (``judge_calibration=None``): a third of the budget on the no-model
  design, cross-fitted, then the mixture design (`estimation.simulation.judged`).

Targets, by the NIST order of the runs (DCG@10 on the NIST qrels, best first; position 1 is the
best run): "one system" (DL19: all 13 runs; Robust03: positions 1, 5, 9, 13, 17), "close"
differences of adjacent runs (DL19: all 12 pairs, i - (i+1); Robust03: positions 1-2, 5-6,
9-10, 13-14) and "far" differences five places apart (DL19: i - (i+5) for i = 1..8; Robust03:
1-6, 5-10, 9-14, 12-17). DL19's last run (UNH_exDL_bm25, DCG@10 2.4 against 11.6 for the run
above it) makes its 12-13 "close" pair far apart in value. Each target is replayed with a
pool of its own run(s) only (`estimation.simulation.planner.prepare_replay`).

Budgets 25, 50, 100, 200, 400 human labels, skipping any budget at or above 0.7 x the target's
pooled items (a DL19 run pools 130): with-replacement draws then mostly repeat labels already
bought, and the method notes say to judge such a pool whole. The ``items`` strategy (Schnabel
et al.'s item sampling, no model) and the ``judged`` one are replayed ``--repetitions`` times
with seed ``--seed`` through `estimation.simulation.planner.plan_budgets` (common random
numbers; items is replayed once per target and shared by every judge and calibration).

Labels needed: for items' RMSE at budget B, the budget judged needs for the same RMSE
(`estimation.simulation.planner.budget_needed`, log-log interpolation), divided by B; lower is
better, ``*`` marks a value extrapolated beyond the budgets simulated, n/a a curve that does not
fall. The summary takes the mean over budgets and targets, the worst (largest) in brackets, as
the method notes' section 4 does (theirs over n = 50-400; here over every budget simulated, 25
included). Coverage: share of campaigns whose 95 % interval (judged: Student t; items: CLT)
holds the truth, mean and minimum over targets and budgets, and at budget 25.

Part 2, the judge as a label model for the other strategies: the query-level (Sawade et al.'s
``active``) and item-level (Schnabel et al.'s ``items``) designs take a label model theta_i, a
distribution over the grades of each pooled pair (`estimation.simulation.planner.prepare_replay`,
``labels=``; default uniform). With the judge it is theta_i = P(y | f_i), the human grade's
distribution given the judge's class, fitted by `estimation.judges.calibration.grade_distributions`
(pseudo-counts toward the pooled grade distribution) on the DL23 pairs of the same judge (NIST grade
vs judge class; DL19 judges) resp. on the DL23 NIST-vs-DeepSeek-V3 pairs with both sides mapped to
0-2 as above (the simulated Robust03 judge). Per target (the same as part 1, same pools), ``passive``
(uniform topics, which ignores the label model), ``active`` and ``items`` are replayed without a
label model (uniform theta, today's default) and ``active`` and ``items`` again with the judge's,
at the budgets of part 1 in judgments (a topic costs its pooled documents: 10 for one run, 11-20
for a pair, so 25 judgments buy two topics of one run and one or two of a pair; every budget buys
a topic), ``--label-model-repetitions`` campaigns (default: ``--repetitions``) with seed
``--seed``. Saving: `estimation.simulation.planner.saving`
against passive at equal RMSE, 1 - (budget the strategy needs for passive's RMSE at B) / B, higher is
better, negative = more judgments than passive; mean over targets and budgets, worst (lowest) in
brackets. Coverage of the 95 % intervals (query level: Student t over the topics, which is inf
below two distinct topics and then covers; items: CLT).

Usage: ``python bench/bench_judged.py [--repetitions 1000] [--seed 0] [--label-model-only]
[--label-model-repetitions R]``; part 1 takes about 5 minutes on 2 cores with the defaults, part
2 about 4. Writes ``bench/results/judged.json`` and ``bench/results/judged.md``;
``--label-model-only`` runs part 2 alone and merges it into the part 1 already in judged.json.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path

import numpy as np

REPO_ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO_ROOT))

from estimation.formats.judge_labels import read_judge_labels  # noqa: E402
from estimation.formats.trec import Run, read_qrels, read_run  # noqa: E402
from estimation.judges import fit_calibration, grade_distributions, judge_classes  # noqa: E402
from estimation.judges.files import external_calibration  # noqa: E402
from estimation.metrics.spec import Metric  # noqa: E402
from estimation.metrics.values import summarize_run  # noqa: E402
from estimation.simulation.planner import (  # noqa: E402
    PlannerRow,
    budget_needed,
    plan_budgets,
    prepare_replay,
    saving,
)

SHARED_DATA = Path(os.environ.get("SHARED_DATA_DIR", REPO_ROOT.parent / "shared" / "data"))
RESULTS = REPO_ROOT / "bench" / "results"
DL19 = SHARED_DATA / "llm_judges" / "dl19_mini"
DL23 = SHARED_DATA / "llm_judges" / "dl23_llmjudge"
ROBUST = SHARED_DATA / "robust03"
BUDGETS = (25, 50, 100, 200, 400)
WHOLE_POOL_SHARE = 0.7
"""A budget at or above this share of the target's pooled items is not simulated."""
JUDGE_SEED = 2003
"""Seed of the simulated Robust03 judge's grades (fixed: the judge is data)."""
DL19_JUDGES = {
    # name: (DL19 labels, the same judge's DL23 labels for the external calibration)
    "DeepSeek-V3": ("umbrela_bing_DSV3.txt", "farzi_zeroshot_bing_DSV3.txt"),
    "Llama-3-8B": ("umbrela_bing_Llama-3-8B-Instruct.txt", "farzi_zeroshot_bing_Llama-3-8B-Instruct.txt"),
}
SIMULATED_FROM = "farzi_zeroshot_bing_DSV3.txt"
ROBUST_TO_NIST = np.array([0, 2, 3])
"""Robust grade -> NIST grade (Robust's relevant is DL's highly relevant)."""
NIST_TO_ROBUST = np.array([0, 0, 1, 2])
"""NIST (or judge) grade 0-3 -> the 0-2 scale: the inverse correspondence, related counts 0."""
# Targets as 0-based positions in the NIST order (None: every position).
DL19_TARGETS = {
    "one": None,
    "close": [(i, i + 1) for i in range(12)],
    "far": [(i, i + 5) for i in range(8)],
}
ROBUST_TARGETS = {
    "one": [(0,), (4,), (8,), (12,), (16,)],
    "close": [(0, 1), (4, 5), (8, 9), (12, 13)],
    "far": [(0, 5), (4, 9), (8, 13), (11, 16)],
}
KINDS = ("one", "close", "far")
KIND_NAMES = {"one": "one system", "close": "close pair", "far": "far pair"}
VARIANTS = ("active_uniform", "active_judge", "items_uniform", "items_judge")
"""Part 2: strategy and label model (none = uniform theta, or the judge's P(y | f))."""
VARIANT_NAMES = {
    "passive": "passive",
    "active_uniform": "active, uniform",
    "active_judge": "active, judge",
    "items_uniform": "items, uniform",
    "items_judge": "items, judge",
}

Judge = dict[tuple[str, str], tuple[int | None, tuple[float, ...] | None]]


def nist_order(qrels: Mapping[str, Mapping[str, int]], runs: Sequence[Run], metric: Metric) -> list[dict]:
    """The runs with their DCG on the human qrels, best first."""
    scored = [(summarize_run(qrels, run, metric).mean, run.tag, run) for run in runs]
    scored.sort(key=lambda entry: (-entry[0], entry[1]))
    return [{"tag": tag, "value": float(value), "run": run} for value, tag, run in scored]


def targets_of(order: list[dict], spec: Mapping[str, list[tuple[int, ...]] | None]) -> list[dict]:
    targets = []
    for kind in KINDS:
        positions = spec[kind]
        if positions is None:
            positions = [(i,) for i in range(len(order))]
        for chosen in positions:
            targets.append(
                {
                    "kind": kind,
                    "positions": [i + 1 for i in chosen],
                    "runs": [order[i]["tag"] for i in chosen],
                    "run_objects": [order[i]["run"] for i in chosen],
                }
            )
    return targets


def pooled_pairs(
    qrels: Mapping[str, Mapping[str, int]], runs: Sequence[Run], depth: int
) -> list[tuple[str, str]]:
    return sorted(
        {
            (qid, docno)
            for run in runs
            for qid, docs in run.rankings.items()
            if qid in qrels
            for docno in docs[:depth]
        }
    )


def load_dl19() -> dict:
    metric = Metric.parse("DCG@10", y_max=3)
    qrels = read_qrels(DL19 / "qrels" / "nist.txt")
    runs = [read_run(path) for path in sorted((DL19 / "runs").iterdir())]
    pairs = pooled_pairs(qrels, runs, metric.cutoff)
    judges = []
    for name, (labels, dl23_labels) in DL19_JUDGES.items():
        lines = read_judge_labels(DL19 / "qrels" / labels, y_max=metric.y_max)
        judge: Judge = {pair: (line.grade, line.probs) for pair, line in lines.items()}
        calibration = external_calibration(
            DL23 / "qrels" / "nist.txt", DL23 / "qrels" / dl23_labels, metric=metric
        )
        nist, dl23_classes = dl23_class_pairs(dl23_labels)
        rows = grade_distributions(dl23_classes, nist, n_grades=metric.y_max + 1)
        judges.append(
            {
                "name": name,
                "labels": f"llm_judges/dl19_mini/qrels/{labels}",
                "external": f"llm_judges/dl23_llmjudge/qrels/{dl23_labels}",
                "judge": judge,
                "calibration": calibration,
                "pooled_pairs_unlabelled": sum(pair not in judge for pair in pairs),
                "grade_distributions": rows,
                "label_model": label_model(judge, pairs, rows, metric.y_max + 1),
            }
        )
    return {
        "name": "DL19 mini",
        "metric": metric,
        "qrels": qrels,
        "runs": runs,
        "pooled_pairs": len(pairs),
        "judges": judges,
        "target_spec": DL19_TARGETS,
    }


def dl23_pairs(judge_file: str) -> tuple[np.ndarray, np.ndarray]:
    """NIST and judge grades (0-3) on the DL23 pairs both label."""
    humans = read_qrels(DL23 / "qrels" / "nist.txt")
    labels = read_judge_labels(DL23 / "qrels" / judge_file, y_max=3)
    both = [
        (humans[qid][docno], line.grade)
        for (qid, docno), line in labels.items()
        if docno in humans.get(qid, {})
    ]
    return np.array([h for h, _ in both]), np.array([j for _, j in both])


def dl23_class_pairs(judge_file: str) -> tuple[np.ndarray, np.ndarray]:
    """NIST grades (0-3) and the judge's classes (`judge_classes`) on the DL23 pairs both label."""
    humans = read_qrels(DL23 / "qrels" / "nist.txt")
    labels = read_judge_labels(DL23 / "qrels" / judge_file, y_max=3)
    both = [
        (humans[qid][docno], line) for (qid, docno), line in labels.items() if docno in humans.get(qid, {})
    ]
    classes = judge_classes([line.grade for _, line in both], [line.probs for _, line in both], n_grades=4)
    return np.array([grade for grade, _ in both]), classes


def label_model(
    judge: Judge, pairs: Sequence[tuple[str, str]], rows: np.ndarray, n_grades: int
) -> dict[tuple[str, str], np.ndarray]:
    """theta_i = P(y | f_i) for every pooled pair: the row of its judge class (last row: no label)."""
    found = [judge.get(pair, (None, None)) for pair in pairs]
    classes = judge_classes([grade for grade, _ in found], [probs for _, probs in found], n_grades=n_grades)
    index = np.where(classes < 0, n_grades, classes)
    return {pair: rows[i] for pair, i in zip(pairs, index.tolist(), strict=True)}


def load_robust() -> dict:
    metric = Metric.parse("DCG@10", y_max=2)
    qrels = read_qrels(ROBUST / "qrels.txt")
    runs = [read_run(path) for path in sorted((ROBUST / "runs").glob("input.*.gz"))]
    nist, judged = dl23_pairs(SIMULATED_FROM)
    counts = np.zeros((4, 4))
    np.add.at(counts, (nist, judged), 1)
    confusion = counts / counts.sum(axis=1, keepdims=True)
    cumulative = np.cumsum(confusion, axis=1)
    pairs = pooled_pairs(qrels, runs, metric.cutoff)
    uniforms = np.random.default_rng(JUDGE_SEED).random(len(pairs))
    judge: Judge = {}
    for (qid, docno), u in zip(pairs, uniforms, strict=True):
        row = ROBUST_TO_NIST[qrels[qid].get(docno, 0)]
        grade = min(int(np.searchsorted(cumulative[row], u, side="right")), 3)
        judge[(qid, docno)] = (int(NIST_TO_ROBUST[grade]), None)
    gains = metric.gain_table()
    calibration = fit_calibration(
        NIST_TO_ROBUST[judged], gains[NIST_TO_ROBUST[nist]], n_grades=metric.y_max + 1, source="external"
    )
    rows = grade_distributions(NIST_TO_ROBUST[judged], NIST_TO_ROBUST[nist], n_grades=metric.y_max + 1)
    human = np.array([qrels[qid].get(docno, 0) for qid, docno in pairs])
    simulated = np.array([judge[pair][0] for pair in pairs])
    relevant = human > 0
    return {
        "name": "Robust03",
        "metric": metric,
        "qrels": qrels,
        "runs": runs,
        "pooled_pairs": len(pairs),
        "judges": [
            {
                "name": "simulated DeepSeek-V3 (DL23 confusion)",
                "labels": f"simulated from DL23 {SIMULATED_FROM}, seed {JUDGE_SEED}",
                "external": f"DL23 NIST vs {SIMULATED_FROM}, mapped to 0-2",
                "judge": judge,
                "calibration": calibration,
                "pooled_pairs_unlabelled": 0,
                "confusion_dl23": confusion.round(4).tolist(),
                "relevant_judged_0": float(np.mean(simulated[relevant] == 0)),
                "grade_distributions": rows,
                "label_model": label_model(judge, pairs, rows, metric.y_max + 1),
            }
        ],
        "target_spec": ROBUST_TARGETS,
    }


def budgets_for(pooled_items: int) -> list[int]:
    return [budget for budget in BUDGETS if budget < WHOLE_POOL_SHARE * pooled_items]


def ratios(items_rows: list[PlannerRow], judged_rows: list[PlannerRow]) -> list[dict]:
    out = []
    rows = items_rows + judged_rows
    for row in items_rows:
        need = budget_needed(rows, "judged", row.rmse)
        out.append(
            {"budget": row.budget, "ratio": need.budget / row.budget, "extrapolated": need.extrapolated}
        )
    return out


def run_dataset(data: dict, repetitions: int, seed: int) -> list[dict]:
    metric, qrels = data["metric"], data["qrels"]
    order = nist_order(qrels, data["runs"], metric)
    targets = targets_of(order, data["target_spec"])
    cases = {
        (judge["name"], calibration): {
            "data": data["name"],
            "judge": judge["name"],
            "calibration": calibration,
            "targets": [],
        }
        for judge in data["judges"]
        for calibration in ("external", "internal")
    }
    for number, target in enumerate(targets, start=1):
        started = time.perf_counter()
        runs = target["run_objects"]
        goal = "one" if target["kind"] == "one" else "difference"
        base = prepare_replay(qrels, runs, metric, goal)
        pooled_items = int(base.pool.slot_used.sum())
        budgets = budgets_for(pooled_items)
        items_rows = plan_budgets(base, ["items"], budgets, repetitions=repetitions, seed=seed)
        for judge in data["judges"]:
            for calibration in ("external", "internal"):
                replay = prepare_replay(
                    qrels,
                    runs,
                    metric,
                    goal,
                    judge=judge["judge"],
                    judge_calibration=judge["calibration"] if calibration == "external" else None,
                )
                judged_rows = plan_budgets(replay, ["judged"], budgets, repetitions=repetitions, seed=seed)
                cases[(judge["name"], calibration)]["targets"].append(
                    {
                        "kind": target["kind"],
                        "runs": target["runs"],
                        "positions": target["positions"],
                        "truth": base.truth,
                        "pooled_items": pooled_items,
                        "budgets": budgets,
                        "items": [row.__dict__ for row in items_rows],
                        "judged": [row.__dict__ for row in judged_rows],
                        "ratios": ratios(items_rows, judged_rows),
                    }
                )
        print(
            f"{data['name']} {number}/{len(targets)} {target['kind']} {' - '.join(target['runs'])}: "
            f"{time.perf_counter() - started:.1f} s",
            file=sys.stderr,
        )
    return list(cases.values())


def summarise(case: dict) -> list[dict]:
    out = []
    for kind in KINDS:
        targets = [target for target in case["targets"] if target["kind"] == kind]
        if not targets:
            continue
        values = np.array([r["ratio"] for t in targets for r in t["ratios"]], dtype=float)
        finite = values[np.isfinite(values)]
        judged_cov = np.array([row["coverage"] for t in targets for row in t["judged"]])
        items_cov = np.array([row["coverage"] for t in targets for row in t["items"]])
        at_25 = np.array([row["coverage"] for t in targets for row in t["judged"] if row["budget"] == 25])
        out.append(
            {
                "kind": kind,
                "targets": len(targets),
                "cells": int(values.size),
                "ratio_mean": float(finite.mean()) if finite.size else float("nan"),
                "ratio_worst": float(finite.max()) if finite.size else float("nan"),
                "ratio_not_found": int(values.size - finite.size),
                "extrapolated": sum(r["extrapolated"] for t in targets for r in t["ratios"]),
                "above_1": int(np.sum(finite > 1)),
                "judged_coverage_mean": float(judged_cov.mean()),
                "judged_coverage_min": float(judged_cov.min()),
                "judged_coverage_25_mean": float(at_25.mean()),
                "judged_coverage_25_min": float(at_25.min()),
                "items_coverage_mean": float(items_cov.mean()),
                "items_coverage_min": float(items_cov.min()),
            }
        )
    return out


def _ratio(entry: dict) -> str:
    if not np.isfinite(entry["ratio"]):
        return "n/a"
    return f"{entry['ratio']:.2f}{'*' if entry['extrapolated'] else ''}"


def summary_table(report: dict) -> list[str]:
    lines = [
        "| data, judge | calibration | target | targets | labels needed, mean [worst] "
        "| judged coverage mean (min) | judged at 25 mean (min) | items coverage mean (min) |",
        "|---|---|---|---:|---|---|---|---|",
    ]
    for case in report["cases"]:
        for entry in case["summary"]:
            notes = (
                f"; {entry['extrapolated']}/{entry['cells']} extrapolated" if entry["extrapolated"] else ""
            )
            if entry["ratio_not_found"]:
                notes += f"; {entry['ratio_not_found']} n/a"
            lines.append(
                f"| {case['data']}, {case['judge']} | {case['calibration']} | {KIND_NAMES[entry['kind']]} "
                f"| {entry['targets']} | {entry['ratio_mean']:.2f} [{entry['ratio_worst']:.2f}]{notes} "
                f"| {entry['judged_coverage_mean']:.3f} ({entry['judged_coverage_min']:.3f}) "
                f"| {entry['judged_coverage_25_mean']:.3f} ({entry['judged_coverage_25_min']:.3f}) "
                f"| {entry['items_coverage_mean']:.3f} ({entry['items_coverage_min']:.3f}) |"
            )
    return lines


def markdown(report: dict) -> str:
    repetitions = report["repetitions"]
    lines = [
        "# Model judges next to human labels",
        "",
        f"Produced by `python bench/bench_judged.py --repetitions {repetitions} --seed {report['seed']}`; "
        "the method is in its docstring. DCG@10 (exp gain), 1 human label = 1 unit, budgets "
        f"{', '.join(str(b) for b in BUDGETS)} below {WHOLE_POOL_SHARE} x the target's pooled items. "
        "Labels needed: the human labels the judged design needs for the RMSE item sampling without "
        "a model has at the same budget, as a share of that budget (lower is better); mean over "
        "budgets and targets, worst in brackets; * = extrapolated beyond the budgets simulated. "
        f"Coverage of the 95 % intervals over {repetitions} campaigns (standard error about "
        f"{100 * np.sqrt(0.95 * 0.05 / repetitions):.1f} points at 0.95).",
        "",
        "## Summary",
        "",
        *summary_table(report),
        "",
    ]
    for data in report["datasets"]:
        lines += [
            f"Data {data['name']}: {data['pooled_pairs']} pooled pairs (all runs' top 10); NIST order "
            + ", ".join(f"{i + 1}. {r['tag']} ({r['value']:.2f})" for i, r in enumerate(data["order"]))
            + ".",
            "",
        ]
        for judge in data["judges"]:
            calibration = judge["calibration"]
            lines.append(
                f"- {judge['name']}: labels {judge['labels']} "
                f"({judge['pooled_pairs_unlabelled']} pooled pairs unlabelled); "
                f"external calibration {judge['external']}: h = "
                f"{', '.join(f'{v:.2f}' for v in calibration['mean_gain'])}, sigma = "
                f"{', '.join(f'{v:.2f}' for v in calibration['sd_gain'])} (classes 0..y_max, missing)."
            )
            if "relevant_judged_0" in judge:
                lines.append(
                    f"  Simulated judge puts {100 * judge['relevant_judged_0']:.0f} % of Robust-relevant "
                    f"pooled documents in class 0. DL23 confusion P(judge | NIST), rows NIST 0-3: "
                    + "; ".join(" ".join(f"{p:.3f}" for p in row) for row in judge["confusion_dl23"])
                    + "."
                )
        lines.append("")
    for case in report["cases"]:
        budgets = sorted({b for t in case["targets"] for b in t["budgets"]})
        lines += [
            f"## {case['data']}, {case['judge']}, {case['calibration']} calibration",
            "",
            "| target | runs | pooled | "
            + " | ".join(f"needed@{b}" for b in budgets)
            + " | RMSE items / judged at 25 | coverage judged (items) at 25 |",
            "|---|---|---:|" + "---:|" * len(budgets) + "---|---|",
        ]
        for target in case["targets"]:
            by_budget = {r["budget"]: r for r in target["ratios"]}
            cells = [_ratio(by_budget[b]) if b in by_budget else "" for b in budgets]
            items_25 = next(row for row in target["items"] if row["budget"] == 25)
            judged_25 = next(row for row in target["judged"] if row["budget"] == 25)
            runs = " - ".join(
                f"{p}. {run}" for p, run in zip(target["positions"], target["runs"], strict=True)
            )
            lines.append(
                f"| {KIND_NAMES[target['kind']]} | {runs} | {target['pooled_items']} | "
                + " | ".join(cells)
                + f" | {items_25['rmse']:.3f} / {judged_25['rmse']:.3f} "
                f"| {judged_25['coverage']:.3f} ({items_25['coverage']:.3f}) |"
            )
        lines.append("")
    lines += [f"Machine: {report['machine']}; wall time {report['seconds']:.0f} s.", ""]
    return "\n".join(lines)


def savings(passive_rows: list[PlannerRow], rows: list[PlannerRow]) -> list[dict]:
    """Per budget: the share of passive's judgments ``rows``' strategy saves at passive's RMSE."""
    out = []
    for row in passive_rows:
        share = saving(passive_rows + rows, rows[0].strategy, row.budget)
        out.append({"budget": row.budget, "saving": share.budget, "extrapolated": share.extrapolated})
    return out


def run_label_models(data: dict, repetitions: int, seed: int) -> list[dict]:
    """Part 2: passive, and active and items without and with the judge's label model."""
    metric, qrels = data["metric"], data["qrels"]
    order = nist_order(qrels, data["runs"], metric)
    targets = targets_of(order, data["target_spec"])
    cases = {
        judge["name"]: {"data": data["name"], "judge": judge["name"], "targets": []}
        for judge in data["judges"]
    }
    for number, target in enumerate(targets, start=1):
        started = time.perf_counter()
        runs = target["run_objects"]
        goal = "one" if target["kind"] == "one" else "difference"
        base = prepare_replay(qrels, runs, metric, goal)
        pooled_items = int(base.pool.slot_used.sum())
        budgets = budgets_for(pooled_items)
        uniform = plan_budgets(
            base, ["passive", "active", "items"], budgets, repetitions=repetitions, seed=seed
        )
        passive = [row for row in uniform if row.strategy == "passive"]
        for judge in data["judges"]:
            replay = prepare_replay(qrels, runs, metric, goal, labels=judge["label_model"])
            with_judge = plan_budgets(
                replay, ["active", "items"], budgets, repetitions=repetitions, seed=seed
            )
            rows = {"passive": passive}
            for variant in VARIANTS:
                strategy, model = variant.split("_")
                source = uniform if model == "uniform" else with_judge
                # Renamed so that passive and every variant can sit in one list for `saving`.
                rows[variant] = [replace(row, strategy=variant) for row in source if row.strategy == strategy]
            cases[judge["name"]]["targets"].append(
                {
                    "kind": target["kind"],
                    "runs": target["runs"],
                    "positions": target["positions"],
                    "truth": base.truth,
                    "pooled_items": pooled_items,
                    "topic_cost_range": [float(base.topic_cost.min()), float(base.topic_cost.max())],
                    "budgets": budgets,
                    "rows": {variant: [row.__dict__ for row in found] for variant, found in rows.items()},
                    "savings": {variant: savings(passive, rows[variant]) for variant in VARIANTS},
                }
            )
        print(
            f"{data['name']} part 2 {number}/{len(targets)} {target['kind']} {' - '.join(target['runs'])}: "
            f"{time.perf_counter() - started:.1f} s",
            file=sys.stderr,
        )
    return list(cases.values())


def summarise_label_models(case: dict) -> list[dict]:
    out = []
    for kind in KINDS:
        targets = [target for target in case["targets"] if target["kind"] == kind]
        if not targets:
            continue
        entry: dict = {"kind": kind, "targets": len(targets)}
        for variant in VARIANTS:
            values = np.array([s["saving"] for t in targets for s in t["savings"][variant]], dtype=float)
            finite = values[np.isfinite(values)]
            entry[variant] = {
                "cells": int(values.size),
                "mean": float(finite.mean()) if finite.size else float("nan"),
                "worst": float(finite.min()) if finite.size else float("nan"),
                "not_found": int(values.size - finite.size),
                "extrapolated": sum(s["extrapolated"] for t in targets for s in t["savings"][variant]),
            }
        for variant in ("passive", *VARIANTS):
            coverage = np.array([row["coverage"] for t in targets for row in t["rows"][variant]])
            entry[f"coverage_{variant}"] = [float(coverage.mean()), float(coverage.min())]
        out.append(entry)
    return out


def _saving(entry: dict) -> str:
    text = f"{entry['mean']:+.2f} [{entry['worst']:+.2f}]"
    if entry["extrapolated"]:
        text += f"; {entry['extrapolated']}/{entry['cells']} extrapolated"
    if entry["not_found"]:
        text += f"; {entry['not_found']} n/a"
    return text


def label_model_table(part: dict) -> list[str]:
    lines = [
        "| data, judge | target | targets | "
        + " | ".join(f"saving {VARIANT_NAMES[v]}" for v in VARIANTS)
        + " | coverage mean (min): "
        + " / ".join(VARIANT_NAMES[v] for v in ("passive", *VARIANTS))
        + " |",
        "|---|---|---:|" + "---|" * len(VARIANTS) + "---|",
    ]
    for case in part["cases"]:
        for entry in case["summary"]:
            coverage = " / ".join(
                f"{entry[f'coverage_{v}'][0]:.3f} ({entry[f'coverage_{v}'][1]:.3f})"
                for v in ("passive", *VARIANTS)
            )
            lines.append(
                f"| {case['data']}, {case['judge']} | {KIND_NAMES[entry['kind']]} | {entry['targets']} | "
                + " | ".join(_saving(entry[v]) for v in VARIANTS)
                + f" | {coverage} |"
            )
    return lines


def label_model_markdown(part: dict) -> str:
    repetitions = part["repetitions"]
    lines = [
        "## Part 2: the judge as label model for active and items",
        "",
        f"Produced by `{part['command']}`; the method is in the docstring (part 2). Saving against "
        "passive at equal RMSE (`estimation.simulation.planner.saving`): the share of passive's judgments "
        "a strategy saves for passive's RMSE at the same budget (higher is better, negative = more "
        "judgments); mean over budgets and targets, worst (lowest) in brackets; extrapolated = the budget "
        "needed lies outside the budgets simulated (mostly below 25); n/a = the strategy's curve does not "
        "reach passive's RMSE. Uniform = no label model (today's default), judge = "
        "theta_i = P(y | judge class of i) fitted on DL23. Passive ignores the label model. Budgets "
        "in judgments as in part 1 (a topic costs its pooled documents; 25 judgments buy 1-2 topics "
        "of a pair; with fewer than two distinct topics the query-level interval is infinite and covers). "
        "Coverage of the 95 % "
        f"intervals over {repetitions} campaigns (standard error about "
        f"{100 * np.sqrt(0.95 * 0.05 / repetitions):.1f} points at 0.95).",
        "",
        *label_model_table(part),
        "",
        "P(y | judge class) used as the label model (rows: judge class 0..y_max, no label; columns: "
        "human grade 0..y_max):",
        "",
    ]
    for judge in part["judges"]:
        lines.append(
            f"- {judge['data']}, {judge['name']}: "
            + "; ".join(" ".join(f"{p:.3f}" for p in row) for row in judge["grade_distributions"])
            + "."
        )
    lines.append("")
    for case in part["cases"]:
        lines += [
            f"### Part 2: {case['data']}, {case['judge']}",
            "",
            "| target | runs | pooled | budgets | "
            + " | ".join(f"saving {VARIANT_NAMES[v]}" for v in VARIANTS)
            + " | RMSE passive / active judge / items judge at 25 |",
            "|---|---|---:|---|" + "---:|" * len(VARIANTS) + "---|",
        ]
        for target in case["targets"]:
            cells = []
            for variant in VARIANTS:
                values = [s["saving"] for s in target["savings"][variant]]
                finite = [v for v in values if np.isfinite(v)]
                cells.append(f"{np.mean(finite):+.2f}" if finite else "n/a")
            at_25 = [
                next(row for row in target["rows"][v] if row["budget"] == 25)["rmse"]
                for v in ("passive", "active_judge", "items_judge")
            ]
            runs = " - ".join(
                f"{p}. {run}" for p, run in zip(target["positions"], target["runs"], strict=True)
            )
            lines.append(
                f"| {KIND_NAMES[target['kind']]} | {runs} | {target['pooled_items']} | "
                f"{'-'.join(str(b) for b in (target['budgets'][0], target['budgets'][-1]))} | "
                + " | ".join(cells)
                + " | "
                + " / ".join(f"{v:.3f}" for v in at_25)
                + " |"
            )
        lines.append("")
    lines += [f"Machine: {part['machine']}; wall time of part 2 {part['seconds']:.0f} s.", ""]
    return "\n".join(lines)


def machine() -> str:
    return (
        f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}, "
        f"numpy {np.__version__}"
    )


def _rounded(value: object) -> object:
    """Floats to 6 significant digits, recursively (the JSON's size, not its precision, was the issue)."""
    if isinstance(value, float):
        return float(f"{value:.6g}")
    if isinstance(value, dict):
        return {key: _rounded(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_rounded(item) for item in value]
    return value


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repetitions", type=int, default=1000, help="campaigns per strategy and budget")
    parser.add_argument("--seed", type=int, default=0, help="seed of the replayed campaigns")
    parser.add_argument(
        "--label-model-only",
        action="store_true",
        help="run part 2 only (the judge as label model) and merge it into bench/results/judged.json",
    )
    parser.add_argument(
        "--label-model-repetitions",
        type=int,
        default=None,
        help="campaigns in part 2 (default: --repetitions)",
    )
    args = parser.parse_args()
    if not SHARED_DATA.is_dir():
        raise SystemExit(f"shared data not found at {SHARED_DATA} (set SHARED_DATA_DIR)")
    part2_repetitions = (
        args.repetitions if args.label_model_repetitions is None else args.label_model_repetitions
    )
    started = time.perf_counter()
    report: dict = {}
    if args.label_model_only:
        if (RESULTS / "judged.json").is_file():
            report = json.loads((RESULTS / "judged.json").read_text())
            report.pop("label_model", None)
    cases, datasets, part2_cases, part2_judges = [], [], [], []
    part1_seconds = part2_seconds = 0.0
    for load in (load_dl19, load_robust):
        loading = time.perf_counter()
        data = load()
        print(f"{data['name']}: loaded after {time.perf_counter() - started:.1f} s", file=sys.stderr)
        load_seconds = time.perf_counter() - loading
        if args.label_model_only:
            part2_seconds += load_seconds
        else:
            part1_seconds += load_seconds
            running = time.perf_counter()
            for case in run_dataset(data, args.repetitions, args.seed):
                case["summary"] = summarise(case)
                cases.append(case)
            part1_seconds += time.perf_counter() - running
        running = time.perf_counter()
        for case in run_label_models(data, part2_repetitions, args.seed):
            case["summary"] = summarise_label_models(case)
            part2_cases.append(case)
        part2_seconds += time.perf_counter() - running
        part2_judges += [
            {
                "data": data["name"],
                "name": judge["name"],
                "grade_distributions": judge["grade_distributions"].tolist(),
            }
            for judge in data["judges"]
        ]
        order = nist_order(data["qrels"], data["runs"], data["metric"])
        datasets.append(
            {
                "name": data["name"],
                "metric": f"{data['metric']} (exp gain, y_max {data['metric'].y_max})",
                "pooled_pairs": data["pooled_pairs"],
                "order": [{"tag": r["tag"], "value": r["value"]} for r in order],
                "judges": [
                    {
                        **{
                            key: value
                            for key, value in judge.items()
                            if key not in ("judge", "calibration", "label_model", "grade_distributions")
                        },
                        "calibration": judge["calibration"].as_dict(),
                    }
                    for judge in data["judges"]
                ],
            }
        )
    if not args.label_model_only:
        report = {
            "repetitions": args.repetitions,
            "seed": args.seed,
            "judge_seed": JUDGE_SEED,
            "budgets": list(BUDGETS),
            "whole_pool_share": WHOLE_POOL_SHARE,
            "datasets": datasets,
            "cases": cases,
            "machine": machine(),
            "seconds": part1_seconds,
        }
    command = "python bench/bench_judged.py" + (" --label-model-only" if args.label_model_only else "")
    command += f" --repetitions {args.repetitions} --seed {args.seed}"
    if args.label_model_repetitions is not None:
        command += f" --label-model-repetitions {args.label_model_repetitions}"
    report["label_model"] = {
        "command": command,
        "repetitions": part2_repetitions,
        "seed": args.seed,
        "variants": list(VARIANTS),
        "judges": part2_judges,
        "cases": part2_cases,
        "machine": machine(),
        "seconds": part2_seconds,
    }
    RESULTS.mkdir(parents=True, exist_ok=True)
    # One line per top-level key, numbers to 6 significant digits: the per-target rows are many.
    compact = {key: _rounded(value) for key, value in report.items()}
    (RESULTS / "judged.json").write_text(
        "{\n"
        + ",\n".join(
            f"{json.dumps(key)}: {json.dumps(value, allow_nan=True, separators=(',', ':'))}"
            for key, value in compact.items()
        )
        + "\n}\n"
    )
    text = markdown(report) + "\n" if "cases" in report else ""
    (RESULTS / "judged.md").write_text(text + label_model_markdown(report["label_model"]))
    if not args.label_model_only:
        print("\n".join(summary_table(report)))
    print("\n".join(label_model_table(report["label_model"])))
    print(f"\nwall time {time.perf_counter() - started:.0f} s", file=sys.stderr)


if __name__ == "__main__":
    main()
