"""The embedded default's file cache counts with appended bytes: every increment from any number
of processes lands, culling never touches a counter, and clearing the cache clears them."""

from __future__ import annotations

import multiprocessing
from pathlib import Path

import pytest
from django.core.exceptions import ImproperlyConfigured

from infrastructure.file_cache import CountingFileCache

ADDS_PER_PROCESS = 400


def _add_many(location: str) -> None:
    cache = CountingFileCache(location, {})
    for _ in range(ADDS_PER_PROCESS):
        cache.counter_add("requests:7")


def test_counters_from_processes_at_once_lose_no_increment(tmp_path: Path) -> None:
    location = str(tmp_path / "cache")
    context = multiprocessing.get_context("spawn")
    processes = [context.Process(target=_add_many, args=(location,)) for _ in range(4)]
    for process in processes:
        process.start()
    for process in processes:
        process.join(60)
        assert process.exitcode == 0
    cache = CountingFileCache(location, {})
    assert cache.counter_values(["requests:7", "requests:8"]) == {
        "requests:7": 4 * ADDS_PER_PROCESS,
        "requests:8": 0,
    }


def test_culling_spares_counters_and_clearing_empties_them(tmp_path: Path) -> None:
    cache = CountingFileCache(str(tmp_path / "cache"), {"OPTIONS": {"MAX_ENTRIES": 3, "CULL_FREQUENCY": 1}})
    cache.counter_add("requests:1")
    cache.counter_add("requests:1")
    for number in range(10):  # past MAX_ENTRIES: Django culls the whole cache
        cache.set(f"value:{number}", number)
    assert cache.get("value:0") is None  # culled
    assert cache.counter_values(["requests:1"]) == {"requests:1": 2}
    cache.clear()
    assert cache.counter_values(["requests:1"]) == {"requests:1": 0}
    cache.counter_add("requests:1")  # the folder comes back after a clear
    assert cache.counter_values(["requests:1"]) == {"requests:1": 1}


def test_a_cull_frequency_that_would_clear_the_counters_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ImproperlyConfigured, match="CULL_FREQUENCY above 0"):
        CountingFileCache(str(tmp_path / "cache"), {"OPTIONS": {"CULL_FREQUENCY": 0}})
