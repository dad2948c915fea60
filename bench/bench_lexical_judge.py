"""The built-in lexical judge (BM25, `estimation.judges.lexical`) next to NIST assessors: its
agreement, and the human labels the judged design needs with it, relative to item sampling
without a model.

Data (``$SHARED_DATA_DIR`` or ``../shared/data``; nothing is copied into the repository): LETOR
4.0 MQ2008 (grades 0-2, 470 topics), its qrels and the 8 learned rankers of ``runs/``. Robust03's
documents are not in the shared data, so the judge cannot read them there; MQ2008 ships LETOR's
feature 25, BM25 of the whole document, query-level min-max normalised, which is the judge's own
score up to the normalisation (the judge divides by the topic's best pooled score; min-max also
subtracts the lowest, which is 0 for most topics). That feature is the judge's score here; the
product computes it from the texts with k1 = 0.9, b = 0.4.

Topics are split by position in the sorted qid list: the odd ones are "other topics" (a
calibration set with human grades), the even ones the campaign. Two judges:

- ``default thresholds``: cut points from the pool's own scores with the default shares
  (`estimation.judges.lexical.default_shares`), what the product does before anyone judged
  (the demo);
- ``fitted thresholds``: cut points fitted on the other topics' human grades
  (`estimation.judges.lexical.fit_thresholds`).

Agreement (`estimation.judges.agreement`) on the campaign topics' pooled pairs (the union of the
8 rankers' top 10). Labels needed: as ``bench/bench_judged.py`` (whose replay code this reuses),
DCG@10 with exponential gain, targets by the NIST order of the 8 rankers (one system: positions
1, 3, 5, 7; close pairs 1-2, 3-4, 5-6, 7-8; far pairs 1-6, 2-7, 3-8), budgets 25-400, each
judge with its external calibration (fitted on the other topics) and the internal two-stage one;
the ratio is the judged design's budget for items' RMSE at budget B, divided by B.

Usage: ``python bench/bench_lexical_judge.py [--repetitions 500] [--seed 0]``; about 4 minutes on
2 cores. Writes ``bench/results/lexical_judge.json`` and ``.md``.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import replace
from pathlib import Path

import numpy as np

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH.parent))
sys.path.insert(0, str(BENCH))

from bench_judged import (  # noqa: E402
    RESULTS,
    SHARED_DATA,
    machine,
    nist_order,
    pooled_pairs,
    run_dataset,
    summarise,
    summary_table,
)

from estimation.formats.letor import concat_pools, read_letor  # noqa: E402
from estimation.formats.trec import Run, read_qrels, read_run  # noqa: E402
from estimation.judges import agreement, fit_calibration, no_calibration  # noqa: E402
from estimation.judges.lexical import Thresholds, fit_thresholds  # noqa: E402
from estimation.metrics.spec import Metric  # noqa: E402
from estimation.simulation.planner import PlannerRow, budget_needed  # noqa: E402

MQ2008 = SHARED_DATA / "mq2008"
NO_JUDGE = "no judge"
NOISE = "no judge, other seeds (noise floor)"
BM25_WHOLE = 24
"""0-based index of LETOR 4.0's feature 25, BM25 of the whole document."""
TARGETS = {
    "one": [(0,), (2,), (4,), (6,)],
    "close": [(0, 1), (2, 3), (4, 5), (6, 7)],
    "far": [(0, 5), (1, 6), (2, 7)],
}


def bm25_scores() -> dict[tuple[str, str], float]:
    pool = concat_pools([read_letor(MQ2008 / f"S{fold}.txt.gz") for fold in (1, 4, 5)])
    scores = {}
    for q, qid in enumerate(pool.query_ids):
        for row in range(int(pool.query_offsets[q]), int(pool.query_offsets[q + 1])):
            scores[(qid, pool.doc_ids[row])] = float(pool.features[row, BM25_WHOLE])
    return scores


def restricted(run: Run, topics: set[str]) -> Run:
    return replace(
        run,
        rankings={q: d for q, d in run.rankings.items() if q in topics},
        scores={q: s for q, s in run.scores.items() if q in topics},
    )


def normalised_by_topic(pairs: list[tuple[str, str]], scores: dict) -> dict[tuple[str, str], float]:
    best: dict[str, float] = {}
    for qid, docno in pairs:
        best[qid] = max(best.get(qid, 0.0), scores.get((qid, docno), 0.0))
    return {(q, d): (scores.get((q, d), 0.0) / best[q] if best[q] > 0 else 0.0) for q, d in pairs}


