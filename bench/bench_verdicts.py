"""Release verdicts read the way pipelines read them: after every label of a run's top-up.

Each cell replays `estimation.simulation.verdicts.replay_verdicts` (the app's estimator and its
one reading of the rules, `estimation.sampling.verdicts`): 100 human labels are spent on the
pooled runs with the strategy's leaderboard design, then a run arrives, is compared with the
champion (the pooled run with the best DCG@10 on the qrels), and up to TOPUP top-up labels are
drawn from the top-up design. After every new label the rules are read, their horizon the top-up:

- ``peek``: the fixed 95 % t interval, verdict at the first look that clears the threshold (naive);
- ``sequential``: the group-sequential boundary spread over the top-up (the default);
- ``anytime``: the open-ended 95 % confidence sequence;
- ``fixed``: the fixed interval read once, when the top-up is spent.

Every offered rule skips looks whose normal approximation is in doubt (no spread, skewness past
the Edgeworth bound, stored draws that disagree with the top-up's); the peek does not.

Equal runs: `equal_twin` swaps about half of the champion's top-10 documents for judged
documents of the same grade that no pooled run retrieved (three twins per data set, seeds 1-3),
so the truth is exactly 0 and every ``better`` or ``worse`` is wrong; the "rare" twin swaps only
documents of the top grade, at most 9 (few, large importance-sampling terms). Different runs: the
arrivals of `bench/bench_arrivals.py`, also asked the non-inferiority question twice: with a
margin of half their true loss (worse by more than the margin: every ``not_worse`` is wrong) and
of 2.5 times it (worse by less than half the margin: ``not_worse`` is right). A synthetic
scenario (`rare_large_terms`: a large term in one draw of seven, a small negative one otherwise,
truth 0) is read as a two-system campaign of 50 and 200 draws, with exact and with noisy small
terms.

Data (``$SHARED_DATA_DIR`` or ``../shared/data``; nothing is copied into the repository):
Robust03 (the first 8 of the 17 runs pooled; strategy ``items``) and DL19 mini (the first 7 of
13 pooled; ``items``, and ``judged`` with the UMBRELA DeepSeek-V3 judge calibrated on DL23).
With ``--campaigns`` (the default) each pair is also replayed as a two-system campaign of 100
labels, both runs pooled from the start. Writes ``bench/results/verdicts.json`` and
``bench/results/verdicts.md``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from functools import partial
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO_ROOT))

from arrival_data import DL19, RESULTS, ROBUST, SHARED_DATA, champion, dl19_judge, dl23_calibration  # noqa: E402

from estimation.formats.trec import read_qrels, read_run  # noqa: E402
from estimation.metrics.spec import Metric  # noqa: E402
from estimation.simulation.arrivals import prepare_arrival_replay  # noqa: E402
from estimation.simulation.verdicts import (  # noqa: E402
    VERDICT_RULES,
    VerdictRow,
    equal_twin,
    rare_large_terms,
    replay_campaign_verdicts,
    replay_term_verdicts,
    replay_verdicts,
)

BUDGET = 100
TWINS = (1, 2, 3)
RARE_TOP_GRADE = 9
OFFERED = ("sequential", "anytime", "fixed")
MARGINS = ((0.5, "worse by more than the margin"), (2.5, "within half the margin"))
"""Non-inferiority margins as multiples of a different run's true loss, and what they make it."""


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
        best = pooled[reference]
        arrivals = [
            ("equal", equal_twin(qrels, best, pooled, 10, seed=twin, tag=f"twin{twin}")) for twin in TWINS
        ]
        rare = equal_twin(qrels, best, pooled, 10, share=1.0, grade=y_max, limit=RARE_TOP_GRADE, tag="rare")
        arrivals.append(("equal, rare", rare))
        arrivals += [("different", read_run(path)) for path in scenario["arrivals"]]
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
                cell = {
                    "data": scenario["data"],
                    "arrival": arrival.tag,
                    "reference": best.tag,
                    "new_items": int(replay.new.sum()),
                    "strategy": strategy,
                    "calibration": calibration_name,
                    "truth": replay.truth,
                }
                started = time.perf_counter()
                rows = replay_verdicts(replay, strategy, BUDGET, topup, repetitions, seed)
                rules = [_rule(row) for row in rows]
                results.append({**cell, "kind": kind, "question": "difference", "rules": rules})
                if kind == "different":
                    for factor, role in MARGINS:
                        margin = abs(replay.truth) * factor
                        asked = replay_verdicts(
                            replay,
                            strategy,
                            BUDGET,
                            topup,
                            repetitions,
                            seed,
                            question="non_inferiority",
                            margin=margin,
                        )
                        results.append(
                            {
                                **cell,
                                "kind": f"different, {role}",
                                "question": "non_inferiority",
                                "margin": margin,
                                "rules": [_rule(r) for r in asked],
                            }
                        )
                if campaigns:
                    paired = replay_campaign_verdicts(replay, strategy, BUDGET, repetitions, seed)
                    results.append(
                        {
                            **cell,
                            "kind": f"{kind}, two-system campaign of {BUDGET} labels",
                            "question": "difference",
                            "rules": [_rule(r) for r in paired],
                        }
                    )
                seconds = time.perf_counter() - started
                print(f"{scenario['data']} {arrival.tag} {strategy}: {seconds:.1f} s", file=sys.stderr)
    for horizon in (50, 200):
        for noise in (0.0, 0.25):
            terms = partial(rare_large_terms, noise=noise)
            rows = replay_term_verdicts(terms, horizon, repetitions * 2, seed)
            results.append(
                {
                    "data": "synthetic",
                    "arrival": f"rare large terms, noise {noise:g}",
                    "reference": "-",
                    "new_items": 0,
                    "strategy": "terms",
                    "calibration": "none",
                    "truth": 0.0,
                    "kind": f"equal, two-system campaign of {horizon} draws",
                    "question": "difference",
                    "rules": [_rule(r) for r in rows],
                    "repetitions": repetitions * 2,
                }
            )
    return results


