"""Shared fixtures: where the real public data lives."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parent.parent
# The real relevance data sits beside the repository (never copied into it).
SHARED_DATA = Path(os.environ.get("SHARED_DATA_DIR", REPO_ROOT.parent / "shared" / "data"))


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Slow tests first (the order is otherwise kept): `make test` spreads the suite over two
    processes, and a long test that starts late would leave one of them working alone at the end."""
    items.sort(key=lambda item: item.get_closest_marker("slow") is None)


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