def against_no_judge(case: dict, cases: list[dict]) -> dict:
    """Per target and budget: the budget this judge's design needs for the no-judge design's
    RMSE at that budget, divided by the budget."""
    base = next(c for c in cases if c["judge"] == NO_JUDGE and c["calibration"] == case["calibration"])
    values, extrapolated = [], 0
    for target, reference in zip(case["targets"], base["targets"], strict=True):
        rows = [PlannerRow(**row) for row in target["judged"]]
        for row in reference["judged"]:
            need = budget_needed(rows, "judged", row["rmse"])
            values.append(need.budget / row["budget"])
            extrapolated += bool(need.extrapolated)
    finite = np.array([v for v in values if np.isfinite(v)])
    return {
        "judge": case["judge"],
        "calibration": case["calibration"],
        "cells": len(values),
        "mean": float(finite.mean()) if finite.size else float("nan"),
        "worst": float(finite.max()) if finite.size else float("nan"),
        "above_105": int(np.sum(finite > 1.05)),
        "extrapolated": extrapolated,
        "values": values,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repetitions", type=int, default=500)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    started = time.perf_counter()
    metric = Metric.parse("DCG@10", y_max=2)
    qrels_all = read_qrels(MQ2008 / "qrels.txt")
    runs_all = [read_run(path) for path in sorted((MQ2008 / "runs").iterdir())]
    topics = sorted(qrels_all)
    other, campaign = set(topics[0::2]), set(topics[1::2])
    qrels = {q: g for q, g in qrels_all.items() if q in campaign}
    runs = [restricted(run, campaign) for run in runs_all]
    raw = bm25_scores()
    campaign_pairs = pooled_pairs(qrels, runs, metric.cutoff)
    other_pairs = pooled_pairs({q: g for q, g in qrels_all.items() if q in other}, runs_all, metric.cutoff)
    score = normalised_by_topic(campaign_pairs + other_pairs, raw)
    human = {pair: max(0, qrels_all[pair[0]].get(pair[1], 0)) for pair in campaign_pairs + other_pairs}
    campaign_scores = np.array([score[p] for p in campaign_pairs])
    other_scores = np.array([score[p] for p in other_pairs])
    other_grades = np.array([human[p] for p in other_pairs])
    thresholds = {
        "default thresholds": fit_thresholds(
            campaign_scores, np.zeros(0), np.zeros(0, dtype=int), n_grades=3
        ),
        "fitted thresholds": fit_thresholds(other_scores, other_scores, other_grades, n_grades=3),
    }
    judges, agreements = [], []
    gains = metric.gain_table()
    for name, cut in thresholds.items():
        classes = {p: int(c) for p, c in zip(campaign_pairs, cut.classes(campaign_scores), strict=True)}
        found = agreement(
            [human[p] for p in campaign_pairs], [classes[p] for p in campaign_pairs], n_grades=3
        ).as_dict()
        other_classes = Thresholds(cut.cuts, cut.source).classes(other_scores)
        calibration = fit_calibration(other_classes, gains[other_grades], n_grades=3, source="external")
        agreements.append({"judge": name, "cuts": list(cut.cuts), "source": cut.source, **found})
        judges.append(
            {"name": name, "judge": {p: (c, None) for p, c in classes.items()}, "calibration": calibration}
        )
        print(f"{name}: kappa {found['kappa']:.3f}, weighted {found['weighted_kappa']:.3f}", file=sys.stderr)
    # The baseline the judge must not lose to: the same judged design without any judge label
    # (every pair in the MISSING class: h a constant, sigma one, i.e. the no-model design).
    judges.append({"name": NO_JUDGE, "judge": {}, "calibration": no_calibration(3)})
    data = {"name": "MQ2008 (even topics)", "metric": metric, "qrels": qrels, "runs": runs,
            "judges": judges, "target_spec": TARGETS}  # fmt: skip
    cases = []
    for case in run_dataset(data, args.repetitions, args.seed):
        case["summary"] = summarise(case)
        cases.append(case)
    versus = [against_no_judge(case, cases) for case in cases if case["judge"] != NO_JUDGE]
    # The noise floor of that comparison: the no-judge design against itself with other seeds.
    reseeded = {**data, "judges": [judge for judge in judges if judge["name"] == NO_JUDGE]}
    for case in run_dataset(reseeded, args.repetitions, args.seed + 1):
        versus.append(against_no_judge({**case, "judge": NOISE}, cases))
    order = nist_order(qrels, runs, metric)
    report = {
        "repetitions": args.repetitions,
        "seed": args.seed,
        "machine": machine(),
        "seconds": round(time.perf_counter() - started, 1),
        "campaign_topics": len(campaign),
        "other_topics": len(other),
        "pooled_pairs": len(campaign_pairs),
        "order": [{"tag": r["tag"], "value": r["value"]} for r in order],
        "agreement": agreements,
        "cases": [{k: v for k, v in case.items()} for case in cases],
        "versus_no_judge": versus,
    }
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "lexical_judge.json").write_text(json.dumps(report, separators=(",", ":"), default=float))
    lines = [
        "# The built-in lexical judge next to NIST assessors (MQ2008)",
        "",
        f"`python bench/bench_lexical_judge.py --repetitions {args.repetitions} --seed {args.seed}` "
        f"({report['seconds']:.0f} s on {report['machine']}); {len(campaign)} campaign topics, "
        f"{len(campaign_pairs)} pooled pairs, {len(other)} other topics for the calibration.",
        "",
        "| judge | cuts (source) | items | kappa | quadratic-weighted | binary | leniency |",
        "|---|---|---:|---:|---:|---:|---:|",
    ]
    for entry in agreements:
        lines.append(
            f"| {entry['judge']} | {', '.join(f'{c:.3f}' for c in entry['cuts'])} ({entry['source']}) "
            f"| {entry['n_items']} | {entry['kappa']:.3f} | {entry['weighted_kappa']:.3f} "
            f"| {entry['binary_kappa']:.3f} | {entry['leniency']:+.3f} |"
        )
    lines += [
        "",
        "Human labels the judged design needs with the lexical judge for the RMSE it reaches without "
        "any judge (the same design, every pair unlabelled), at each budget; mean [worst] over "
        "targets and budgets, `*` where a value was extrapolated:",
        "",
        "| judge | calibration | labels needed vs no judge, mean [worst] | cells above 1.05 |",
        "|---|---|---|---:|",
    ]
    for entry in versus:
        lines.append(
            f"| {entry['judge']} | {entry['calibration']} | {entry['mean']:.2f} [{entry['worst']:.2f}]"
            f"{'*' if entry['extrapolated'] else ''} | {entry['above_105']} of {entry['cells']} |"
        )
    lines += ["", "Against item sampling without a model (Schnabel et al.):", "", *summary_table(report), ""]
    (RESULTS / "lexical_judge.md").write_text("\n".join(lines))
    print("\n".join(lines))


if __name__ == "__main__":
    main()