def _rule(row: VerdictRow) -> dict:
    return {
        "rule": row.rule,
        "above": row.above,
        "below": row.below,
        "wrong": row.wrong,
        "not_settled": row.not_settled,
        "median_labels": None if row.median_labels != row.median_labels else row.median_labels,
    }


def _cell(result: dict, rule: dict) -> str:
    when = "" if rule["median_labels"] is None else f" ({rule['median_labels']:.0f})"
    if result["question"] == "difference":
        return f"{rule['above']:.3f} / {rule['below']:.3f}{when}"
    return f"{rule['above']:.3f}{when}"


def _summary(results: list[dict], repetitions: int) -> list[str]:
    """The figures the issue asks for: wrong calls on equal runs (the largest per rule), decided
    right within the top-up against the fixed rule on different runs, non-inferiority's errors."""
    lines = []
    equal = [r for r in results if r["kind"].startswith("equal") and r["question"] == "difference"]
    for rule in VERDICT_RULES:
        worst = max(equal, key=lambda r: _by_rule(r, rule)["wrong"])
        share = _by_rule(worst, rule)["wrong"]
        lines.append(
            f"- equal runs, {rule}: wrong at most {share:.3f} ({worst['data']} {worst['arrival']} "
            f"{worst['strategy']}, {worst['kind']})"
        )
    different = [r for r in results if r["kind"].startswith("different") and r["question"] == "difference"]
    for rule in OFFERED:
        ratios, medians = [], []
        for result in different:
            right, fixed = _right(result, rule), _right(result, "fixed")
            if fixed >= 0.2:  # where the fixed rule decides often enough for a ratio to mean something
                ratios.append(right / fixed)
            if _by_rule(result, rule)["median_labels"] is not None:
                medians.append(_by_rule(result, rule)["median_labels"])
        if ratios:
            lines.append(
                f"- different runs (fixed decides >= 20 %), {rule}: decided right "
                f"{min(ratios):.2f}-{max(ratios):.2f} times as often as fixed; median labels to a decision "
                f"{min(medians):.0f}-{max(medians):.0f} (of top-ups of the size above, campaigns of {BUDGET})"
            )
    beyond = [r for r in results if r["kind"] == "different, worse by more than the margin"]
    within = [r for r in results if r["kind"] == "different, within half the margin"]
    for rule in OFFERED:
        wrong = max(_by_rule(r, rule)["above"] for r in beyond)
        ratio = [
            _by_rule(r, rule)["above"] / _by_rule(r, "fixed")["above"]
            for r in within
            if _by_rule(r, "fixed")["above"] >= 0.2
        ]
        text = f"{min(ratio):.2f}-{max(ratio):.2f}" if ratio else "n/a"
        lines.append(
            f"- non-inferiority, {rule}: not_worse for runs worse by more than the margin at most "
            f"{wrong:.3f}; for runs within half the margin {text} times as often as fixed"
        )
    slack = 3 * (0.05 * 0.95 / repetitions) ** 0.5
    lines.append(f"- binomial slack at {repetitions} replays: 5 % + 3 se = {0.05 + slack:.3f}")
    return lines


def _right(result: dict, rule: str) -> float:
    """The share of campaigns whose verdict has the truth's sign."""
    return _by_rule(result, rule)["below" if result["truth"] < 0 else "above"]


def _by_rule(result: dict, rule: str) -> dict:
    return next(item for item in result["rules"] if item["rule"] == rule)


def _markdown(results: list[dict], repetitions: int, seed: int, topup: int) -> str:
    lines = [
        f"{BUDGET} stored labels, then a top-up of up to {topup} labels with a check after every "
        f"label; {repetitions} campaigns per row ({repetitions * 2} for the synthetic rows), seed "
        f"{seed}; `python bench/bench_verdicts.py --repetitions {repetitions} --topup {topup}`. "
        "Question difference: better / worse (shares of campaigns); non-inferiority rows: the share "
        "called not_worse. The median top-up label of the decided ones in brackets. With equal runs "
        "every better or worse is wrong.",
        "",
        *_summary(results, repetitions),
        "",
        "| data | arrival vs champion | strategy | truth | question | " + " | ".join(VERDICT_RULES) + " |",
        "|---|---|---|---:|---|" + "---|" * len(VERDICT_RULES),
    ]
    for result in results:
        calibration = "" if result["calibration"] == "none" else f", {result['calibration']}"
        question = result["question"] + (f", margin {result['margin']:.3g}" if "margin" in result else "")
        cells = [_cell(result, _by_rule(result, rule)) for rule in VERDICT_RULES]
        arrival = f"{result['arrival']} ({result['kind']}, {result['new_items']} new)"
        lines.append(
            f"| {result['data']} | {arrival} vs {result['reference']} | {result['strategy']}{calibration} "
            f"| {result['truth']:+.3f} | {question} | {' | '.join(cells)} |"
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
