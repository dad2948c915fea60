"""The embedded default's cache: Django's file cache, plus counters that cost one appended byte.

The recompute pipeline counts every judgment's recompute request (labeling/recompute.py). On
Redis that is one INCR. Django's file cache has no increment of its own: `incr` reads the value,
then `set` pickles it, writes a temporary file, renames it over the old one and lists the
directory to cull it; on a busy embedded server that was about 9 % of a web worker's CPU (a
profile in docs/benchmarks.md), and two requests at once could count as one.

A counter here is a file of its own whose size is its value: `counter_add` appends one byte with
O_APPEND, which the kernel makes atomic among any number of processes, so no increment is lost and
nothing is renamed. The files sit in a folder of their own under the cache's, where Django's
culling never sees them (a culled counter would undercount, and the recompute it stood for would
be lost); `clear` empties them with the rest of the cache. A counter grows by a byte per
request, a megabyte per million judgments of a campaign: less than the judgments' own rows.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterable
from typing import Any

from django.core.cache.backends.filebased import FileBasedCache
from django.core.exceptions import ImproperlyConfigured

COUNTERS_FOLDER = "counters"


class CountingFileCache(FileBasedCache):
    """Django's file cache with append-only counters (`counter_add`, `counter_values`)."""

    def __init__(self, dir: str, params: dict[str, Any]) -> None:  # noqa: A002 - Django's name
        super().__init__(dir, params)
        if self._cull_frequency == 0:
            # Django culls such a cache by clearing all of it, which would empty the counters.
            raise ImproperlyConfigured(
                "CountingFileCache needs a CULL_FREQUENCY above 0: 0 culls the counters too"
            )
        self._counters = os.path.join(os.path.abspath(dir), COUNTERS_FOLDER)

    def _counter_path(self, key: str, version: int | None) -> str:
        name = hashlib.md5(self.make_and_validate_key(key, version=version).encode(), usedforsecurity=False)
        return os.path.join(self._counters, name.hexdigest() + ".count")

    def counter_add(self, key: str, version: int | None = None) -> None:
        """Add one to the counter `key` (created at 0 if absent). Raises OSError if the disk fails."""
        path = self._counter_path(key, version)
        try:
            handle = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        except FileNotFoundError:  # the first counter (or a cleared cache): make the folder
            os.makedirs(self._counters, exist_ok=True)
            handle = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        try:
            os.write(handle, b"+")
        finally:
            os.close(handle)

    def counter_values(self, keys: Iterable[str], version: int | None = None) -> dict[str, int]:
        """The counters' values (0 for a counter never added to)."""
        values = {}
        for key in keys:
            try:
                values[key] = os.stat(self._counter_path(key, version)).st_size
            except FileNotFoundError:
                values[key] = 0
        return values

    def clear(self) -> None:
        super().clear()
        try:
            names = os.listdir(self._counters)
        except FileNotFoundError:
            return
        for name in names:
            try:
                os.remove(os.path.join(self._counters, name))
            except FileNotFoundError:  # another process cleared it first
                pass
