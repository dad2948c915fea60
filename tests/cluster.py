"""The scale-out scenario, shared by `tests/labeling/test_two_nodes.py` and
`bench/bench_scaleout.py`: how a team outgrows one machine, and loses part of it.

Two web nodes (gunicorn) and two Celery workers with their own node names on one PostgreSQL and
one Redis; assessors split across the web nodes judge through the REST API. Mid-run one web node
is killed (SIGKILL to its process group) and restarted, and the worker holding a recompute is
killed for good. Every process has its own VAR_DIR: nothing node-local may carry coordination.
`run_scenario` returns what happened (`ScaleOutReport`); the callers judge it.
"""

from __future__ import annotations

import contextlib
import http.client
import json
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import psycopg
import redis

from config.celery import worker_argv
from tests.conftest import REPO_ROOT
from tests.servers import free_port

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
    text = path.read_text(errors="replace") if path.exists() else ""
    raise AssertionError(f"{path.name}: no {pattern!r} in {seconds:.0f} s:\n{text[-3000:]}")


@contextlib.contextmanager
def cluster_on(postgres_url: str, redis_url: str, folder: Path, **settings: str) -> Iterator[Cluster]:
    """A fresh database on the PostgreSQL server and a Redis database of its own, migrated; the
    processes the scenario starts are stopped on exit. `settings` go to every process's
    environment (e.g. LABELING_SWEEP_SECONDS)."""
    database = f"cluster_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(postgres_url, autocommit=True) as admin:
        admin.execute(f"CREATE DATABASE {database}")
    database_url = postgres_url.rsplit("/", 1)[0] + f"/{database}"
    broker = redis_url.rsplit("/", 1)[0] + "/9"
    redis.Redis.from_url(broker).flushdb()
    removed = ("DATABASE_URL", "REDIS_URL", "CELERY_BROKER_URL", "PRODUCTION", "DEBUG", "VAR_DIR")
    env = {key: value for key, value in os.environ.items() if key not in removed}
    env.update(
        {
            "DJANGO_SETTINGS_MODULE": "config.settings",
            "PYTHONPATH": str(REPO_ROOT),
            "DATABASE_URL": database_url,
            "REDIS_URL": broker,
            "LOG_LEVEL": "INFO",
            **settings,
        }
    )
    handle = Cluster(env, folder, database_url)
    subprocess.run(
        [sys.executable, "manage.py", "migrate", "--noinput"],
        cwd=REPO_ROOT,
        env=handle.env_of("setup"),
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


def _holding_a_recompute(log: Path) -> bool:
    """Whether the worker has taken a recompute message it has not finished: one it runs, or one it
    holds until its countdown (the case that froze estimates when its holder died)."""
    text = log.read_text(errors="replace") if log.exists() else ""
    received = set(re.findall(r"campaign_refresh\[([0-9a-f-]+)\] received", text))
    finished = set(re.findall(r"campaign_refresh\[([0-9a-f-]+)\] (?:succeeded|failed|retry)", text))
    return bool(received - finished)


def _recompute_spans(log: Path, campaign: int) -> list[tuple[float, float]]:
    text = log.read_text(errors="replace") if log.exists() else ""
    pattern = rf"campaign {campaign} recomputed: from ([0-9.]+) to ([0-9.]+)"
    return [(float(start), float(end)) for start, end in re.findall(pattern, text)]


@dataclass
class ScaleOutReport:
    """What the scenario saw and what the database holds afterwards."""

    judgments: int
    pool: int
    status: str
    served_twice: list[int]
    acknowledged_not_stored: int
    stored_not_acknowledged: int
    stored_twice: int
    snapshot_counts: list[int]
    # Seconds from the last answer until the latest snapshot counted every judgment; None if it
    # had not within `snapshot_seconds`.
    current_after: float | None
    latest_snapshot: int
    recomputes: list[tuple[float, float]]
    survivor_recomputes: int
    overlapping: list[tuple[tuple[float, float], tuple[float, float]]]
    errors_logged: dict[str, str]
    assessor_failures: list[str]
    victim: str


def run_scenario(
    cluster: Cluster,
    *,
    assessors: int,
    topics: int,
    depth: int,
    judging_seconds: float,
    kill_web_at: float,
    restart_web_at: float,
    kill_worker_at: float,
    snapshot_seconds: float,
) -> ScaleOutReport:
    """Set up the campaign, start two web nodes and two workers, judge, kill, and wait up to
    `snapshot_seconds` after the last answer for the latest snapshot to count every judgment."""
    made = subprocess.run(
        [sys.executable, "-m", "tests.labeling.cluster_campaign", str(assessors), str(topics), str(depth)],
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
    until = time.monotonic() + judging_seconds
    ports = [cluster.ports["web-a"], cluster.ports["web-b"]]
    threads = [Assessor(ports[index % 2], token, campaign, until, seen) for index, token in enumerate(tokens)]
    started = time.monotonic()
    for thread in threads:
        thread.start()
    time.sleep(max(0.0, started + kill_web_at - time.monotonic()))
    cluster.kill(cluster.web["web-a"])
    time.sleep(max(0.0, started + restart_web_at - time.monotonic()))
    cluster.start_web("web-a")
    time.sleep(max(0.0, started + kill_worker_at - time.monotonic()))
    # Kill a worker while it holds a recompute (not restarted): the recompute must not die with it.
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and not any(
        _holding_a_recompute(cluster.log(name)) for name in ("worker-1", "worker-2")
    ):
        time.sleep(0.05)
    victim = "worker-2" if _holding_a_recompute(cluster.log("worker-2")) else "worker-1"
    survivor = "worker-1" if victim == "worker-2" else "worker-2"
    cluster.kill(cluster.workers[victim])
    for thread in threads:
        thread.join(timeout=judging_seconds + 120)

    with psycopg.connect(cluster.database_url, autocommit=True) as db:

        def scalar(sql: str, *params: object) -> object:
            row = db.execute(sql, list(params)).fetchone()
            return None if row is None else row[0]

        def latest_snapshot() -> int:
            found = scalar(
                "SELECT judgments FROM labeling_estimatesnapshot WHERE campaign_id = %s "
                "ORDER BY id DESC LIMIT 1",
                campaign,
            )
            return -1 if found is None else int(str(found))

        total = int(str(scalar("SELECT count(*) FROM labeling_judgment WHERE campaign_id = %s", campaign)))
        while latest_snapshot() != total and time.monotonic() < seen.last_answer + snapshot_seconds:
            time.sleep(0.25)
        current_after = time.monotonic() - seen.last_answer if latest_snapshot() == total else None
        stored = [
            int(task)
            for (task,) in db.execute(
                "SELECT task_id FROM labeling_judgment WHERE campaign_id = %s", [campaign]
            )
        ]
        counts = [
            int(count)
            for (count,) in db.execute(
                "SELECT judgments FROM labeling_estimatesnapshot WHERE campaign_id = %s ORDER BY id",
                [campaign],
            )
        ]
        pool = int(str(scalar("SELECT count(*) FROM labeling_poolitem WHERE campaign_id = %s", campaign)))
        status = str(scalar("SELECT status FROM labeling_campaign WHERE id = %s", campaign))
        latest = latest_snapshot()

    spans = sorted(
        _recompute_spans(cluster.log("worker-1"), campaign)
        + _recompute_spans(cluster.log("worker-2"), campaign)
    )
    errors = {}
    for name in ("web-a", "web-b", survivor):
        text = cluster.log(name).read_text(errors="replace")
        found = [at for at in (text.find("Traceback"), text.find(" ERROR"), text.find("ERROR/")) if at >= 0]
        if found:  # the first error with what led to it, which the log's tail may not hold
            errors[name] = text[max(0, min(found) - 500) : min(found) + 2500]
    return ScaleOutReport(
        judgments=total,
        pool=pool,
        status=status,
        served_twice=seen.served_twice,
        acknowledged_not_stored=len(seen.acknowledged - set(stored)),
        stored_not_acknowledged=len(set(stored) - seen.acknowledged),
        stored_twice=len(stored) - len(set(stored)),
        snapshot_counts=counts,
        current_after=current_after,
        latest_snapshot=latest,
        recomputes=spans,
        survivor_recomputes=len(_recompute_spans(cluster.log(survivor), campaign)),
        overlapping=[(a, b) for a, b in zip(spans, spans[1:], strict=False) if b[0] < a[1]],
        errors_logged=errors,
        assessor_failures=[thread.failure for thread in threads if thread.failure],
        victim=victim,
    )
