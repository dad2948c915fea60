"""A 250,000-line run imports into one campaign while two assessors judge in another: no
error, and their requests stay fast (p95 under 500 ms), on SQLite and on PostgreSQL.

Every batch of the import holds the write lock alike, so the bound is tested as well by a
quarter of a million lines as by a million: `bench/bench_import_lock.py` runs the million.

Every part is a process of its own, as in production (the web server's workers and the
Celery worker that imports): the importer, and one process per assessor calling the services
a `/next/` and an `/answer/` request call.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tests.conftest import REPO_ROOT
from tests.database_template import sqlite_database_from_template

# 150,000 lines: long enough for dozens of answers during the import (the test asserts more than
# 10 per assessor); bench/bench_import_lock.py runs a million.
TEST_TOPICS, DEPTH = 150, 1000
P95_SECONDS = 0.5

SETUP = """
import json, django
django.setup()
from django.core.management import call_command
call_command("migrate", verbosity=0)
import io
from labeling.services import campaigns
from operations.accounts import user_create
from uploads import run_imports
coordinator = user_create(creator=None, username="carl", password="pw-pw-pw-pw", role="coordinator")
for name in ("alice", "bob"):
    user_create(creator=None, username=name, password="pw-pw-pw-pw", role="assessor")
judged = campaigns.campaign_create(creator=coordinator, name="judged", metric="DCG@10",
                                  grades=["Bad", "Fair", "Good"], budget=100000, budget_unit="judgments")
for tag in ("a", "b"):
    run = "".join(f"{t} Q0 d{t}-{r} {r} {100 - r} {tag}\\n" for t in range(40) for r in range(60))
    run_imports.runs_import(campaign=judged, files=[(f"{tag}.run", io.BytesIO(run.encode()))])
campaigns.campaign_assessors_assign(campaign=judged, usernames=["alice", "bob"])
campaigns.campaign_start(campaign=judged)
big = campaigns.campaign_create(creator=coordinator, name="big", metric="DCG@10", budget=10)
print(json.dumps({"judged": judged.pk, "big": big.pk}))
"""

IMPORTER = """
import json, resource, sys, time, django
django.setup()
from labeling.services import campaigns
from operations.accounts import user_create
from uploads import run_imports
from labeling.models import Campaign, RankingEntry
campaign = Campaign.objects.get(pk=int(sys.argv[1]))
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
started = time.perf_counter()
with open(sys.argv[2], "rb") as stream:
    report = run_imports.runs_import(campaign=campaign, files=[("big.run", stream)])
print(json.dumps({"seconds": time.perf_counter() - started, "lines": report.lines,
                  "peak_growth_mb": (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) / 1024,
                  "entries": RankingEntry.objects.filter(system__campaign=campaign).count()}))
"""

JUDGE = """
import json, os, sys, time, traceback, django
django.setup()
from django.contrib.auth import get_user_model
from graded import claims, judging
from labeling.models import Campaign
campaign = Campaign.objects.get(pk=int(sys.argv[1]))
user = get_user_model().objects.get(username=sys.argv[2])
stop, report = sys.argv[3], sys.argv[4]
durations, errors, index = [], [], 0
while not os.path.exists(stop):
    try:
        clock = time.perf_counter()
        task = claims.task_next(campaign=campaign, assessor=user)
        durations.append(time.perf_counter() - clock)
        if task is None:
            time.sleep(0.05)
            continue
        clock = time.perf_counter()
        judging.task_answer(task=task, assessor=user, grade=index % 3, seconds=1.0)
        durations.append(time.perf_counter() - clock)
        index += 1
    except Exception:
        errors.append(traceback.format_exc(limit=3))
    time.sleep(0.02)
open(report, "w").write(json.dumps({"durations": durations, "errors": errors, "answers": index}))
"""


def _run_file(path: Path, topics: int) -> None:
    with path.open("w") as out:
        for topic in range(topics):
            out.writelines(
                f"{topic} Q0 doc-{topic}-{rank:04d} {rank} {DEPTH - rank}.25 big\n"
                for rank in range(1, DEPTH + 1)
            )


def _child(code: str, *args: str, env: dict[str, str]) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-c", code, *args],
        env=env,
        cwd=REPO_ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def import_while_judging(tmp_path: Path, database_url: str, topics: int) -> dict[str, Any]:
    """Import a run of `topics` x 1,000 lines while two assessor processes judge; what they saw:
    the import's report, every request's duration and any error."""
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "config.settings",
        "PYTHONPATH": str(REPO_ROOT),
        "DATABASE_URL": database_url,
        "VAR_DIR": str(tmp_path / "var"),
    }
    env.pop("REDIS_URL", None)
    if database_url.startswith("sqlite:///"):
        sqlite_database_from_template(Path(database_url.removeprefix("sqlite:///")))
    setup = subprocess.run(
        [sys.executable, "-c", SETUP], env=env, cwd=REPO_ROOT, capture_output=True, text=True, timeout=120
    )
    assert setup.returncode == 0, setup.stderr[-3000:]
    ids = json.loads(setup.stdout.strip().splitlines()[-1])
    run = tmp_path / "big.run"
    _run_file(run, topics)
    stop = tmp_path / "stop"
    reports = [tmp_path / "alice.json", tmp_path / "bob.json"]
    judges = [
        _child(JUDGE, str(ids["judged"]), name, str(stop), str(report), env=env)
        for name, report in zip(("alice", "bob"), reports, strict=True)
    ]
    try:
        time.sleep(3)  # the judges are up and judging before the import starts
        importer = _child(IMPORTER, str(ids["big"]), str(run), env=env)
        out, err = importer.communicate(timeout=240)
    finally:
        stop.touch()
        for judge in judges:
            judge.communicate(timeout=60)
    assert importer.returncode == 0, err[-3000:]
    seen: dict[str, Any] = json.loads(out.strip().splitlines()[-1])
    durations: list[float] = []
    seen["errors"], seen["answers"] = [], []
    for report in reports:
        measured = json.loads(report.read_text())
        seen["errors"] += measured["errors"]
        seen["answers"].append(measured["answers"])
        durations.extend(measured["durations"])
    seen["requests"] = len(durations)
    seen["p95_ms"] = 1000 * float(np.percentile(durations, 95))
    seen["max_ms"] = 1000 * max(durations)
    return seen


def _assert_responsive(seen: dict[str, Any], topics: int) -> None:
    assert seen["lines"] == seen["entries"] == topics * DEPTH
    assert seen["errors"] == []
    assert min(seen["answers"]) > 10, seen
    p95 = seen["p95_ms"]
    assert p95 < 1000 * P95_SECONDS, f"p95 of the assessors' requests {p95:.0f} ms during the import"


@pytest.mark.slow
@pytest.mark.alone
def test_it_keeps_judging_responsive_during_a_big_import_on_sqlite(tmp_path: Path) -> None:
    _assert_responsive(
        import_while_judging(tmp_path, f"sqlite:///{tmp_path / 'db.sqlite3'}", TEST_TOPICS), TEST_TOPICS
    )


@pytest.mark.slow
@pytest.mark.servers
@pytest.mark.alone
def test_it_keeps_judging_responsive_during_a_big_import_on_postgresql(
    tmp_path: Path, postgres_url: str
) -> None:
    _assert_responsive(import_while_judging(tmp_path, postgres_url, TEST_TOPICS), TEST_TOPICS)
