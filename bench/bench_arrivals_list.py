"""The arrivals list and one arrival's report as a release gate polls them, with many arrivals.

A campaign (``items``, DCG@10, 40 topics of 30 documents, 4 pooled runs, 120 labels judged)
gets ``--arrivals`` runs that arrive one after another, each with a top-up of 2 labels judged
at once (a busy release train); then ``GET /api/campaigns/{id}/arrivals/`` and ``GET
.../arrivals/{a}/`` are timed through Django's test client (the whole request: URL routing,
permissions, the summaries, JSON), ``--repeats`` times each, at 50, 100, ... arrivals.
Medians and the largest time. SQLite by default (the embedded default); ``--database-url
postgresql://...`` for PostgreSQL (an empty database the script migrates).

    python bench/bench_arrivals_list.py --arrivals 200 [--database-url postgresql://...]

Writes ``bench/results/arrivals_list[-postgresql].{json,md}``.
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
TOPICS, DOCUMENTS, POOLED = 40, 30, 4


def _run(name: str, rng: np.random.Generator, base: np.ndarray) -> io.BytesIO:
    noisy = base + rng.normal(scale=0.7, size=base.shape)
    order = np.argsort(-noisy, axis=1)
    lines = [
        f"q{topic} Q0 q{topic}-d{doc} {rank} {noisy[topic, doc]:.6f} {name}\n"
        for topic in range(TOPICS)
        for rank, doc in enumerate(order[topic], start=1)
    ]
    return io.BytesIO("".join(lines).encode())


def _grade(docno: str) -> int:
    return int(docno.rsplit("d", 1)[1]) % 3


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--arrivals", type=int, default=200)
    parser.add_argument("--step", type=int, default=50, help="time the requests every this many arrivals")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--database-url", default="")
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()

    with tempfile.TemporaryDirectory() as folder_name:
        django_for_bench(Path(folder_name), args.database_url, quiet=True)
        from django.db import connection
        from django.test import Client

        from graded.claims import task_next
        from graded.judging import task_answer
        from labeling.recompute import recompute
        from labeling.services.campaigns import (
            campaign_assessors_assign,
            campaign_create,
            campaign_start,
        )
        from operations.accounts import user_create
        from sampling import arrival_add
        from uploads.run_imports import runs_import

        rng = np.random.default_rng(args.seed)
        base = rng.normal(size=(TOPICS, DOCUMENTS))
        coordinator = user_create(creator=None, username="bench", password="bench-pass-9z!", role="admin")
        assessor = user_create(creator=None, username="judge", password="judge-pass-9z!", role="assessor")
        campaign = campaign_create(
            creator=coordinator,
            name="release train",
            metric="DCG@10",
            grades=["0", "1", "2"],
            strategy="items",
            budget=120,
            budget_unit="judgments",
            pool_depth=10,
            seed=args.seed,
        )
        runs_import(
            campaign=campaign, files=[(f"sys{n}.run", _run(f"sys{n}", rng, base)) for n in range(POOLED)]
        )
        campaign_assessors_assign(campaign=campaign, usernames=["judge"])
        campaign = campaign_start(campaign=campaign)

        def judge_all() -> None:
            while (task := task_next(campaign=campaign, assessor=assessor)) is not None:
                task_answer(task=task, assessor=assessor, grade=_grade(task.document.docno), seconds=2.0)
                recompute(campaign.pk)

        judge_all()
        client = Client()
        client.force_login(coordinator)
        rows = []
        add_seconds = []
        last = 0
        for number in range(1, args.arrivals + 1):
            started = time.perf_counter()
            arrival = arrival_add(
                campaign=campaign,
                files=[(f"rel{number}.run", _run(f"rel{number}", rng, base))],
                budget=2,
                reference="sys0",
                rule="fixed",
            )
            add_seconds.append(time.perf_counter() - started)
            judge_all()
            last = arrival.pk
            if number % args.step == 0 or number == args.arrivals:
                timings: dict[str, list[float]] = {"list": [], "one": []}
                for _ in range(args.repeats):
                    for name, url in (
                        ("list", f"/api/campaigns/{campaign.pk}/arrivals/"),
                        ("one", f"/api/campaigns/{campaign.pk}/arrivals/{last}/"),
                    ):
                        started = time.perf_counter()
                        answer = client.get(url)
                        timings[name].append(time.perf_counter() - started)
                        assert answer.status_code == 200, answer.content[:300]
                listed = len(client.get(f"/api/campaigns/{campaign.pk}/arrivals/").json())
                assert listed == number
                rows.append(
                    {
                        "arrivals": number,
                        "list_median_s": statistics.median(timings["list"]),
                        "list_max_s": max(timings["list"]),
                        "one_median_s": statistics.median(timings["one"]),
                        "one_max_s": max(timings["one"]),
                    }
                )
                print(json.dumps(rows[-1]), flush=True)
        vendor = connection.vendor

    result = {
        "database": vendor,
        "topics": TOPICS,
        "documents": DOCUMENTS,
        "pooled": POOLED,
        "repeats": args.repeats,
        "arrival_add_median_s": statistics.median(add_seconds),
        "rows": rows,
        "machine": f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}",
    }
    suffix = "" if vendor == "sqlite" else f"-{vendor}"
    RESULTS_DIR.mkdir(exist_ok=True)
    (RESULTS_DIR / f"arrivals_list{suffix}.json").write_text(json.dumps(result, indent=2) + "\n")
    lines = [
        f"# Arrivals list and one arrival's report ({vendor})",
        "",
        f"`python bench/bench_arrivals_list.py --arrivals {args.arrivals}"
        + (" --database-url postgresql://..." if vendor != "sqlite" else "")
        + f"`; {TOPICS} topics x {DOCUMENTS} documents, {POOLED} pooled runs, each arrival a top-up of 2 "
        f"labels judged at once; {args.repeats} requests per cell; {result['machine']}. Adding one "
        f"arrival (import, pool, verdict plan): median {result['arrival_add_median_s']:.2f} s.",
        "",
        "| arrivals | GET list: median | max | GET one: median | max |",
        "|---|---|---|---|---|",
        *(
            f"| {row['arrivals']} | {row['list_median_s']:.3f} s | {row['list_max_s']:.3f} s | "
            f"{row['one_median_s']:.3f} s | {row['one_max_s']:.3f} s |"
            for row in rows
        ),
    ]
    (RESULTS_DIR / f"arrivals_list{suffix}.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
