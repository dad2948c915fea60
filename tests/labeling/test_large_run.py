"""A 400,000-line run imports in bounded memory (measured in a fresh process).

The import holds one batch and one query's lines whatever the run's length, so a run of 400,000
lines tests the bound as a million does, in less than half the time; holding the run itself
would take twice the bound (170 MB as lists of split fields, by tracemalloc).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO_ROOT
from tests.database_template import sqlite_database_from_template

TOPICS, DEPTH = 400, 1000

CHILD = """
import json, os, resource, sys
import django
django.setup()
from django.core.management import call_command
call_command("migrate", verbosity=0)
from labeling.services import campaigns
from uploads import run_imports
from labeling.models import PoolItem, RankingEntry
from django.contrib.auth import get_user_model
user = get_user_model().objects.create_user("c")
campaign = campaigns.campaign_create(creator=user, name="big", metric="DCG@10", budget=10)
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
with open(sys.argv[1], "rb") as stream:
    report = run_imports.runs_import(campaign=campaign, files=[("big.run", stream)])
after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(json.dumps({"before_kb": before, "after_kb": after, "lines": report.lines,
                  "entries": RankingEntry.objects.count(), "pool": PoolItem.objects.count()}))
"""


@pytest.mark.slow
def test_it_imports_a_long_run_in_bounded_memory(tmp_path: Path) -> None:
    run = tmp_path / "big.run"
    with run.open("w") as out:
        for topic in range(TOPICS):
            out.writelines(
                f"{topic} Q0 doc-{topic}-{rank:04d} {rank} {DEPTH - rank}.25 big\n"
                for rank in range(1, DEPTH + 1)
            )
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "config.settings",
        "PYTHONPATH": str(REPO_ROOT),
        "DATABASE_URL": f"sqlite:///{tmp_path / 'big.sqlite3'}",
        "VAR_DIR": str(tmp_path / "var"),
    }
    env.pop("REDIS_URL", None)
    sqlite_database_from_template(tmp_path / "big.sqlite3")
    result = subprocess.run(
        [sys.executable, "-c", CHILD, str(run)],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        cwd=REPO_ROOT,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    measured = json.loads(result.stdout.strip().splitlines()[-1])
    assert measured["lines"] == measured["entries"] == TOPICS * DEPTH
    assert measured["pool"] == TOPICS * 10
    growth_mb = (measured["after_kb"] - measured["before_kb"]) / 1024
    # Holding the run (or a per-line index of it) would take several hundred MB; a bounded
    # import holds one batch and one query's lines.
    assert growth_mb < 80, f"peak memory grew by {growth_mb:.0f} MB during the import"
    print(f"peak memory grew by {growth_mb:.0f} MB importing {TOPICS * DEPTH} lines")
