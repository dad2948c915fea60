"""How a team outgrows one machine, and loses part of it: two web nodes (gunicorn) and two Celery
workers with their own node names on one PostgreSQL and one Redis, 40 assessors split across the
web nodes. Mid-run one web node is killed and restarted, and one worker is killed for good.

What must hold: no task leased to two assessors, every acknowledged answer stored exactly once
and nothing else stored, the latest snapshot counts every judgment within 15 s of the last one
(the killed worker's refreshes are taken over by the live one), snapshots never count fewer
judgments than the one before, no two recomputes of the campaign overlap, and no error logged.
Every process has its own VAR_DIR: nothing node-local may carry the coordination.
"""

from __future__ import annotations

import contextlib
import http.client
import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import psycopg
import pytest
import redis

from config.celery import worker_argv
from tests.conftest import REPO_ROOT
from tests.servers import free_port

ASSESSORS = 40
TOPICS, DEPTH = 600, 20  # DCG@10 pools each run's top 10 of 20: 12,000 items, more than the run judges
JUDGING_SECONDS = 32.0
KILL_WEB_AT, RESTART_WEB_AT, KILL_WORKER_AT = 6.0, 10.0, 14.0
SNAPSHOT_SECONDS = 15.0
RETRY_PAUSE = 0.2


@dataclass
class Cluster:
    env: dict[str, str]
    folder: Path
    database_url: str
    web: dict[str, subprocess.Popen[bytes]] = field(default_factory=dict)
    ports: dict[str, int] = field(default_factory=dict)
    workers: dict[str, subprocess.Popen[bytes]] = field(default_factory=dict)

    def env_of(self, name: str) -> dict[str, str]:
        """Each process keeps its files apart, as on machines of their own."""
        var = self.folder / name
        var.mkdir(exist_ok=True)
        return {**self.env, "VAR_DIR": str(var)}

    def log(self, name: str) -> Path:
        return self.folder / f"{name}.log"

    def start_web(self, name: str) -> None:
        port = self.ports.setdefault(name, free_port())
        command = [
            str(Path(sys.executable).parent / "gunicorn"),
            "config.wsgi",
            "--config",
            str(REPO_ROOT / "config" / "gunicorn.py"),
            "--bind",
            f"127.0.0.1:{port}",
            "--workers",
            "2",
            "--threads",
            "4",
        ]
        with self.log(name).open("ab") as output:
            self.web[name] = subprocess.Popen(
                command,
                cwd=REPO_ROOT,
                env=self.env_of(name),
                stdout=output,
                stderr=subprocess.STDOUT,
                start_new_session=True,  # its own process group: killed whole, workers included
            )
        _wait_for_port(port, self.web[name], self.log(name))

    def start_worker(self, name: str) -> None:
        with self.log(name).open("ab") as output:
            self.workers[name] = subprocess.Popen(
                worker_argv("-n", f"{name}@%h"),
                cwd=REPO_ROOT,
                env=self.env_of(name),
                stdout=output,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )

    def kill(self, process: subprocess.Popen[bytes]) -> None:
        """SIGKILL to the whole process group: no shutdown, nothing handed on."""
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        process.wait(timeout=30)

    def stop_all(self) -> None:
        for process in [*self.web.values(), *self.workers.values()]:
            if process.poll() is None:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(process.pid, signal.SIGTERM)
                try:
                    process.wait(timeout=20)
                except subprocess.TimeoutExpired:
                    self.kill(process)


def _wait_for_port(port: int, process: subprocess.Popen[bytes], log: Path) -> None:
    import socket

    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        assert process.poll() is None, log.read_text(errors="replace")[-3000:]
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), timeout=0.5):
            return
        time.sleep(0.1)
    raise AssertionError(f"nothing listens on {port}:\n{log.read_text(errors='replace')[-3000:]}")


def _wait_for_log(path: Path, pattern: str, seconds: float = 60.0) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if path.exists() and re.search(pattern, path.read_text(errors="replace")):
            return
        time.sleep(0.1)
    raise AssertionError(
        f"{path.name}: no {pattern!r} in {seconds:.0f} s:\n{path.read_text(errors='replace')[-3000:]}"
    )


