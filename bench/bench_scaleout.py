"""Scale-out that survives a lost node: two web nodes and two Celery workers on one PostgreSQL and
one Redis, assessors judging through the REST API, one web node killed and restarted, the worker
holding a recompute killed for good (the scenario of `tests/cluster.py`).

Runs it with the production settings (recomputes at least 10 s apart, a sweep every 5 s), and
again with the sweep switched off (LABELING_SWEEP_SECONDS far beyond the run: what the product
did before), and reports for each: judgments, tasks served twice, answers lost or stored twice,
recomputes and overlapping ones, and how long after the last answer the latest snapshot counted
every judgment.

Usage::

    .venv/bin/python bench/bench_scaleout.py                       # 50 assessors, 60 s, both variants
    .venv/bin/python bench/bench_scaleout.py --assessors 20 --seconds 30

Writes bench/results/scaleout.json and scaleout.md.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import tempfile
from dataclasses import asdict
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
RESULTS_DIR = REPO_ROOT / "bench" / "results"
VARIANTS = {
    "sweep every 5 s (default)": {},
    "no sweep (before)": {"LABELING_SWEEP_SECONDS": "100000"},
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--assessors", type=int, default=50)
    parser.add_argument("--seconds", type=float, default=60.0, help="judging time")
    parser.add_argument("--wait", type=float, default=90.0, help="how long to wait for a current snapshot")
    args = parser.parse_args()
    sys.path.insert(0, str(REPO_ROOT))
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    from tests.cluster import cluster_on, run_scenario
    from tests.servers import postgres_server, redis_server

    results = []
    with postgres_server() as postgres_url, redis_server() as redis_url:
        for name, settings in VARIANTS.items():
            with tempfile.TemporaryDirectory(prefix="bench-scaleout-") as folder:
                with cluster_on(postgres_url, redis_url, Path(folder), **settings) as cluster:
                    print(f"{name}: {args.assessors} assessors, {args.seconds:.0f} s ...", flush=True)
                    report = run_scenario(
                        cluster,
                        assessors=args.assessors,
                        topics=2000,
                        depth=20,
                        judging_seconds=args.seconds,
                        kill_web_at=args.seconds * 0.2,
                        restart_web_at=args.seconds * 0.3,
                        kill_worker_at=args.seconds * 0.4,
                        snapshot_seconds=args.wait,
                    )
            row = {"variant": name, **asdict(report)}
            row.pop("errors_logged")
            row["errors_logged_by"] = sorted(report.errors_logged)
            row["recompute_count"] = len(report.recomputes)
            row.pop("recomputes")
            shown = {key: value for key, value in row.items() if key != "snapshot_counts"}
            print(json.dumps(shown), flush=True)
            results.append(row)
    RESULTS_DIR.mkdir(exist_ok=True)
    meta = {"assessors": args.assessors, "seconds": args.seconds, "python": platform.python_version()}
    (RESULTS_DIR / "scaleout.json").write_text(json.dumps({"meta": meta, "results": results}, indent=2))
    lines = [
        f"Two web nodes, two workers, {args.assessors} assessors, {args.seconds:.0f} s; web node "
        f"killed at {args.seconds * 0.2:.0f} s and restarted at {args.seconds * 0.3:.0f} s, the worker "
        f"holding a recompute killed at {args.seconds * 0.4:.0f} s.",
        "",
        "| variant | judgments | served twice | lost / stored twice | recomputes (overlapping) | "
        "latest snapshot current after the last answer |",
        "|---|---:|---:|---:|---:|---|",
    ]
    for row in results:
        after = row["current_after"]
        current = (
            f"{after:.1f} s"
            if after is not None
            else f"not within {args.wait:.0f} s ({row['latest_snapshot']} of {row['judgments']} counted)"
        )
        lines.append(
            f"| {row['variant']} | {row['judgments']} | {len(row['served_twice'])} | "
            f"{row['acknowledged_not_stored']} / {row['stored_twice']} | "
            f"{row['recompute_count']} ({len(row['overlapping'])}) | {current} |"
        )
    (RESULTS_DIR / "scaleout.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
