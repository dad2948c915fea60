"""Assessors' latency while a large run is imported into another campaign (the write lock).

The scenario of tests/labeling/test_import_while_judging.py with more lines: the importer and
two assessors are processes of their own calling the services, on SQLite (the embedded default)
or, with --database-url, on a PostgreSQL server. Prints the import's time and the assessors'
request latencies during it (p95, max), any error, and how much the importing process's peak
memory grew (tests/labeling/test_large_run.py bounds it at 80 MB on 400,000 lines).

Usage::

    .venv/bin/python bench/bench_import_lock.py                   # 1,000,000 lines on SQLite
    .venv/bin/python -m tests.servers postgresql -- sh -c \\
        '.venv/bin/python bench/bench_import_lock.py --database-url "$DATABASE_URL"'
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
    parser.add_argument("--topics", type=int, default=1000, help="1,000 lines each (default 1,000)")
    parser.add_argument("--database-url", default="", help="default: a new SQLite file")
    arguments = parser.parse_args()
    from tests.labeling.test_import_while_judging import import_while_judging

    with tempfile.TemporaryDirectory() as folder:
        url = arguments.database_url or f"sqlite:///{Path(folder) / 'db.sqlite3'}"
        seen = import_while_judging(Path(folder), url, arguments.topics)
    seen["database"] = url.split(":", 1)[0]
    print(json.dumps(seen, indent=1))


if __name__ == "__main__":
    main()
