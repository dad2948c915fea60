"""Parse and import time of big runs (`evaluate` against the other tools: bench_evaluate.py).

1. Parse and check: a synthetic run (seeded: T topics x 1,000 documents, random scores, one
   duplicate-free file) read by the block reader with the app's column limits, and by the
   line reader it replaces (1M lines only: it is slow).
2. Import: `run_imports.runs_import` of the same files into a fresh campaign, in a child process
   per database: SQLite (a file, WAL) and a throwaway PostgreSQL (`tests.servers`), the two
   interleaved (the machine's load moves both alike), with the ratio of their medians.

Usage::

    .venv/bin/python bench/bench_imports.py                   # 1M and 5M lines, 3 repeats
    .venv/bin/python bench/bench_imports.py --sizes 1 --repeat 1   # a quick look
    .venv/bin/python bench/bench_imports.py --sizes 1 --import-repeat 5 --only-imports

Writes bench/results/imports.json and imports.md (medians; imports-only.* with --only-imports).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
DATA = Path(os.environ.get("SHARED_DATA_DIR", ROOT.parent / "shared" / "data"))
RESULTS = ROOT / "bench" / "results"
DEPTH = 1000

IMPORT_CHILD = """
import json, sys, time, django
django.setup()
from django.core.management import call_command
call_command("migrate", verbosity=0)
from django.contrib.auth import get_user_model
from labeling.services import campaigns
from uploads import run_imports
user = get_user_model().objects.create_user(f"c{time.time_ns()}")
campaign = campaigns.campaign_create(creator=user, name="big", metric="DCG@10", budget=10)
started = time.perf_counter()
with open(sys.argv[1], "rb") as stream:
    report = run_imports.runs_import(campaign=campaign, files=[("big.run", stream)])
