"""`make test` runs the database-specific tests again on a throwaway PostgreSQL server, spread over
its processes, and that part fails when it skipped a test, ran too few or ran on another database."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import POSTGRESQL_PART_MINIMUM, REPO_ROOT, postgresql_part_problems
from tests.suite import TEMPLATE_TEST, suite_plan

URL = "postgresql://postgres@127.0.0.1:5999/postgres"


def test_it_counts_a_clean_run_of_the_database_tests_on_postgresql() -> None:
    assert postgresql_part_problems(URL, {"passed": 220, "skipped": 0}) == []


@pytest.mark.parametrize(
    ("database_url", "counts", "problem"),
    [
        (URL, {"passed": 0}, "only 0 tests passed"),
        (URL, {"passed": POSTGRESQL_PART_MINIMUM - 1}, f"only {POSTGRESQL_PART_MINIMUM - 1} tests passed"),
        (URL, {"passed": 220, "skipped": 1}, "1 skipped"),
        (URL, {"passed": 219, "failed": 1}, "1 failed"),
        (URL, {"passed": 220, "error": 2}, "2 error"),
        ("sqlite:///var/db.sqlite3", {"passed": 220}, "not a PostgreSQL server"),
        ("", {"passed": 220}, "not a PostgreSQL server"),
    ],
    ids=["nothing", "too-few", "skipped", "failed", "error", "sqlite", "unset"],
)
def test_it_does_not_count_a_part_that_ran_too_little_or_skipped(
    database_url: str, counts: dict[str, int], problem: str
) -> None:
    problems = postgresql_part_problems(database_url, counts)
    assert any(problem in line for line in problems), problems


def test_the_postgresql_part_fails_when_it_ran_too_few_tests() -> None:
    # One passing test in a part that claims to be the PostgreSQL one: pytest must exit 1.
    selected = f"{__file__}::test_it_counts_a_clean_run_of_the_database_tests_on_postgresql"
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", selected],
        cwd=REPO_ROOT,
        env={**os.environ, "TEST_PART": "postgresql", "DATABASE_URL": URL},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 1, result.stdout[-3000:] + result.stderr[-2000:]
    assert (
        "1 passed" in result.stdout
        and "the PostgreSQL part does not count: only 1 tests passed" in result.stdout
    )


def test_make_test_runs_the_database_specific_tests_on_postgresql_over_its_processes(tmp_path: Path) -> None:
    dry = subprocess.run(["make", "-n", "test"], cwd=REPO_ROOT, capture_output=True, text=True, timeout=60)
    assert dry.returncode == 0, dry.stderr
    assert ".ci/system-packages" in dry.stdout  # the Debian packages come first
    assert "-m tests.suite" in dry.stdout
    plan = suite_plan(URL, "4", "2", tmp_path)
    database = plan.database.command("python")
    # On the server, over its processes, beside the alone part at the lowest priority.
    assert database[:6] == ["ionice", "-c", "3", "nice", "-n", "19"] and "-n" in database
    assert "postgresql and not servers and not slow and not alone" in database and database[-1] == "tests"
    environment = plan.database.environment({"DATABASE_URL": "sqlite:///x"})
    assert environment["DATABASE_URL"] == URL and environment["TEST_PART"] == "postgresql"
    # Part 1 stays on the embedded default; the early template is made on the server.
    assert plan.first.environment({}) == {} and "not alone" in plan.first.command("python")
    assert plan.template.environment({})["DATABASE_URL"] == URL and plan.template.low_priority
    assert "-m" in plan.alone.command("python") and "alone" in plan.alone.command("python")
    assert TEMPLATE_TEST.endswith("::" + test_the_test_database_is_migrated_to_the_latest_migrations.__name__)


@pytest.mark.django_db
def test_the_test_database_is_migrated_to_the_latest_migrations() -> None:
    """Every migration of every app applied (also the test `tests.suite` runs first on the
    PostgreSQL server, which makes its migrated template)."""
    from django.db import connection
    from django.db.migrations.executor import MigrationExecutor

    executor = MigrationExecutor(connection)
    assert executor.migration_plan(executor.loader.graph.leaf_nodes()) == []
    assert executor.loader.applied_migrations


@pytest.mark.servers
def test_it_runs_a_command_beside_a_throwaway_postgresql_server() -> None:
    connect = "import os, psycopg; psycopg.connect(os.environ['DATABASE_URL']).close(); print('connected')"
    result = subprocess.run(
        [sys.executable, "-m", "tests.servers", "postgresql", "--", sys.executable, "-c", connect],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "connected" in result.stdout
    failing = subprocess.run(
        [
            sys.executable,
            "-m",
            "tests.servers",
            "postgresql",
            "--",
            sys.executable,
            "-c",
            "raise SystemExit(3)",
        ],
        cwd=REPO_ROOT,
        capture_output=True,
        timeout=120,
    )
    assert failing.returncode == 3  # the command's own status
