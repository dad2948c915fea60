"""The fixtures every test folder shares: where the real public data lives, the fast password
hasher, personas (assessor, coordinator, admin, outsider), a small toy campaign, API clients,
each test's own cache and pool-array folder, the worker and server fixtures (`tests.workers`,
`tests.servers`), and the check that `make test`'s PostgreSQL part ran the database tests."""

from __future__ import annotations

import io
import os
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    # The application is imported inside the fixtures: scripts import this module for REPO_ROOT
    # and the toy campaign's files (the benchmarks, the subprocesses of the cluster tests) without
    # Django being set up.
    from django.contrib.auth.models import AbstractBaseUser
    from rest_framework.test import APIClient

    from labeling.models import Campaign

# A real worker (`worker`, `celery_worker`) and throwaway PostgreSQL and Redis servers
# (`postgres_url`, `redis_url`) for the tests that ask for them; test databases copied from a
# migrated template (`tests.database_template`).
pytest_plugins = ["tests.workers", "tests.servers", "tests.database_template", "tests.identity_provider"]

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
            "BACKEND": "infrastructure.file_cache.CountingFileCache",
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


def pytest_configure(config: pytest.Config) -> None:
    """Unit tests never talk to a broker: enqueued recomputes go to an in-memory transport. The
    integration tests (test_celery.py) point a real worker at a real Redis instead.

    Static files are looked up when asked for (whitenoise's autorefresh) rather than indexed
    whenever a request handler starts: every test client starts one, and indexing every app's
    static files took a fifth of an API test's time. The servers the tests start as processes
    (tests/labeling/test_serve.py, test_production.py) index them as production does."""
    from django.conf import settings

    from config.celery import app as celery_app

    celery_app.conf.broker_url = "memory://"
    celery_app.conf.broker_transport_options = {}
    settings.WHITENOISE_AUTOREFRESH = True


PASSWORD = "correct-horse-battery-42"

# Three topics; two runs of five documents each that overlap on some documents.
RUN_A = "".join(f"{q} Q0 d{q}-{d} {d} {10 - d}.0 alpha\n" for q in (1, 2, 3) for d in range(1, 6))
RUN_B = "".join(f"{q} Q0 d{q}-{d} {d - 2} {20 - d}.0 beta\n" for q in (1, 2, 3) for d in range(3, 8))


def upload(name: str, text: str | bytes) -> tuple[str, io.BytesIO]:
    """An in-memory upload as the services take it."""
    return name, io.BytesIO(text.encode() if isinstance(text, str) else text)


@pytest.fixture
def make_user(db: None) -> Callable[..., AbstractBaseUser]:
    from django.contrib.auth import get_user_model

    from operations.accounts import user_create

    def make(username: str, role: str | None) -> AbstractBaseUser:
        if role is None:
            return get_user_model().objects.create_user(username=username, password=PASSWORD)
        return user_create(creator=None, username=username, password=PASSWORD, role=role)

    return make


@pytest.fixture
def admin(make_user: Callable[..., AbstractBaseUser]) -> AbstractBaseUser:
    return make_user("ada", "admin")


@pytest.fixture
def coordinator(make_user: Callable[..., AbstractBaseUser]) -> AbstractBaseUser:
    return make_user("carl", "coordinator")


@pytest.fixture
def assessor(make_user: Callable[..., AbstractBaseUser]) -> AbstractBaseUser:
    return make_user("alice", "assessor")


@pytest.fixture
def second_assessor(make_user: Callable[..., AbstractBaseUser]) -> AbstractBaseUser:
    return make_user("bob", "assessor")


@pytest.fixture
def outsider(make_user: Callable[..., AbstractBaseUser]) -> AbstractBaseUser:
    return make_user("oscar", None)


@pytest.fixture
def draft_campaign(coordinator: AbstractBaseUser) -> Campaign:
    """A campaign with two runs imported, not started."""
    from labeling.services.campaigns import campaign_create
    from uploads.run_imports import runs_import

    campaign = campaign_create(
        creator=coordinator,
        name="toy",
        metric="DCG@5",
        grades=["Bad", "Fair", "Good"],
        budget=100,
        budget_unit="judgments",
    )
    runs_import(campaign=campaign, files=[upload("a.run", RUN_A), upload("b.run", RUN_B)])
    return campaign


@pytest.fixture
def campaign(
    draft_campaign: Campaign, assessor: AbstractBaseUser, second_assessor: AbstractBaseUser
) -> Campaign:
    """The toy campaign, running, with both assessors assigned."""
    from labeling.services.campaigns import campaign_assessors_assign, campaign_start

    campaign_assessors_assign(campaign=draft_campaign, usernames=["alice", "bob"])
    return campaign_start(campaign=draft_campaign)


@pytest.fixture
def api() -> Callable[[AbstractBaseUser | None], APIClient]:
    from rest_framework.test import APIClient

    def client_for(user: AbstractBaseUser | None) -> APIClient:
        client = APIClient()
        if user is not None:
            client.force_authenticate(user=None)
            client.force_login(user)
        return client

    return client_for


@pytest.fixture(scope="session", autouse=True)
def remove_sqlite_journal_files() -> Iterator[None]:
    """Django deletes the SQLite test database file at the end, but not its WAL side files nor
    the recompute locks' folder beside it (infrastructure/recompute_lock.py)."""
    yield
    from django.conf import settings

    name = str(settings.DATABASES["default"].get("TEST", {}).get("NAME") or "")
    for suffix in ("-wal", "-shm"):
        if name and os.path.exists(name + suffix) and not os.path.exists(name):
            os.remove(name + suffix)
    if name and not os.path.exists(name):
        shutil.rmtree(name + ".locks", ignore_errors=True)


@pytest.fixture(autouse=True)
def pool_array_cache_in_tmp(request: pytest.FixtureRequest) -> Iterator[None]:
    """Each test's pool-array cache files live in its own temporary folder (tests that use the
    database: the numeric core's thousand tests need none)."""
    if not _uses_the_test_database(request.node):
        yield
        return
    from sampling.pool_arrays import pool_arrays_forget

    request.getfixturevalue("settings").VAR_DIR = request.getfixturevalue("tmp_path")
    yield
    pool_arrays_forget()
