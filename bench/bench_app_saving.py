"""Active versus passive budget saving, measured through the app's own sampling services.

Real data: the MQ2008 runs of two learned rankers (RankBoost, ListNet) on all 470 topics,
pooled at depth 10, the MQ2008 qrels as the oracle (unjudged = 0), DCG@10 with gain 2^y - 1 on
the 0-2 scale; the budget unit is one judged document. Each simulated campaign goes through the
app's services exactly as a live one does, minus HTTP: `draws_top_up` draws from the stored q,
the oracle answers the open tasks, and `sampling_state_recompute` refits the label model (the
app's rank/score features, no LETOR features) and recomputes q every few rounds, as the worker
would. Estimates are read with `estimates_compute` after every round; the estimate at budget b
is the last one whose spending is <= b (all budgets of a campaign share its draws).

Goals: one system (RankBoost) and the difference RankBoost - ListNet. Strategies: passive
(topics uniformly, with replacement) and active. Campaigns are run round-robin over the four
(goal, strategy) cells until the time limit.

Usage::

    nice .venv/bin/python bench/bench_app_saving.py                # about 5 minutes
    .venv/bin/python bench/bench_app_saving.py --seconds 30        # a quick look

Writes bench/results/app_saving.json and app_saving.md.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

REPO_ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO_ROOT / "bench"))
from django_setup import django_for_bench  # noqa: E402

RESULTS_DIR = REPO_ROOT / "bench" / "results"
DATA = Path(os.environ.get("SHARED_DATA_DIR", REPO_ROOT.parent / "shared" / "data")) / "mq2008"
RUNS = ("RankBoost", "ListNet")
BUDGETS = (50, 100, 150, 200, 300)
PASSIVE_EXTRA = (400, 500)
REFIT_EVERY = 3


def _truth(metric_cutoff: int) -> dict[str, float]:
    from estimation.formats.trec import read_qrels, read_run
    from estimation.metrics.spec import Metric
    from estimation.metrics.values import evaluate_run

    qrels = read_qrels(DATA / "qrels.txt")
    metric = Metric("DCG", metric_cutoff, y_max=2)
    truth = {}
    for name in RUNS:
        run = read_run(DATA / "runs" / f"{name}.run")
        per_query = evaluate_run(qrels, run, metric)
        topics = sorted(set(run.rankings) & set(qrels))
        truth[name] = float(np.mean([per_query[qid] for qid in topics]))
    return truth


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=300.0)
    parser.add_argument("--name", default="app_saving")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory() as folder_name:
        django_for_bench(Path(folder_name))
        from django.utils import timezone

        from estimation.formats.trec import read_qrels
        from labeling.models import Campaign, Draw, Judgment, PoolItem, Task
        from labeling.services.campaigns import (
            campaign_assessors_assign,
            campaign_create,
            campaign_start,
        )
        from operations.accounts import user_create
        from sampling import SamplingState
        from sampling.draws import draws_top_up
        from sampling.estimates import estimates_compute
        from sampling.state import sampling_state_recompute
        from uploads.run_imports import runs_import

        qrels = read_qrels(DATA / "qrels.txt")
        admin = user_create(creator=None, username="bench", password="bench-pass-9z!", role="admin")
        truth = _truth(10)
        files = [(f"{name}.run", (DATA / "runs" / f"{name}.run").open("rb")) for name in RUNS]
        campaigns: dict[tuple[str, str], Campaign] = {}
        for goal in ("one", "difference"):
            for strategy in ("passive", "active"):
                campaign = campaign_create(
                    creator=admin,
                    name=f"{goal} {strategy}",
                    metric="DCG@10",
                    grades=["0", "1", "2"],
                    goal=goal,
                    strategy=strategy,
                    focus_systems=list(RUNS),
                    budget=max(BUDGETS),
                    budget_unit="judgments",
                )
                for _, stream in files:
                    stream.seek(0)
                runs_import(campaign=campaign, files=files)
                campaign_assessors_assign(campaign=campaign, usernames=["bench"])
                campaign_start(campaign=campaign)
                campaigns[(goal, strategy)] = campaign
        pool_topics = campaigns[("one", "passive")].pool_items.values("topic").distinct().count()
        pool_items = campaigns[("one", "passive")].pool_items.count()

        def simulate(campaign: Campaign, seed: int, goal: str, strategy: str) -> list[tuple[float, float]]:
            Judgment.objects.filter(campaign=campaign).delete()
            Draw.objects.filter(campaign=campaign).delete()
            SamplingState.objects.filter(campaign=campaign).delete()
            # The top-up reads coverage from the pool items' flags: a new campaign starts undrawn.
            PoolItem.objects.filter(campaign=campaign).update(drawn=False)
            top = max(BUDGETS) if strategy == "active" else max(PASSIVE_EXTRA)
            Campaign.objects.filter(pk=campaign.pk).update(
                seed=seed, status=Campaign.Status.RUNNING, blocked="", budget=top
            )
            campaign.refresh_from_db()
            trace: list[tuple[float, float]] = []
            for round_number in range(1, 10_000):
                draws_top_up(campaign_id=campaign.pk, target=1)
                tasks = list(
                    Task.objects.filter(campaign=campaign, answered_at__isnull=True).values_list(
                        "pk", "draw_id", "topic_id", "topic__qid", "document_id", "document__docno"
                    )
                )
                if not tasks:
                    break
                Judgment.objects.bulk_create(
                    [
                        Judgment(
                            campaign=campaign,
                            task_id=pk,
                            draw_id=draw,
                            topic_id=topic,
                            document_id=document,
                            assessor=admin,
                            grade=max(0, qrels.get(qid, {}).get(docno, 0)),
                            seconds=10.0,
                        )
                        for pk, draw, topic, qid, document, docno in tasks
                    ]
                )
                Task.objects.filter(pk__in=[task[0] for task in tasks]).update(
                    assessor=admin, answered_at=timezone.now()
                )
                result = estimates_compute(campaign)
                if goal == "one":
                    row = next(
                        r for r in result["systems"] if r["name"] == RUNS[0] and r["metric"] == "DCG@10"
                    )
                    error = abs(row["value"] - truth[RUNS[0]])
                else:
                    error = abs(result["difference"]["value"] - (truth[RUNS[0]] - truth[RUNS[1]]))
                trace.append((result["spent"], error))
                if strategy == "active" and round_number % REFIT_EVERY == 0:
                    sampling_state_recompute(campaign)
            return trace

        errors: dict[tuple[str, str], dict[int, list[float]]] = {
            cell: {b: [] for b in (*BUDGETS, *PASSIVE_EXTRA)} for cell in campaigns
        }
        started = time.monotonic()
        repetition = 0
        while time.monotonic() - started < args.seconds:
            for (goal, strategy), campaign in campaigns.items():
                trace = simulate(campaign, 5000 + repetition, goal, strategy)
                budgets = (*BUDGETS, *PASSIVE_EXTRA) if strategy == "passive" else BUDGETS
                for budget in budgets:
                    within = [error for spent, error in trace if spent <= budget]
                    if within:
                        errors[(goal, strategy)][budget].append(within[-1])
            repetition += 1
        elapsed = time.monotonic() - started

    def summary(values: list[float]) -> tuple[float, float]:
        array = np.asarray(values)
        return float(array.mean()), float(
            array.std(ddof=1) / np.sqrt(array.size)
        ) if array.size > 1 else float("nan")

    def passive_budget_for(goal: str, target: float) -> float | None:
        grid = sorted(b for b, v in errors[(goal, "passive")].items() if v)
        curve = [summary(errors[(goal, "passive")][b])[0] for b in grid]
        for (b0, e0), (b1, e1) in zip(
            zip(grid, curve, strict=True), zip(grid[1:], curve[1:], strict=True), strict=False
        ):
            if e0 >= target >= e1 and e0 > e1:
                # Interpolate log(MAE) against log(budget): MAE falls roughly like 1/sqrt(budget).
                t = (np.log(e0) - np.log(target)) / (np.log(e0) - np.log(e1))
                return float(np.exp(np.log(b0) + t * (np.log(b1) - np.log(b0))))
        return None

    table: dict[str, list[dict]] = {}
    for goal in ("one", "difference"):
        rows = []
        for budget in BUDGETS:
            passive, active = (summary(errors[(goal, s)][budget]) for s in ("passive", "active"))
            equivalent = passive_budget_for(goal, active[0])
            rows.append(
                {
                    "budget": budget,
                    "passive_mae": passive[0],
                    "passive_se": passive[1],
                    "active_mae": active[0],
                    "active_se": active[1],
                    "passive_budget_for_active_error": equivalent,
                    "saving": None if equivalent is None else 1 - budget / equivalent,
                }
            )
        table[goal] = rows
    result = {
        "data": "MQ2008 runs RankBoost, ListNet; qrels as oracle",
        "truth": truth,
        "pool_topics": pool_topics,
        "pool_items": pool_items,
        "repetitions": repetition,
        "seconds": elapsed,
        "tables": table,
        "machine": f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}",
    }
    RESULTS_DIR.mkdir(parents=True, exist_ok=True)
    (RESULTS_DIR / f"{args.name}.json").write_text(json.dumps(result, indent=2) + "\n")
    lines = [
        "# Active versus passive through the app's sampling services (MQ2008)",
        "",
        f"Runs {RUNS[0]} and {RUNS[1]} on {pool_topics} topics, pooled at depth 10 "
        f"({pool_items} pool items); DCG@10 (2^y - 1, grades 0-2); oracle = MQ2008 qrels; "
        "budget unit = one judged document. "
        f"Truth: {RUNS[0]} {truth[RUNS[0]]:.4f}, {RUNS[1]} {truth[RUNS[1]]:.4f}. "
        f"{repetition} campaigns per strategy and goal in {elapsed:.0f} s (all budgets of a campaign "
        f"share its draws); label model refitted every {REFIT_EVERY} topics; defensive mix 0.1. "
        "Mean absolute error ± standard error over campaigns; 'passive budget' = the budget at which "
        "passive reaches active's error (log-log interpolation of passive's curve, which runs to 500); "
        "saving = 1 - budget / passive budget.",
        "",
    ]
    for goal, title in (
        ("one", f"One system: {RUNS[0]}"),
        ("difference", f"Difference {RUNS[0]} - {RUNS[1]}"),
    ):
        lines += [
            f"## {title}",
            "",
            "| budget | passive MAE | active MAE | passive budget for active's MAE | saving |",
            "|---:|---:|---:|---:|---:|",
        ]
        for row in table[goal]:
            equivalent = (
                "-"
                if row["passive_budget_for_active_error"] is None
                else f"{row['passive_budget_for_active_error']:.0f}"
            )
            saving = "-" if row["saving"] is None else f"{100 * row['saving']:+.0f} %"
            lines.append(
                f"| {row['budget']} | {row['passive_mae']:.4f} ± {row['passive_se']:.4f} | "
                f"{row['active_mae']:.4f} ± {row['active_se']:.4f} | {equivalent} | {saving} |"
            )
        lines.append("")
    (RESULTS_DIR / f"{args.name}.md").write_text("\n".join(lines))
    print("\n".join(lines))


if __name__ == "__main__":
    main()
