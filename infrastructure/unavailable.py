"""The failures of a shared service (the cache or the broker) that is down, hung or unreachable.

They are expected in operation (a Redis restart, a slow network, a loaded machine past the cache's
50 ms timeout) and every caller has a fallback, so callers log them as one warning line naming the
error; a traceback in the logs is kept for what is a bug.
"""

from __future__ import annotations

from kombu.exceptions import KombuError
from redis.exceptions import RedisError

UNAVAILABLE: tuple[type[BaseException], ...] = (KombuError, OSError, RedisError)
