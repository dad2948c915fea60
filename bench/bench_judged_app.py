"""The judged strategy through the app's own pipeline: unbiased and covering over seeded campaigns.

The demo collection (6 topics, 3 runs, hidden grades 0-3) with a simulated judge (the demo's until
it got the built-in lexical one; its
grades drawn from a fixed confusion with Cohen's kappa about 0.35), goal: the difference
bm25-tuned - bm25-default on DCG@10 (exp gain). Each campaign is a fresh graded campaign with the
"Model labels + human sample" strategy and its own seed, run through the app's services exactly
as a live one, minus HTTP: `task_next` serves the drawn items, the hidden grade answers them,
the worker's `recompute` runs after every 4 answers (refitting the internal calibration and q,
storing each sampling version's calibration), and `estimates_compute` reads the certified
estimate once the budget is spent. The truth is `evaluate` on the hidden grades.

Usage::

    .venv/bin/python bench/bench_judged_app.py                    # 400 campaigns, budget 60
    .venv/bin/python bench/bench_judged_app.py --campaigns 40 --budget 30

Writes bench/results/judged_app.json and judged_app.md.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import platform
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

REPO_ROOT = Path(__file__).resolve().parent.parent
RESULTS_DIR = REPO_ROOT / "bench" / "results"
# Campaign seeds FIRST_SEED, FIRST_SEED + 1, ...; BENCH_STRATEGY=items runs the same without the judge.
FIRST_SEED = int(os.environ.get("BENCH_FIRST_SEED", "1000"))
# BENCH_CALIBRATION=external gives the judge a calibration set on other topics (h fixed for the
# whole campaign); the default calibrates on the campaign's own labels as they arrive.
CALIBRATION = os.environ.get("BENCH_CALIBRATION", "internal")
sys.path.insert(0, str(REPO_ROOT))


# P(judge grade | human grade), rows human 0..3: a simulated judge about as good as the LLM
# judges next to NIST assessors on TREC DL (Cohen's kappa about 0.3-0.4, quadratic-weighted
# about 0.6-0.7, more generous than the humans); the demo's judge until it got the built-in
# lexical one.
SIMULATED_JUDGE_CONFUSION = np.array(
    [
        [0.62, 0.25, 0.10, 0.03],
        [0.20, 0.40, 0.30, 0.10],
        [0.05, 0.20, 0.45, 0.30],
        [0.02, 0.08, 0.30, 0.60],
    ]
)


def simulated_judge_add(campaign, judge_create, judge_labels_import, demo_collection):  # type: ignore[no-untyped-def]
    """A simulated judge's labels of every demo document, drawn from SIMULATED_JUDGE_CONFUSION."""
    _, _, _, grades = demo_collection()
    rng = np.random.default_rng(11)
    lines = []
    for (qid, docno), grade in sorted(grades.items()):
        judged = int(rng.choice(4, p=SIMULATED_JUDGE_CONFUSION[grade]))
        lines.append(f"{qid} 0 {docno} {judged}\n")
    judge = judge_create(
        campaign=campaign,
        name="simulated-umbrela",
        model="simulated (no model): grades drawn from a confusion like UMBRELA judges on TREC DL",
        simulated=True,
    )
    judge_labels_import(judge=judge, files=[("simulated-umbrela.txt", io.BytesIO("".join(lines).encode()))])


