"""Shared fixtures (where the real public data lives, the fast password hasher) and the check
that `make test`'s PostgreSQL part ran the database tests."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parent.parent
# The real relevance data sits beside the repository (never copied into it).
SHARED_DATA = Path(os.environ.get("SHARED_DATA_DIR", REPO_ROOT.parent / "shared" / "data"))


# `make test` runs its PostgreSQL part with TEST_PART=postgresql (see the Makefile).
POSTGRESQL_PART = "postgresql"
# About 220 tests are marked `postgresql`; far fewer passing means the selection broke.
POSTGRESQL_PART_MINIMUM = 180


def postgresql_part_problems(database_url: str, counts: dict[str, int]) -> list[str]:
    """Why the PostgreSQL part does not count as a run of the database tests on PostgreSQL:
    another database, too few tests passed, or any skipped, failed or in error."""
    problems = []
    if not database_url.startswith(("postgres://", "postgresql://")):
        problems.append(f"DATABASE_URL is not a PostgreSQL server: {database_url!r}")
    if counts.get("passed", 0) < POSTGRESQL_PART_MINIMUM:
        problems.append(
            f"only {counts.get('passed', 0)} tests passed (at least {POSTGRESQL_PART_MINIMUM} expected)"
        )
    problems += [
        f"{counts[outcome]} {outcome}" for outcome in ("skipped", "failed", "error") if counts.get(outcome)
    ]
    return problems


def pytest_sessionfinish(session: pytest.Session) -> None:
    """Fail the PostgreSQL part when it ran on another database, skipped or ran too little (in
    the controlling process; with xdist the workers' outcomes are reported to it)."""
    if os.environ.get("TEST_PART") != POSTGRESQL_PART or hasattr(session.config, "workerinput"):
        return
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    stats = getattr(reporter, "stats", {})
    counts = {outcome: len(stats.get(outcome, [])) for outcome in ("passed", "skipped", "failed", "error")}
    problems = postgresql_part_problems(os.environ.get("DATABASE_URL", ""), counts)
    if problems:
        if reporter is not None:
            reporter.write_line(f"the PostgreSQL part does not count: {'; '.join(problems)}", red=True)
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


DATABASE_FIXTURES = frozenset({"db", "transactional_db", "django_db_reset_sequences", "live_server"})


def _uses_the_test_database(item: pytest.Item) -> bool:
    fixtures = set(getattr(item, "fixturenames", ()))
    return item.get_closest_marker("django_db") is not None or bool(DATABASE_FIXTURES & fixtures)


@pytest.hookimpl(wrapper=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> Iterator[None]:
    """Slow tests first: `make test` spreads the suite over two processes, and a long test that
    starts late would leave one of them working alone at the end.

    Before the other plugins: slow first, the order otherwise kept. pytest-django then groups the
    tests by how they use the database (a stable sort: still slow first within each group), which
    puts the tests without the database last. After it: slow tests that never touch the test
    database (the million-line import in a process of its own, the reference metrics) go to the
    very front, where moving them changes no database state."""
    items.sort(key=lambda item: item.get_closest_marker("slow") is None)
    yield
    items.sort(key=lambda item: not (item.get_closest_marker("slow") and not _uses_the_test_database(item)))


@pytest.fixture(scope="session", autouse=True)
def fast_password_hashing() -> Iterator[None]:
    """Every test user's password is hashed with MD5: PBKDF2's deliberate slowness (a few
    hundred milliseconds a user) is not under test. Threads of this process (the live server of
    the browser tests) see it too."""
    from django.test import override_settings

    with override_settings(PASSWORD_HASHERS=["django.contrib.auth.hashers.MD5PasswordHasher"]):
        yield


@pytest.fixture(scope="session")
def shared_data() -> Path:
    if not SHARED_DATA.is_dir():
        if os.environ.get("CI") == "true":
            pytest.fail(f"shared data folder {SHARED_DATA} is missing in CI")
        pytest.skip(f"shared data folder {SHARED_DATA} not found (set SHARED_DATA_DIR)")
    return SHARED_DATA


@pytest.fixture(autouse=True)
def file_cache_in_tmp(settings: object, tmp_path: object) -> Iterator[None]:
    """Each test gets its own file cache (the embedded default), so no recompute marker outlives
    its test; recomputes a test requested are queued before the next test starts."""
    from labeling.recompute import recompute_soon_wait

    settings.CACHES = {  # type: ignore[attr-defined]
        "default": {
            "BACKEND": "django.core.cache.backends.filebased.FileBasedCache",
            "LOCATION": str(tmp_path / "cache"),  # type: ignore[operator]
        }
    }
    yield
    recompute_soon_wait(timeout=5)


@pytest.fixture(autouse=True)
def active_assessors_forgotten() -> None:
    """The per-process count of active assessors (the queue of draws' size) starts empty in each
    test: a rolled-back test's campaign id comes back in the next one, its count must not."""
    from sampling.draws import assessors_active_forget

    assessors_active_forget()
