"""Runs that arrive in a living campaign: the stratified top-up against reusing the stored draws
alone and against a fresh campaign of the top-up's size, on real data.

Each scenario replays ``python -m estimation simulate QRELS POOLED... --metric DCG@10 --goal
leaderboard --strategy S --budget 100 --arrival NEW --reference REF --topup 10 --topup 25
--topup 50`` (`estimation.simulation.arrivals.replay_arrival`, the command's own code): 100
human labels are spent on the pooled runs with the strategy's leaderboard design, then NEW
arrives and is compared with REF, the pooled run with the best DCG@10 on the qrels (the
champion a release is measured against).

Data (``$SHARED_DATA_DIR`` or ``../shared/data``; nothing is copied into the repository):

- Robust03 (grades 0-2, 100 topics): the 17 submitted runs in file-name order; the first 8 are
  pooled, and runs 9, 13 and 17 each arrive in turn (one scenario each), strategy ``items``.
- DL19 mini (grades 0-3, 13 topics): the 13 official runs in file-name order; the first 7 are
  pooled and runs 8, 10 and 12 arrive; strategies ``items`` and ``judged`` with the UMBRELA
  DeepSeek-V3 judge (``qrels/umbrela_bing_DSV3.txt``), calibrated externally on the same judge's
  DL23 labels, and internally (two stages on the stored budget, refitted on every stored label
  when the run arrives).

Per row: the arrival's new (topic, document) pairs, then for each top-up: reuse's bias, also in
Monte-Carlo standard errors (MC se: the sd of the estimates / sqrt(repetitions)), and its
coverage; fresh's and the top-up's RMSE and their ratio; the top-up's bias in MC se and the
coverage of its 95 % intervals. ``--repetitions`` campaigns per cell (default 1000), seed
``--seed``. Writes ``bench/results/arrivals.json`` and ``bench/results/arrivals.md``. About a
minute on 2 cores with the defaults.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO_ROOT))

from arrival_data import DL19, RESULTS, ROBUST, SHARED_DATA, champion, dl19_judge, dl23_calibration  # noqa: E402

from estimation.formats.trec import read_qrels, read_run  # noqa: E402
from estimation.metrics.spec import Metric  # noqa: E402
from estimation.simulation.arrivals import ArrivalRow, prepare_arrival_replay, replay_arrival  # noqa: E402

BUDGET = 100
TOPUPS = (10, 25, 50)


def _scenarios() -> list[dict]:
    """(data, pooled paths, arrival paths, strategies and judges) per data set."""
    robust = sorted((ROBUST / "runs").iterdir())
    dl19 = sorted((DL19 / "runs").iterdir())
    return [
        {
            "data": "Robust03",
            "qrels": ROBUST / "qrels.txt",
            "pooled": robust[:8],
            "arrivals": [robust[8], robust[12], robust[16]],
            "configs": [("items", "none")],
        },
        {
            "data": "DL19",
            "qrels": DL19 / "qrels" / "nist.txt",
            "pooled": dl19[:7],
            "arrivals": [dl19[7], dl19[9], dl19[11]],
            "configs": [("items", "none"), ("judged", "DL23"), ("judged", "internal")],
        },
    ]


def _cell(rows: list[ArrivalRow], topup: int) -> dict:
    by_kind = {row.arrival: row for row in rows if row.topup == topup}
    reuse, fresh, top = by_kind["reuse"], by_kind["fresh"], by_kind["topup"]
    return {
        "topup": topup,
        "truth": top.truth,
        "reuse_bias": reuse.mean - reuse.truth,
        "reuse_bias_in_se": (reuse.mean - reuse.truth) / reuse.bias_se,
        "reuse_coverage": reuse.coverage,
        "fresh_rmse": fresh.rmse,
        "fresh_coverage": fresh.coverage,
        "topup_rmse": top.rmse,
        "ratio": top.rmse / fresh.rmse,
        "topup_bias_in_se": (top.mean - top.truth) / top.bias_se,
        "topup_coverage": top.coverage,
        "topup_width": top.mean_width,
    }


def run(repetitions: int, seed: int) -> list[dict]:
    results = []
    for scenario in _scenarios():
        qrels = read_qrels(scenario["qrels"])
        y_max = max(grade for grades in qrels.values() for grade in grades.values())
        metric = Metric.parse("DCG@10", y_max=y_max)
        pooled = [read_run(path) for path in scenario["pooled"]]
        reference = champion(qrels, pooled, metric)
        judge_pairs = None
        if any(strategy == "judged" for strategy, _ in scenario["configs"]):
            judge_pairs = dl19_judge(y_max)
        for path in scenario["arrivals"]:
            arrival = read_run(path)
            for strategy, calibration_name in scenario["configs"]:
                calibration = dl23_calibration(metric) if calibration_name == "DL23" else None
                replay = prepare_arrival_replay(
                    qrels,
                    pooled,
                    arrival,
                    reference,
                    metric,
                    "leaderboard",
                    judge=judge_pairs if strategy == "judged" else None,
                    judge_calibration=calibration,
                )
                started = time.perf_counter()
                rows = replay_arrival(replay, strategy, BUDGET, TOPUPS, repetitions, seed)
                seconds = time.perf_counter() - started
                results.append(
                    {
                        "data": scenario["data"],
                        "arrival": arrival.tag,
                        "reference": pooled[reference].tag,
                        "new_items": int(replay.new.sum()),
                        "arrival_items": int((replay.weights[0] > 0).sum()),
                        "strategy": strategy,
                        "calibration": calibration_name,
                        "seconds": seconds,
                        "cells": [_cell(rows, topup) for topup in TOPUPS],
                    }
                )
                print(
                    f"{scenario['data']} {arrival.tag} {strategy}/{calibration_name}: {seconds:.1f} s",
                    file=sys.stderr,
                )
    return results


def _markdown(results: list[dict], repetitions: int, seed: int) -> str:
    lines = [
        f"Budget {BUDGET} stored labels (leaderboard design over the pooled runs), then top-ups of "
        f"{', '.join(map(str, TOPUPS))}; {repetitions} campaigns per cell, seed {seed}; "
        "`python bench/bench_arrivals.py`.",
        "",
        "| data | arrival (new / top-10 pairs) vs reference | strategy | top-up | truth "
        "| reuse bias (in MC se), coverage | fresh RMSE | top-up RMSE | top-up / fresh "
        "| top-up bias (MC se) | top-up coverage |",
        "|---|---|---|---:|---:|---|---:|---:|---:|---:|---:|",
    ]
    for result in results:
        strategy = result["strategy"] + (
            "" if result["calibration"] == "none" else f", {result['calibration']}"
        )
        for cell in result["cells"]:
            arrival = f"{result['arrival']} ({result['new_items']} / {result['arrival_items']})"
            reuse = (
                f"{cell['reuse_bias']:+.3f} ({cell['reuse_bias_in_se']:+.1f}), {cell['reuse_coverage']:.3f}"
            )
            lines.append(
                f"| {result['data']} | {arrival} vs {result['reference']} | {strategy} | {cell['topup']} "
                f"| {cell['truth']:.3f} | {reuse} | {cell['fresh_rmse']:.3f} "
                f"| {cell['topup_rmse']:.3f} | {cell['ratio']:.2f} | {cell['topup_bias_in_se']:+.1f} "
                f"| {cell['topup_coverage']:.3f} |"
            )
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repetitions", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    if not SHARED_DATA.is_dir():
        raise SystemExit(f"shared data not found at {SHARED_DATA} (set SHARED_DATA_DIR)")
    started = time.perf_counter()
    results = run(args.repetitions, args.seed)
    table = _markdown(results, args.repetitions, args.seed)
    RESULTS.mkdir(exist_ok=True)
    payload = {
        "repetitions": args.repetitions,
        "seed": args.seed,
        "budget": BUDGET,
        "topups": TOPUPS,
        "machine": {"python": platform.python_version(), "cpus": os.cpu_count()},
        "seconds": time.perf_counter() - started,
        "results": results,
    }
    (RESULTS / "arrivals.json").write_text(json.dumps(payload, indent=2) + "\n")
    (RESULTS / "arrivals.md").write_text(table)
    print(table)


if __name__ == "__main__":
    main()