def run(campaigns: int, budget: int) -> dict:
    from django.contrib.auth import get_user_model
    from django.core.management import call_command

    from demo.loading import DEMO_GRADES, DEMO_USERS, _demo_user, demo_collection, demo_fill_and_start
    from estimation.formats.trec import iter_run, run_from_lines
    from estimation.metrics.spec import Metric
    from estimation.metrics.values import summarize_run
    from graded.claims import task_next
    from graded.judging import task_answer
    from labeling.models import Campaign
    from labeling.recompute import recompute
    from labeling.services.campaigns import campaign_create
    from sampling import estimates_compute, judge_calibration_import, judge_create, judge_labels_import

    call_command("migrate", verbosity=0)
    for username, role in DEMO_USERS:
        _demo_user(username, role)
    _, _, runs, grades = demo_collection()
    qrels: dict[str, dict[str, int]] = {}
    for (qid, docno), grade in grades.items():
        qrels.setdefault(qid, {})[docno] = grade
    metric = Metric.parse("DCG@10", gain="exp", y_max=3)
    truth = {
        name: summarize_run(qrels, run_from_lines(iter_run(text.splitlines(keepends=True))), metric).mean
        for name, text in runs.items()
    }
    true_difference = truth["bm25-tuned"] - truth["bm25-default"]

    def prepare(campaign: Campaign) -> None:
        simulated_judge_add(campaign, judge_create, judge_labels_import, demo_collection)
        if CALIBRATION == "external":
            # The same judge on other topics: a second generated collection, its qids renamed.
            _, _, _, other = demo_collection(seed=77)
            rng = np.random.default_rng(77)
            humans = "".join(
                f"cal-{qid} 0 {docno} {grade}\n" for (qid, docno), grade in sorted(other.items())
            )
            labels = "".join(
                f"cal-{qid} 0 {docno} {int(rng.choice(4, p=SIMULATED_JUDGE_CONFUSION[grade]))}\n"
                for (qid, docno), grade in sorted(other.items())
            )
            judge_calibration_import(
                judge=campaign.judges.get(),
                human_qrels=[("humans.txt", io.BytesIO(humans.encode()))],
                judge_labels=[("labels.txt", io.BytesIO(labels.encode()))],
            )

    coordinator = get_user_model().objects.get(username="demo-coordinator")
    assessor = get_user_model().objects.get(username="demo-assessor2")
    rows = []
    for seed in range(campaigns):
        campaign = campaign_create(
            creator=coordinator,
            name=f"seed {seed}",
            metric="DCG@10",
            grades=DEMO_GRADES,
            goal="difference",
            focus_systems=["bm25-tuned", "bm25-default"],
            strategy=os.environ.get("BENCH_STRATEGY", "judged"),
            budget=budget,
            budget_unit="judgments",
            seed=FIRST_SEED + seed,
        )
        campaign = demo_fill_and_start(campaign, before_start=prepare)
        answered = 0
        while (task := task_next(campaign=campaign, assessor=assessor)) is not None:
            task_answer(
                task=task, assessor=assessor, grade=grades[(task.topic.qid, task.document.docno)], seconds=5.0
            )
            answered += 1
            if answered % 4 == 0:
                recompute(campaign.pk)
        recompute(campaign.pk)
        result = estimates_compute(Campaign.objects.get(pk=campaign.pk))
        difference = result["difference"]
        systems = {row["name"]: row for row in result["systems"] if row["metric"] == "DCG@10"}
        rows.append(
            {
                "seed": FIRST_SEED + seed,
                "judgments": answered,
                "draws": result["draws"],
                "difference": [difference["value"], difference["low"], difference["high"]],
                "systems": {name: [row["value"], row["low"], row["high"]] for name, row in systems.items()},
            }
        )
        print(
            f"campaign {seed + 1}/{campaigns}: difference {difference['value']:.3f}",
            file=sys.stderr,
            flush=True,
        )
    return {"truth": truth, "true_difference": true_difference, "campaigns": rows}


def summary(report: dict) -> list[dict]:
    lines = []
    targets = [
        (
            "bm25-tuned - bm25-default",
            report["true_difference"],
            [c["difference"] for c in report["campaigns"]],
        )
    ]
    for name, value in report["truth"].items():
        targets.append((name, value, [c["systems"][name] for c in report["campaigns"]]))
    for target, truth, triples in targets:
        values = np.array([t[0] for t in triples])
        covered = np.mean([t[1] <= truth <= t[2] for t in triples])
        lines.append(
            {
                "target": target,
                "truth": truth,
                "mean": float(values.mean()),
                "bias_se": float(values.std(ddof=1) / np.sqrt(values.size)),
                "rmse": float(np.sqrt(np.mean((values - truth) ** 2))),
                "coverage": float(covered),
                "mean_width": float(np.mean([t[2] - t[1] for t in triples])),
            }
        )
    return lines


def markdown(report: dict, command: str) -> str:
    rows = "\n".join(
        f"| {line['target']} | {line['truth']:.3f} | {line['mean']:.3f} | {line['bias_se']:.3f} | "
        f"{(line['mean'] - line['truth']) / line['bias_se']:+.1f} | {line['rmse']:.3f} | "
        f"{line['coverage']:.3f} | {line['mean_width']:.2f} |"
        for line in report["summary"]
    )
    return (
        f"Printed by `{command}` in {report['seconds']:.0f} s: {len(report['campaigns'])} campaigns, budget "
        f"{report['budget']} judgments each.\n\n"
        "| target (DCG@10) | truth | mean estimate | its s.e. | bias in s.e. | RMSE | 95 % coverage "
        "| mean width |\n"
        "|---|---:|---:|---:|---:|---:|---:|---:|\n" + rows + "\n"
    )


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--campaigns", type=int, default=400)
    parser.add_argument("--budget", type=int, default=60)
    args = parser.parse_args()
    started = time.time()
    with tempfile.TemporaryDirectory() as folder:
        os.environ["VAR_DIR"] = str(Path(folder) / "var")
        os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
        import django

        django.setup()
        report = run(args.campaigns, args.budget)
    report.update(
        budget=args.budget,
        strategy=os.environ.get("BENCH_STRATEGY", "judged"),
        calibration=CALIBRATION,
        first_seed=FIRST_SEED,
        seconds=time.time() - started,
        machine=platform.platform(),
    )
    report["summary"] = summary(report)
    settings = " ".join(
        f"{name}={os.environ[name]}" for name in ("BENCH_STRATEGY", "BENCH_FIRST_SEED") if name in os.environ
    )
    command = (
        (settings + " " if settings else "")
        + "python bench/bench_judged_app.py"
        + (
            ""
            if (args.campaigns, args.budget) == (400, 60)
            else f" --campaigns {args.campaigns} --budget {args.budget}"
        )
    )
    RESULTS_DIR.mkdir(parents=True, exist_ok=True)
    (RESULTS_DIR / "judged_app.json").write_text(json.dumps(report, indent=1) + "\n")
    text = markdown(report, command)
    (RESULTS_DIR / "judged_app.md").write_text("# The judged strategy through the app\n\n" + text)
    print(text)


if __name__ == "__main__":
    main()