@pytest.fixture
def cluster(postgres_url: str, redis_url: str, tmp_path: Path) -> Iterator[Cluster]:
    database = f"cluster_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(postgres_url, autocommit=True) as admin:
        admin.execute(f"CREATE DATABASE {database}")
    database_url = postgres_url.rsplit("/", 1)[0] + f"/{database}"
    broker = redis_url.rsplit("/", 1)[0] + "/9"  # a Redis database of its own
    redis.Redis.from_url(broker).flushdb()
    env = {
        key: value
        for key, value in os.environ.items()
        if key not in ("DATABASE_URL", "REDIS_URL", "CELERY_BROKER_URL", "PRODUCTION", "DEBUG", "VAR_DIR")
    }
    env.update(
        {
            "DJANGO_SETTINGS_MODULE": "config.settings",
            "PYTHONPATH": str(REPO_ROOT),
            "DATABASE_URL": database_url,
            "REDIS_URL": broker,
            "LABELING_REFRESH_MIN_SECONDS": "2",
            "LABELING_SWEEP_SECONDS": "1",
            "LOG_LEVEL": "INFO",
        }
    )
    handle = Cluster(env, tmp_path, database_url)
    setup_env = handle.env_of("setup")
    subprocess.run(
        [sys.executable, "manage.py", "migrate", "--noinput"],
        cwd=REPO_ROOT,
        env=setup_env,
        check=True,
        capture_output=True,
    )
    try:
        yield handle
    finally:
        handle.stop_all()


class Assessor(threading.Thread):
    """Next, answer at once, repeat; a request to a node that is down is retried until it answers
    (an answer repeated after a lost reply is stored once: the API says so with a 200)."""

    def __init__(self, port: int, token: str, campaign: int, until: float, seen: Seen) -> None:
        super().__init__(daemon=True)
        self.port, self.token, self.campaign, self.until, self.seen = port, token, campaign, until, seen
        self.connection: http.client.HTTPConnection | None = None
        self.failure: str | None = None

    def call(self, method: str, path: str, payload: object = None) -> tuple[int, bytes]:
        headers = {"Accept": "application/json", "Host": "localhost", "Authorization": f"Token {self.token}"}
        body = None if payload is None else json.dumps(payload).encode()
        if body is not None:
            headers["Content-Type"] = "application/json"
        give_up = self.until + 60
        while True:
            try:
                if self.connection is None:
                    self.connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
                self.connection.request(method, path, body=body, headers=headers)
                response = self.connection.getresponse()
                return response.status, response.read()
            except (OSError, http.client.HTTPException):
                if self.connection is not None:
                    self.connection.close()
                self.connection = None
                if time.monotonic() > give_up:
                    raise
                time.sleep(RETRY_PAUSE)

    def run(self) -> None:
        try:
            while time.monotonic() < self.until:
                status, body = self.call("GET", f"/api/campaigns/{self.campaign}/next/")
                if status == 204:
                    time.sleep(RETRY_PAUSE)
                    continue
                assert status == 200, (status, body[:300])
                task = int(json.loads(body)["task"])
                self.seen.served(task, self.token)
                status, body = self.call(
                    "POST", f"/api/tasks/{task}/answer/", {"grade": task % 3, "seconds": 3.0}
                )
                assert status in (200, 201), (status, body[:300])
                self.seen.answered(task)
        except BaseException as error:  # reported by the test, not lost in a thread
            self.failure = f"{type(error).__name__}: {error}"


@dataclass
class Seen:
    lock: threading.Lock = field(default_factory=threading.Lock)
    served_to: dict[int, str] = field(default_factory=dict)
    served_twice: list[int] = field(default_factory=list)
    acknowledged: set[int] = field(default_factory=set)
    last_answer: float = 0.0

    def served(self, task: int, token: str) -> None:
        with self.lock:
            if self.served_to.setdefault(task, token) != token:
                self.served_twice.append(task)

    def answered(self, task: int) -> None:
        with self.lock:
            self.acknowledged.add(task)
            self.last_answer = time.monotonic()


def _holding_a_refresh(log: Path) -> bool:
    """Whether the worker has taken a refresh message it has not finished: one it runs, or one it
    holds until its countdown (the case that froze estimates when its holder died)."""
    text = log.read_text(errors="replace") if log.exists() else ""
    received = set(re.findall(r"campaign_refresh\[([0-9a-f-]+)\] received", text))
    finished = set(re.findall(r"campaign_refresh\[([0-9a-f-]+)\] (?:succeeded|failed|retry)", text))
    return bool(received - finished)


def _recompute_spans(log: Path, campaign: int) -> list[tuple[float, float]]:
    text = log.read_text(errors="replace")
    pattern = rf"campaign {campaign} recomputed: from ([0-9.]+) to ([0-9.]+)"
    return [(float(start), float(end)) for start, end in re.findall(pattern, text)]


