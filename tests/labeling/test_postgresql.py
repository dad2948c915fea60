"""The database tests again, on a throwaway PostgreSQL server."""

from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest

from tests.conftest import REPO_ROOT


@pytest.mark.servers
@pytest.mark.slow
def test_it_passes_the_database_tests_on_postgresql(postgres_url: str) -> None:
    env = {**os.environ, "DATABASE_URL": postgres_url}
    command = [
        sys.executable,
        "-m",
        "pytest",
        "tests/labeling",
        "tests/pairwise",
        "tests/sxs",
        "tests/training",
        "-q",
        "-p",
        "no:cacheprovider",
        "-m",
        "not servers and not slow",
    ]
    result = subprocess.run(command, cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stdout[-5000:] + result.stderr[-2000:]
    passed = re.search(r"(\d+) passed", result.stdout)
    # The whole database suite (races, double submits, permissions, imports, exports) ran.
    assert passed is not None and int(passed.group(1)) >= 150, result.stdout[-2000:]
    assert " failed" not in result.stdout and " skipped" not in result.stdout
