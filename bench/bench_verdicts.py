"""Release verdicts read the way pipelines read them: after every label of a run's top-up.

Each cell replays `estimation.simulation.verdicts.replay_verdicts` (the app's estimator and
rules): 100 human labels are spent on the pooled runs with the strategy's leaderboard design,
then a run arrives, is compared with the champion (the pooled run with the best DCG@10 on the
qrels), and up to TOPUP top-up labels are drawn from the top-up design. After every new label
the rules are read:

- ``peek``: the fixed 95 % t interval, verdict at the first look that excludes 0 (naive);
- ``anytime``: the 95 % normal-mixture confidence sequence (`estimation.sampling.sequences`),
  verdict at the first look that excludes 0 (from 20 top-up draws on);
- ``fixed``: the fixed interval read once, when the top-up is spent.

Equal runs: `equal_twin` swaps about half of the champion's top-10 documents for judged
documents of the same grade that no pooled run retrieved (three twins per data set, seeds 1-3),
so the truth is exactly 0 and every ``better`` or ``worse`` is wrong. Different runs: the
arrivals of `bench/bench_arrivals.py`. Per cell: the shares of ``better``, ``worse`` and
``not_settled`` and the median top-up label at which the decided ones were decided.

Data (``$SHARED_DATA_DIR`` or ``../shared/data``; nothing is copied into the repository):
Robust03 (the first 8 of the 17 runs pooled; strategy ``items``) and DL19 mini (the first 7 of
13 pooled; ``items``, and ``judged`` with the UMBRELA DeepSeek-V3 judge calibrated on DL23).
With ``--campaigns`` (the default) each pair is also replayed as a two-system campaign of 100
labels, both runs pooled from the start (the verdict of a campaign whose goal is a difference).
Writes ``bench/results/verdicts.json`` and ``bench/results/verdicts.md``.
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
from estimation.simulation.arrivals import prepare_arrival_replay  # noqa: E402
from estimation.simulation.verdicts import (  # noqa: E402
    VerdictRow,
    equal_twin,
    replay_campaign_verdicts,
    replay_verdicts,
)

BUDGET = 100
TWINS = (1, 2, 3)


def _scenarios() -> list[dict]:
    robust = sorted((ROBUST / "runs").iterdir())
    dl19 = sorted((DL19 / "runs").iterdir())
    return [
        {
            "data": "Robust03",
            "qrels": ROBUST / "qrels.txt",
            "pooled": robust[:8],
            "arrivals": [robust[8], robust[12], robust[16], robust[11], robust[14]],
            "configs": [("items", "none")],
        },
        {
            "data": "DL19",
            "qrels": DL19 / "qrels" / "nist.txt",
            "pooled": dl19[:7],
            "arrivals": [dl19[7], dl19[9], dl19[11]],
            "configs": [("items", "none"), ("judged", "DL23")],
        },
    ]


def run(repetitions: int, seed: int, topup: int, campaigns: bool) -> list[dict]:
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
        arrivals = [
            ("equal", equal_twin(qrels, pooled[reference], pooled, 10, seed=twin, tag=f"twin{twin}"))
            for twin in TWINS
        ] + [("different", read_run(path)) for path in scenario["arrivals"]]
        for kind, arrival in arrivals:
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
                rows = replay_verdicts(replay, strategy, BUDGET, topup, repetitions, seed)
                seconds = time.perf_counter() - started
                if campaigns:
                    # The same pair as a two-system campaign of BUDGET labels from the start.
                    paired = replay_campaign_verdicts(replay, strategy, BUDGET, repetitions, seed)
                    results.append(
                        {
                            "data": scenario["data"],
                            "kind": f"{kind}, two-system campaign of {BUDGET} labels",
                            "arrival": arrival.tag,
                            "reference": pooled[reference].tag,
                            "new_items": int(replay.new.sum()),
                            "strategy": strategy,
                            "calibration": calibration_name,
                            "truth": replay.truth,
                            "seconds": time.perf_counter() - started - seconds,
                            "rules": [_rule(row) for row in paired],
                        }
                    )
                results.append(
                    {
                        "data": scenario["data"],
                        "kind": kind,
                        "arrival": arrival.tag,
                        "reference": pooled[reference].tag,
                        "new_items": int(replay.new.sum()),
                        "strategy": strategy,
                        "calibration": calibration_name,
                        "truth": replay.truth,
                        "seconds": seconds,
                        "rules": [_rule(row) for row in rows],
                    }
                )
                print(f"{scenario['data']} {arrival.tag} {strategy}: {seconds:.1f} s", file=sys.stderr)
    return results


def _rule(row: VerdictRow) -> dict:
    return {
        "rule": row.rule,
        "better": row.better,
        "worse": row.worse,
        "not_settled": row.not_settled,
        "median_labels": None if row.median_labels != row.median_labels else row.median_labels,
    }


def _markdown(results: list[dict], repetitions: int, seed: int, topup: int) -> str:
    lines = [
        f"{BUDGET} stored labels, then a top-up of up to {topup} labels with a check after every "
        f"label; {repetitions} campaigns per row, seed {seed}; "
        f"`python bench/bench_verdicts.py --topup {topup}`. Each rule: better / worse "
        "(shares of campaigns), and the median top-up label of the decided ones in brackets. With "
        "equal runs every better or worse is wrong.",
        "",
        "| data | arrival vs champion | strategy | truth | peek (naive) | anytime | fixed |",
        "|---|---|---|---:|---|---|---|",
    ]
    for result in results:
        calibration = "" if result["calibration"] == "none" else f", {result['calibration']}"
        strategy = result["strategy"] + calibration
        cells = []
        for rule in result["rules"]:
            when = "" if rule["median_labels"] is None else f" ({rule['median_labels']:.0f})"
            cells.append(f"{rule['better']:.3f} / {rule['worse']:.3f}{when}")
        arrival = f"{result['arrival']} ({result['kind']}, {result['new_items']} new)"
        lines.append(
            f"| {result['data']} | {arrival} vs {result['reference']} | {strategy} "
            f"| {result['truth']:+.3f} | {' | '.join(cells)} |"
        )
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repetitions", type=int, default=400)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--topup", type=int, default=50)
    parser.add_argument(
        "--campaigns",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="also replay each pair as a two-system campaign of 100 labels",
    )
    args = parser.parse_args()
    if not SHARED_DATA.is_dir():
        raise SystemExit(f"shared data not found at {SHARED_DATA} (set SHARED_DATA_DIR)")
    started = time.perf_counter()
    results = run(args.repetitions, args.seed, args.topup, args.campaigns)
    table = _markdown(results, args.repetitions, args.seed, args.topup)
    RESULTS.mkdir(exist_ok=True)
    payload = {
        "repetitions": args.repetitions,
        "seed": args.seed,
        "budget": BUDGET,
        "topup": args.topup,
        "machine": {"python": platform.python_version(), "cpus": os.cpu_count()},
        "seconds": time.perf_counter() - started,
        "results": results,
    }
    name = "verdicts" if args.topup == 50 else f"verdicts_{args.topup}"
    (RESULTS / f"{name}.json").write_text(json.dumps(payload, indent=2) + "\n")
    (RESULTS / f"{name}.md").write_text(table)
    print(table)


if __name__ == "__main__":
    main()
