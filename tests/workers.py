"""A Celery worker process on the test database (and a throwaway Redis, or the embedded
filesystem broker and file cache), as fixtures."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from django.conf import settings
from django.core.cache import cache
from django.db import connection

from config.celery import app as celery_app
from config.celery import worker_argv
from tests.conftest import REPO_ROOT


def _database_url() -> str:
    settings = connection.settings_dict
    if connection.vendor == "sqlite":
        name = str(settings["NAME"])
        assert "memory" not in name, "the worker needs a file database, not an in-memory one"
        return f"sqlite:///{name}"
    return (
        f"postgresql://{settings['USER']}:{settings['PASSWORD'] or ''}@{settings['HOST']}:{settings['PORT']}"
        f"/{settings['NAME']}"
    )


def use_broker(url: str) -> None:
    """Point this process's Celery app at another broker (dropping pooled connections)."""
    celery_app.conf.broker_url = url
    celery_app.conf.broker_transport_options = (
        settings.REDIS_TRANSPORT_OPTIONS if url.startswith("redis") else {}
    )
    celery_app._pool = None
    celery_app.amqp._producer_pool = None


class CeleryWorker:
    """A `celery -A config worker` process on the test database and a Redis broker, or, with
    `redis_url=None`, the embedded default: kombu's filesystem broker and the file cache under
    `folder`/var, shared with any process started with `env()`."""

    def __init__(self, redis_url: str | None, folder: Path, *, queues: tuple[str, ...] = ()) -> None:
        self.redis_url = redis_url
        self.folder = folder
        self.queues = queues
        self.log = folder / ("worker.log" if not queues else f"worker-{'-'.join(queues)}.log")
        self.process: subprocess.Popen[bytes] | None = None

    def env(self) -> dict[str, str]:
        """The environment of a process that shares this worker's database, broker and cache."""
        env = {
            **os.environ,
            "DATABASE_URL": _database_url(),
            "VAR_DIR": str(self.folder / "var"),
            "PYTHONPATH": str(REPO_ROOT),
            # The worker spaces recomputes as this process expects (see the fixture).
            "LABELING_RECOMPUTE_MIN_SECONDS": str(settings.LABELING_RECOMPUTE_MIN_SECONDS),
        }
        env.pop("CELERY_BROKER_URL", None)
        if self.redis_url is None:
            env.pop("REDIS_URL", None)
        else:
            env["REDIS_URL"] = self.redis_url
        return env

    def start(self) -> None:
        with self.log.open("ab") as output:
            # A worker of named queues (the webhooks') beside the default one needs its own name.
            named = ("-Q", ",".join(self.queues), "-n", f"{self.queues[0]}@%h") if self.queues else ()
            slots = settings.WEBHOOK_DELIVERY_SLOTS if "webhooks" in self.queues else 0  # type: ignore[attr-defined]
            self.process = subprocess.Popen(
                worker_argv("--without-heartbeat", *named, threads=slots),
                cwd=REPO_ROOT,
                env=self.env(),
                stdout=output,
                stderr=subprocess.STDOUT,
            )

    def wait_caught_up(self, seconds: float = 60.0) -> None:
        """Wait until the worker has run its start-up catch-up (which queues a recompute of every
        running campaign), so a test starts from a worker that is ready and idle."""
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            text = self.log.read_text(errors="replace") if self.log.exists() else ""
            if re.search(r"campaigns_catch_up\[[^\]]*\] succeeded", text):
                return
            assert self.process is not None and self.process.poll() is None, text[-3000:]
            time.sleep(0.1)
        raise AssertionError(f"the worker did not catch up in {seconds:.0f} s:\n{text[-3000:]}")

    def wait_ready(self, seconds: float = 60.0) -> None:
        """Wait until the worker says it is ready to take tasks."""
        deadline = time.monotonic() + seconds
        text = ""
        while time.monotonic() < deadline:
            text = self.log.read_text(errors="replace") if self.log.exists() else ""
            if " ready." in text:
                return
            assert self.process is not None and self.process.poll() is None, text[-3000:]
            time.sleep(0.1)
        raise AssertionError(f"the worker did not start in {seconds:.0f} s:\n{text[-3000:]}")

    def kill(self) -> None:
        """SIGKILL: no shutdown, no acknowledgement of the task in hand."""
        assert self.process is not None
        self.process.send_signal(signal.SIGKILL)
        self.process.wait(timeout=20)

    def stop(self) -> None:
        if self.process is None or self.process.poll() is not None:
            return
        self.process.terminate()
        try:
            self.process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


def broker_chosen(broker: str, request: pytest.FixtureRequest) -> str | None:
    """For a test parametrized over ``broker``: an emptied throwaway Redis's URL for "redis", None
    (the embedded file broker) for "embedded"."""
    if broker != "redis":
        return None
    redis_url: str = request.getfixturevalue("redis_url")
    import redis

    redis.Redis.from_url(redis_url).flushdb()
    return redis_url


@contextmanager
def running_worker(redis_url: str | None, folder: Path, settings: object) -> Iterator[CeleryWorker]:
    """A started worker that has caught up (recomputes spaced 2 s apart, as the tests expect);
    stopped on exit."""
    settings.LABELING_RECOMPUTE_MIN_SECONDS = 2  # type: ignore[attr-defined]  # short waits in tests
    handle = CeleryWorker(redis_url, folder)
    handle.start()
    try:
        handle.wait_caught_up()
        yield handle
    finally:
        handle.stop()


@pytest.fixture
def celery_worker(redis_url: str, tmp_path: Path, settings: object) -> Iterator[CeleryWorker]:
    """A started worker (see `CeleryWorker`); this process publishes to the same Redis and
    shares its cache, as the web server does in production (recompute coalescing keys)."""
    timeout = settings.CACHE_TIMEOUT_SECONDS  # type: ignore[attr-defined]
    settings.CACHES = {  # type: ignore[attr-defined]
        "default": {
            "BACKEND": "django.core.cache.backends.redis.RedisCache",
            "LOCATION": redis_url,
            "OPTIONS": {"socket_connect_timeout": timeout, "socket_timeout": timeout},
        }
    }
    cache.clear()
    use_broker(redis_url)
    try:
        with running_worker(redis_url, tmp_path, settings) as handle:
            yield handle
    finally:
        use_broker("memory://")


@pytest.fixture
def worker(celery_worker: CeleryWorker) -> Path:
    """The worker's log file."""
    return celery_worker.log
