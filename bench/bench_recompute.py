"""Recompute time after one new judgment, for a campaign of 5,000 topics x 100 documents x 3 systems.

Builds the campaign in a throwaway SQLite database (synthetic runs: three systems ranking the
same 100 documents per topic in different orders; document lengths 50-5,000 words), starts it
with the active strategy (leaderboard of the three systems, DCG@10, pool depth 100), judges a
few hundred items, then repeats: one assessor judgment through `task_answer`, followed by the
whole recompute pipeline (`labeling.recompute.recompute`: refit theta and costs, recompute q over the pool,
top up the draws, store an estimate snapshot). Reports the median of the recomputes and the
time of each stage, measured on the same state.

Usage::

    nice .venv/bin/python bench/bench_recompute.py              # 5000 x 100 x 3, 7 recomputes
    .venv/bin/python bench/bench_recompute.py --topics 500      # a quick look

Writes bench/results/recompute.json and recompute.md.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

REPO_ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO_ROOT / "bench"))
from django_setup import django_for_bench  # noqa: E402

RESULTS_DIR = REPO_ROOT / "bench" / "results"


def _runs(topics: int, documents: int, systems: int, seed: int) -> list[tuple[str, io.BytesIO]]:
    rng = np.random.default_rng(seed)
    files = []
    base_scores = rng.normal(size=(topics, documents))
    for system in range(systems):
        noisy = base_scores + rng.normal(scale=0.7, size=base_scores.shape)
        order = np.argsort(-noisy, axis=1)
        lines = []
        for topic in range(topics):
            for rank, doc in enumerate(order[topic], start=1):
                lines.append(f"q{topic} Q0 q{topic}-d{doc} {rank} {noisy[topic, doc]:.6f} sys{system}\n")
        files.append((f"sys{system}.run", io.BytesIO("".join(lines).encode())))
    return files


def _timed(function, *args, **kwargs):  # type: ignore[no-untyped-def]
    started = time.perf_counter()
    result = function(*args, **kwargs)
    return result, time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--topics", type=int, default=5000)
    parser.add_argument("--documents", type=int, default=100)
    parser.add_argument("--systems", type=int, default=3)
    parser.add_argument("--judged", type=int, default=300, help="judgments before the timed recomputes")
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--strategy", default="active")
    parser.add_argument("--name", default="recompute")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory() as folder_name:
        folder = Path(folder_name)
        django_for_bench(folder)
        from django.conf import settings
        from django.db import connection

        from graded.claims import task_next
        from graded.judging import task_answer
        from labeling.metric import campaign_metric
        from labeling.models import Campaign, Document
        from labeling.recompute import recompute
        from labeling.services.campaigns import (
            campaign_assessors_assign,
            campaign_create,
            campaign_start,
        )
        from operations.accounts import user_create
        from sampling.draws import draws_top_up
        from sampling.estimates import snapshot_record
        from sampling.focus import focus_indices
        from sampling.label_model import (
            cost_model_fit,
            item_features,
            judged_grades,
            label_model_fit,
        )
        from sampling.pool_arrays import pool_arrays_build, pool_arrays_for, pool_arrays_forget
        from sampling.state import campaign_pool, sampling_state_recompute
        from sampling.strategies import strategy_for
        from uploads.run_imports import runs_import

        admin = user_create(creator=None, username="bench", password="bench-pass-9z!", role="admin")
        campaign = campaign_create(
            creator=admin,
            name="recompute",
            metric="DCG@10",
            grades=["0", "1", "2", "3"],
            goal="leaderboard",
            goal_k=args.systems,
            strategy=args.strategy,
            pool_depth=args.documents,
            budget=settings.LABELING_MAX_BUDGET,  # no limit within the bench: the operator ceiling
            budget_unit="judgments",
            seed=7,
        )
        setup: dict[str, float] = {}
        _, setup["import_runs_s"] = _timed(
            runs_import, campaign=campaign, files=_runs(args.topics, args.documents, args.systems, 1)
        )
        with connection.cursor() as cursor:
            cursor.execute(
                "UPDATE labeling_document SET length = 50 + abs(random()) %% 4950 WHERE campaign_id = %s",
                [campaign.pk],
            )
        Campaign.objects.filter(pk=campaign.pk).update(pool_version=campaign.pool_version + 1)
        campaign.refresh_from_db()
        _, setup["build_pool_arrays_s"] = _timed(pool_arrays_for, campaign)
        campaign_assessors_assign(campaign=campaign, usernames=["bench"])
        campaign = campaign_start(campaign=campaign)
        setup["pool_items"] = float(campaign.pool_items.count())
        rng = np.random.default_rng(3)
        for _ in range(args.judged):
            task = task_next(campaign=campaign, assessor=admin)
            task_answer(
                task=task, assessor=admin, grade=int(rng.integers(0, 4)), seconds=float(rng.uniform(5, 60))
            )
        recompute(campaign.pk)

        recomputes = []
        for _ in range(args.repeats):
            task = task_next(campaign=campaign, assessor=admin)
            task_answer(task=task, assessor=admin, grade=int(rng.integers(0, 4)), seconds=20.0)
            _, seconds = _timed(recompute, campaign.pk)
            recomputes.append(seconds)
        _, idle = _timed(recompute, campaign.pk)

        # The stages, each timed on the same state (the worker runs them in this order).
        campaign.refresh_from_db()
        arrays = pool_arrays_for(campaign)
        metric = campaign_metric(campaign)
        stages: dict[str, float] = {}
        _, stages["pool arrays (cached in memory)"] = _timed(pool_arrays_for, campaign)
        pool_arrays_forget()
        _, stages["pool arrays from the disk cache (first recompute of a worker)"] = _timed(
            pool_arrays_for, campaign
        )
        _, stages["pool arrays from the database (after an import only)"] = _timed(
            pool_arrays_build, campaign
        )
        grades, stages["load judgments"] = _timed(judged_grades, campaign, arrays)
        features, stages["features"] = _timed(item_features, arrays, metric.cutoff)
        _, stages["label model fit + theta"] = _timed(label_model_fit, campaign, arrays, grades, features)
        _, stages["cost model"] = _timed(cost_model_fit, campaign, arrays)
        pool, _, _ = campaign_pool(campaign, arrays)
        strategy = strategy_for(campaign)
        focus = focus_indices(campaign, arrays)
        _, stages["sampling distribution q"] = _timed(strategy.distribution, campaign, pool, metric, focus)
        task = task_next(campaign=campaign, assessor=admin)
        task_answer(task=task, assessor=admin, grade=1, seconds=20.0)
        _, stages["whole sampling state recompute (incl. storing q)"] = _timed(
            sampling_state_recompute, campaign
        )
        _, stages["draws top-up"] = _timed(draws_top_up, campaign_id=campaign.pk)
        _, stages["estimates + snapshot"] = _timed(snapshot_record, campaign)
        judgments = campaign.judgments.count()
        lengths_known = Document.objects.filter(campaign=campaign, length__isnull=False).count()

    result = {
        "topics": args.topics,
        "documents_per_topic": args.documents,
        "systems": args.systems,
        "strategy": args.strategy,
        "pool_items": setup["pool_items"],
        "judgments_before": judgments,
        "documents_with_length": lengths_known,
        "recompute_seconds": recomputes,
        "recompute_median_seconds": statistics.median(recomputes),
        "recompute_without_change_seconds": idle,
        "stages_seconds": stages,
        "setup_seconds": {k: v for k, v in setup.items() if k.endswith("_s")},
        "machine": f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}",
    }
    RESULTS_DIR.mkdir(parents=True, exist_ok=True)
    (RESULTS_DIR / f"{args.name}.json").write_text(json.dumps(result, indent=2) + "\n")
    lines = [
        f"# Recompute after one judgment: {args.topics} topics x {args.documents} documents "
        f"x {args.systems} systems",
        "",
        f"Strategy {args.strategy} (leaderboard of {args.systems}, DCG@10, pool depth {args.documents}); "
        f"{int(setup['pool_items'])} pool items; {judgments} judgments stored; SQLite; {result['machine']}.",
        "",
        f"**Median recompute after one new judgment: {result['recompute_median_seconds']:.2f} s** "
        f"(all {len(recomputes)}: {', '.join(f'{s:.2f}' for s in recomputes)} s; target <= 2 s). "
        f"A recompute with nothing new: {idle:.3f} s (the fingerprints match, nothing is recomputed).",
        "",
        "| stage | seconds |",
        "|---|---:|",
        *[f"| {name} | {seconds:.3f} |" for name, seconds in stages.items()],
        "",
        f"Setup (not part of a recompute): importing the runs {setup['import_runs_s']:.1f} s, "
        f"building the pool arrays once {setup['build_pool_arrays_s']:.1f} s "
        "(then cached on disk and in memory).",
        "",
    ]
    (RESULTS_DIR / f"{args.name}.md").write_text("\n".join(lines))
    print("\n".join(lines))


if __name__ == "__main__":
    main()
