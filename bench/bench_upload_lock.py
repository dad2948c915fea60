"""Assessors' latency while a coordinator uploads a large judge label file (the write lock).

The scenario of tests/labeling/test_upload_while_judging.py with more lines: gunicorn with the
production settings on the embedded default (SQLite, IMMEDIATE transactions), assessor threads
answering through the API with token auth, one JSONL label upload meanwhile. Prints the upload
time and the assessors' request latencies during it (median, p95, max) and any 5xx.

Usage::

    .venv/bin/python bench/bench_upload_lock.py                  # 1,000,000 lines, 3 assessors
    .venv/bin/python bench/bench_upload_lock.py --lines 200000 --workers 2
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lines", type=int, default=1_000_000)
    parser.add_argument("--assessors", type=int, default=3)
    parser.add_argument(
        "--workers", type=int, default=1, help="gunicorn processes (1: every assessor shares the upload's)"
    )
    arguments = parser.parse_args()
    from tests.labeling.test_upload_while_judging import upload_while_judging

    with tempfile.TemporaryDirectory() as folder:
        seen = upload_while_judging(Path(folder), arguments.lines, arguments.assessors, arguments.workers)
    summary = seen.summary()
    summary["lines"] = arguments.lines
    summary["workers"] = arguments.workers
    summary["upload_status"] = seen.upload_status
    summary["server_errors"] = sum(status >= 500 for status in seen.statuses)
    print(json.dumps(summary, indent=1))


if __name__ == "__main__":
    main()