print(json.dumps({"seconds": time.perf_counter() - started, "lines": report.lines}))
"""


def synthetic_run(path: Path, topics: int, seed: int) -> int:
    """Write `topics` x DEPTH run lines with seeded random scores; returns the line count."""
    rng = np.random.default_rng(seed)
    with path.open("w") as out:
        for topic in range(topics):
            scores = np.sort(rng.random(DEPTH))[::-1] * 100
            docs = rng.choice(50 * DEPTH, size=DEPTH, replace=False)
            out.writelines(
                f"{topic} Q0 doc-{doc:06d} {rank} {score:.6f} synthetic\n"
                for rank, (doc, score) in enumerate(zip(docs, scores, strict=True), start=1)
            )
    return topics * DEPTH


def parse_seconds(path: Path, reader: str) -> float:
    """Seconds to parse and check `path` (nothing kept but the columns of one block)."""
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    import django

    django.setup()
    from estimation.formats.run_blocks import iter_run_blocks
    from estimation.formats.trec import iter_lines, iter_run
    from uploads.run_imports import APP_BLOCK_BYTES, LIMITS

    started = time.perf_counter()
    if reader == "block":
        with path.open("rb") as stream:
            lines = sum(
                len(block) for block in iter_run_blocks(stream, block_bytes=APP_BLOCK_BYTES, limits=LIMITS)
            )
    else:
        lines = sum(1 for _ in iter_run(iter_lines(path), str(path)))
    seconds = time.perf_counter() - started
    assert lines > 0
    return seconds


def import_seconds(path: Path, database_url: str, folder: Path) -> float:
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "config.settings",
        "PYTHONPATH": str(ROOT),
        "DATABASE_URL": database_url,
        "VAR_DIR": str(folder / "var"),
    }
    env.pop("REDIS_URL", None)
    result = subprocess.run(
        [sys.executable, "-c", IMPORT_CHILD, str(path)], env=env, cwd=ROOT, capture_output=True, text=True
    )
    if result.returncode != 0:
        raise RuntimeError(result.stderr[-3000:])
    return float(json.loads(result.stdout.strip().splitlines()[-1])["seconds"])


def fresh_postgres_database(url: str, name: str) -> str:
    import psycopg

    with psycopg.connect(url, autocommit=True) as connection:
        connection.execute(f'CREATE DATABASE "{name}"')
    return url.rsplit("/", 1)[0] + "/" + name


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--sizes", default="1,5", help="run sizes in millions of lines (default 1,5)")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--import-repeat", type=int, default=3, help="imports per size and database")
    parser.add_argument("--no-postgres", action="store_true")
    parser.add_argument("--only-imports", action="store_true", help="no parse or evaluate timings")
    args = parser.parse_args()
    results: dict[str, object] = {
        "machine": f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}",
        "repeat": args.repeat,
        "import_repeat": args.import_repeat,
    }
    rows: list[tuple[str, str, float, list[float]]] = []
    ratios: dict[str, float] = {}

    def record(what: str, where: str, samples: list[float]) -> None:
        median = statistics.median(samples)
        rows.append((what, where, median, samples))
        print(f"{what:<38} {where:<12} median {median:7.2f} s  {[round(s, 2) for s in samples]}", flush=True)

    from tests.servers import postgres_server

    with (
        tempfile.TemporaryDirectory() as scratch,
        postgres_server() if not args.no_postgres else _nothing() as postgres_url,
    ):
        folder = Path(scratch)
        for millions in [int(size) for size in args.sizes.split(",")]:
            path = folder / f"run-{millions}M.txt"
            lines = synthetic_run(path, topics=millions * 1000, seed=millions)
            label = f"{lines // 1_000_000}M lines"
            if not args.only_imports:
                record(
                    f"parse+check {label} (block reader)",
                    "-",
                    [parse_seconds(path, "block") for _ in range(args.repeat)],
                )
                if millions == 1:
                    record(f"parse+check {label} (line reader)", "-", [parse_seconds(path, "line")])
            imports: dict[str, list[float]] = {"SQLite": [], "PostgreSQL": []}
            for attempt in range(args.import_repeat):
                database = folder / f"db-{millions}-{attempt}.sqlite3"
                imports["SQLite"].append(import_seconds(path, f"sqlite:///{database}", folder))
                database.unlink()
                if postgres_url is not None:
                    url = fresh_postgres_database(postgres_url, f"bench_{millions}_{attempt}")
                    imports["PostgreSQL"].append(import_seconds(path, url, folder))
                print(
                    f"import {label}, run {attempt + 1}: "
                    + ", ".join(f"{where} {values[-1]:.2f} s" for where, values in imports.items() if values),
                    flush=True,
                )
            record(f"import {label}", "SQLite", imports["SQLite"])
            if imports["PostgreSQL"]:
                record(f"import {label}", "PostgreSQL", imports["PostgreSQL"])
                ratio = statistics.median(imports["PostgreSQL"]) / statistics.median(imports["SQLite"])
                ratios[label] = ratio
                print(f"import {label}: PostgreSQL / SQLite = {ratio:.2f} (medians)", flush=True)
            path.unlink()
    results["postgresql_over_sqlite"] = ratios
    results["rows"] = [
        {"what": what, "where": where, "median_seconds": median, "samples": samples}
        for what, where, median, samples in rows
    ]
    RESULTS.mkdir(exist_ok=True)
    # Imports alone go to a file of their own: the full file keeps its parse and evaluate rows.
    stem = "imports-only" if args.only_imports else "imports"
    (RESULTS / f"{stem}.json").write_text(json.dumps(results, indent=2) + "\n")
    lines = [
        "# Parse, import and evaluate times",
        "",
        f"Machine: {results['machine']}; parse: median of {args.repeat}; "
        f"imports: median of {args.import_repeat}, the databases interleaved; the line reader: one run.",
        "",
        "| what | database / tool | median (s) |",
        "|---|---|---|",
        *[f"| {what} | {where} | {median:.2f} |" for what, where, median, _ in rows],
        "",
        *[f"PostgreSQL / SQLite, import {label}: {ratio:.2f} (medians)" for label, ratio in ratios.items()],
        "",
    ]
    (RESULTS / f"{stem}.md").write_text("\n".join(lines))
    return 0


class _nothing:
    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> None:
        return None


if __name__ == "__main__":
    sys.exit(main())