@pytest.mark.servers
@pytest.mark.slow
def test_two_web_nodes_and_two_workers_lose_one_of_each_and_lose_nothing(cluster: Cluster) -> None:
    made = subprocess.run(
        [sys.executable, "-m", "tests.labeling.cluster_campaign", str(ASSESSORS), str(TOPICS), str(DEPTH)],
        cwd=REPO_ROOT,
        env=cluster.env_of("setup"),
        check=True,
        capture_output=True,
        text=True,
    )
    setup = json.loads(made.stdout.strip().splitlines()[-1])
    campaign, tokens = int(setup["campaign"]), list(setup["tokens"])
    for name in ("web-a", "web-b"):
        cluster.start_web(name)
    for name in ("worker-1", "worker-2"):
        cluster.start_worker(name)
    for name in ("worker-1", "worker-2"):
        _wait_for_log(cluster.log(name), r"ready\.")

    seen = Seen()
    started = time.monotonic()
    until = started + JUDGING_SECONDS
    ports = [cluster.ports["web-a"], cluster.ports["web-b"]]
    assessors = [
        Assessor(ports[index % 2], token, campaign, until, seen) for index, token in enumerate(tokens)
    ]
    for assessor in assessors:
        assessor.start()
    time.sleep(KILL_WEB_AT)
    cluster.kill(cluster.web["web-a"])
    time.sleep(RESTART_WEB_AT - KILL_WEB_AT)
    cluster.start_web("web-a")
    time.sleep(KILL_WORKER_AT - RESTART_WEB_AT)
    # Kill a worker while it holds a refresh (not restarted): the refresh must not die with it.
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and not any(
        _holding_a_refresh(cluster.log(name)) for name in ("worker-1", "worker-2")
    ):
        time.sleep(0.05)
    victim = "worker-2" if _holding_a_refresh(cluster.log("worker-2")) else "worker-1"
    survivor = "worker-1" if victim == "worker-2" else "worker-2"
    cluster.kill(cluster.workers[victim])
    for assessor in assessors:
        assessor.join(timeout=JUDGING_SECONDS + 120)
    failures = [assessor.failure for assessor in assessors if assessor.failure]
    assert not failures, failures[:5]

    with psycopg.connect(cluster.database_url, autocommit=True) as db:

        def judged() -> int:
            return db.execute(
                "SELECT count(*) FROM labeling_judgment WHERE campaign_id = %s", [campaign]
            ).fetchone()[0]

        def latest_snapshot() -> int:
            row = db.execute(
                "SELECT judgments FROM labeling_estimatesnapshot WHERE campaign_id = %s "
                "ORDER BY id DESC LIMIT 1",
                [campaign],
            ).fetchone()
            return -1 if row is None else int(row[0])

        total = judged()
        while latest_snapshot() != total and time.monotonic() < seen.last_answer + SNAPSHOT_SECONDS:
            time.sleep(0.25)
        caught_up_after = time.monotonic() - seen.last_answer
        assert latest_snapshot() == total, (
            f"{SNAPSHOT_SECONDS:.0f} s after the last answer the latest snapshot counts "
            f"{latest_snapshot()} of "
            f"{total} judgments\n{cluster.log(survivor).read_text(errors='replace')[-3000:]}"
        )
        # Enough happened around the kills for the test to mean something.
        assert total >= 1000, total
        assert not seen.served_twice, seen.served_twice[:10]
        stored = [
            task
            for (task,) in db.execute(
                "SELECT task_id FROM labeling_judgment WHERE campaign_id = %s", [campaign]
            )
        ]
        assert len(stored) == len(set(stored)), "an answer stored twice"
        assert set(stored) == seen.acknowledged, (
            f"{len(seen.acknowledged - set(stored))} acknowledged answers lost, "
            f"{len(set(stored) - seen.acknowledged)} stored without an acknowledgement"
        )
        counts = [
            int(row[0])
            for row in db.execute(
                "SELECT judgments FROM labeling_estimatesnapshot WHERE campaign_id = %s ORDER BY id",
                [campaign],
            )
        ]
        assert counts == sorted(counts), f"a snapshot counted fewer judgments than the one before: {counts}"
        pool = db.execute(
            "SELECT count(*) FROM labeling_poolitem WHERE campaign_id = %s", [campaign]
        ).fetchone()
        status = db.execute("SELECT status FROM labeling_campaign WHERE id = %s", [campaign]).fetchone()
        assert status[0] == ("done" if total == pool[0] else "running"), (status, total, pool)

    spans = sorted(
        _recompute_spans(cluster.log("worker-1"), campaign)
        + _recompute_spans(cluster.log("worker-2"), campaign)
    )
    assert len(spans) >= 3 and _recompute_spans(cluster.log(survivor), campaign), spans
    overlapping = [(a, b) for a, b in zip(spans, spans[1:], strict=False) if b[0] < a[1]]
    assert not overlapping, overlapping
    for name in ("web-a", "web-b", survivor):
        text = cluster.log(name).read_text(errors="replace")
        assert "Traceback" not in text and " ERROR" not in text and "ERROR/" not in text, text[-3000:]
    print(
        f"{total} judgments by {ASSESSORS} assessors in {JUDGING_SECONDS:.0f} s; {len(spans)} recomputes; "
        f"latest snapshot current {caught_up_after:.1f} s after the last answer"
    )
