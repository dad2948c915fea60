"""Shared fixtures: where the real public data lives."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parent.parent
# The real relevance data sits beside the repository (never copied into it).
SHARED_DATA = Path(os.environ.get("SHARED_DATA_DIR", REPO_ROOT.parent / "shared" / "data"))


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
    database (the PostgreSQL pass, minutes in a subprocess of its own) go to the very front,
    where moving them changes no database state."""
    items.sort(key=lambda item: item.get_closest_marker("slow") is None)
    yield
    items.sort(key=lambda item: not (item.get_closest_marker("slow") and not _uses_the_test_database(item)))


@pytest.fixture(scope="session")
def shared_data() -> Path:
    if not SHARED_DATA.is_dir():
        if os.environ.get("CI") == "true":
            pytest.fail(f"shared data folder {SHARED_DATA} is missing in CI")
        pytest.skip(f"shared data folder {SHARED_DATA} not found (set SHARED_DATA_DIR)")
    return SHARED_DATA


@pytest.fixture(autouse=True)
def file_cache_in_tmp(settings: object, tmp_path: object) -> Iterator[None]:
    """Each test gets its own file cache (the embedded default), so no refresh marker outlives
    its test; refreshes a test requested are queued before the next test starts."""
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
