"""`make test`: the suite's three parts, arranged on the two cores (docs/operations.md, "How
long it takes").

1. Everything but the tests marked `alone`, on the embedded SQLite, over TEST_PROCESSES processes.
2. The database-specific tests again (marked `postgresql`) on a throwaway PostgreSQL server over
   POSTGRESQL_PROCESSES, **beside part 3** at the lowest CPU and disk priority; its log is printed
   after part 3 and its failure fails the suite.
3. The `alone` tests one at a time (they assert wall-clock bounds over processes of their own).

The PostgreSQL server starts before part 1, and its migrated template database (`tests.
database_template`) is made then, at the lowest priority, by one small database test: part 1
spends its first seconds migrating its own SQLite template on one core, and the other core does
this. Part 2 then starts on a ready template instead of migrating (about 13 s of CPU) while part
3 runs. A failed early template is no failure: part 2 makes it as before.

    python -m tests.suite          # what `make test` runs after installing
"""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tests.conftest import POSTGRESQL_PART, REPO_ROOT
from tests.servers import _stop, postgres_server

# At the lowest CPU and disk priority: what runs beside the timed parts takes only idle time.
LOWEST_PRIORITY = ("ionice", "-c", "3", "nice", "-n", "19")
# The test that makes the PostgreSQL template early (any test that uses the database would).
TEMPLATE_TEST = (
    "tests/labeling/test_postgresql.py::test_the_test_database_is_migrated_to_the_latest_migrations"
)
POSTGRESQL_SELECTION = "postgresql and not servers and not slow and not alone"


@dataclass(frozen=True)
class Part:
    """One pytest run of the suite; `extra_env` on top of the environment (None: removed)."""

    arguments: tuple[str, ...]
    low_priority: bool = False
    extra_env: dict[str, str | None] = field(default_factory=dict)
    log: Path | None = None

    def command(self, python: str) -> list[str]:
        prefix = list(LOWEST_PRIORITY) if self.low_priority else []
        return [*prefix, python, "-m", "pytest", *self.arguments]

    def environment(self, base: dict[str, str]) -> dict[str, str]:
        merged = dict(base)
        for name, value in self.extra_env.items():
            if value is None:
                merged.pop(name, None)
            else:
                merged[name] = value
        return merged


@dataclass(frozen=True)
class Plan:
    template: Part
    first: Part
    database: Part
    alone: Part


def suite_plan(database_url: str, processes: str, postgresql_processes: str, var: Path) -> Plan:
    """The four pytest runs; `database_url` is the throwaway PostgreSQL server's."""
    on_postgresql = {"DATABASE_URL": database_url}
    return Plan(
        template=Part(
            ("-q", "-p", "no:cacheprovider", TEMPLATE_TEST),
            low_priority=True,
            extra_env=on_postgresql,
            log=var / "test-postgresql-template.log",
        ),
        first=Part(("-n", processes, "--dist", "worksteal", "-m", "not alone", "--durations=25")),
        database=Part(
            (
                "-n",
                postgresql_processes,
                "--dist",
                "worksteal",
                "-m",
                POSTGRESQL_SELECTION,
                "--durations=10",
                "tests",
            ),
            low_priority=True,
            extra_env={**on_postgresql, "TEST_PART": POSTGRESQL_PART},
            log=var / "test-postgresql.log",
        ),
        alone=Part(("-m", "alone", "--durations=5")),
    )


def _start(part: Part, python: str) -> subprocess.Popen[bytes]:
    assert part.log is not None
    with open(part.log, "wb") as log:
        return subprocess.Popen(
            part.command(python),
            cwd=REPO_ROOT,
            env=part.environment(dict(os.environ)),
            stdout=log,
            stderr=log,
        )


def _run(part: Part, python: str) -> int:
    return subprocess.run(
        part.command(python), cwd=REPO_ROOT, env=part.environment(dict(os.environ))
    ).returncode


def main() -> int:
    python = sys.executable
    var = REPO_ROOT / "var"
    var.mkdir(exist_ok=True)
    processes = os.environ.get("TEST_PROCESSES", "4")
    postgresql_processes = os.environ.get("POSTGRESQL_PROCESSES", "2")
    try:
        # The server at the lowest priority too: in part 2 it serves the tests that run beside part 3.
        with postgres_server(prefix=LOWEST_PRIORITY) as url:
            plan = suite_plan(url, processes, postgresql_processes, var)
            template = _start(plan.template, python)
            try:
                first = _run(plan.first, python)
            finally:
                if template.wait() != 0:
                    print(
                        f"(the early PostgreSQL template was not made; part 2 makes it: {plan.template.log})"
                    )
            if first != 0:
                return first
            database = _start(plan.database, python)
            try:
                alone = _run(plan.alone, python)
                database_status = database.wait()
            finally:
                _stop(database)
            print("--- the PostgreSQL part (ran beside the alone part, at the lowest priority):", flush=True)
            assert plan.database.log is not None
            sys.stdout.write(plan.database.log.read_text(errors="replace"))
            return 0 if alone == 0 and database_status == 0 else 1
    except (pytest.skip.Exception, pytest.fail.Exception) as missing:
        # No PostgreSQL binaries (make test installs them first): say so; under CI it fails.
        print(f"the suite needs PostgreSQL: {missing.msg}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
