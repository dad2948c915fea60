"""Servers and an HTTP client for bench_http.py: a throwaway PostgreSQL cluster and gunicorn on
free loopback ports, and a keep-alive JSON client over http.client."""

from __future__ import annotations

import contextlib
import glob
import http.client
import json
import os
import shutil
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent


# ---------------------------------------------------------------- servers


def free_port() -> int:
    """A free TCP port on the loopback interface."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def postgres_bin_dir() -> Path:
    """Where initdb and postgres live (Debian keeps them out of PATH)."""
    initdb = shutil.which("initdb")
    if initdb:
        return Path(initdb).resolve().parent
    candidates = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"))
    if not candidates:
        raise SystemExit("PostgreSQL is not installed (apt-get install postgresql)")
    return Path(candidates[-1]).parent


def as_postgres_user(command: list[str]) -> list[str]:
    """PostgreSQL refuses to run as root: drop to the postgres system user when we are root."""
    if os.geteuid() == 0:
        return ["runuser", "-u", "postgres", "--", *command]
    return command


def wait_for_port(port: int, timeout: float, process: subprocess.Popen[bytes] | None = None) -> None:
    """Block until something accepts connections on the port."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process is not None and process.poll() is not None:
            raise RuntimeError(f"server exited with code {process.returncode} before listening")
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), timeout=0.5):
            return
        time.sleep(0.1)
    raise TimeoutError(f"nothing listens on port {port} after {timeout} s")


@contextlib.contextmanager
def postgres_server(workdir: Path, options: dict[str, str] | None = None) -> Iterator[str]:
    """A throwaway PostgreSQL cluster on a free loopback port; yields its DATABASE_URL."""
    bin_dir = postgres_bin_dir()
    data_dir = workdir / "pgdata"
    socket_dir = workdir / "pgsocket"
    data_dir.mkdir()
    socket_dir.mkdir()
    if os.geteuid() == 0:
        shutil.chown(workdir, "postgres")
        shutil.chown(data_dir, "postgres")
        shutil.chown(socket_dir, "postgres")
    subprocess.run(
        as_postgres_user(
            [
                str(bin_dir / "initdb"),
                "-D",
                str(data_dir),
                "-U",
                "bench",
                "-A",
                "trust",
                "--no-instructions",
                "-E",
                "UTF8",
            ]
        ),
        check=True,
        stdout=subprocess.DEVNULL,
    )
    port = free_port()
    # Production-like durability (fsync and synchronous commit stay on); enough connections
    # for every gunicorn thread; a little more shared memory than the tiny default.
    command = [
        str(bin_dir / "postgres"),
        "-D",
        str(data_dir),
        "-h",
        "127.0.0.1",
        "-p",
        str(port),
        "-k",
        str(socket_dir),
        "-c",
        "max_connections=200",
        "-c",
        "shared_buffers=256MB",
    ]
    for name, value in (options or {}).items():
        command += ["-c", f"{name}={value}"]
    log = open(workdir / "postgres.log", "wb")  # noqa: SIM115 - closed below
    process = subprocess.Popen(as_postgres_user(command), stdout=log, stderr=subprocess.STDOUT)
    try:
        wait_for_port(port, 30, process)
        url = f"postgres://bench@127.0.0.1:{port}/postgres"
        import psycopg

        for _ in range(100):  # the port opens a moment before connections are accepted
            try:
                psycopg.connect(url, connect_timeout=2).close()
                break
            except psycopg.OperationalError:
                time.sleep(0.1)
        yield url
    finally:
        process.terminate()
        process.wait(30)
        log.close()


@contextlib.contextmanager
def gunicorn_server(
    env: dict[str, str], workers: int, threads: int, workdir: Path, wsgi: str = "config.wsgi"
) -> Iterator[int]:
    """gunicorn with the production settings on a free loopback port; yields the port."""
    port = free_port()
    command = [
        str(Path(sys.executable).parent / "gunicorn"),
        wsgi,
        # The production settings (config/gunicorn.py), on a free loopback port.
        "--config",
        str(REPO_ROOT / "config" / "gunicorn.py"),
        "--bind",
        f"127.0.0.1:{port}",
        "--workers",
        str(workers),
        "--threads",
        str(threads),
        "--log-level",
        "warning",
    ]
    log = open(workdir / "gunicorn.log", "wb")  # noqa: SIM115 - closed below
    process = subprocess.Popen(command, cwd=REPO_ROOT, env=env, stdout=log, stderr=subprocess.STDOUT)
    try:
        wait_for_port(port, 60, process)
        yield port
    except Exception:
        log.flush()
        print((workdir / "gunicorn.log").read_text(errors="replace")[-4000:], file=sys.stderr)
        raise
    finally:
        process.terminate()
        process.wait(30)
        log.close()


@contextlib.contextmanager
def redis_server() -> Iterator[str]:
    """A throwaway Redis server on a free loopback port (the test suite's); yields its URL."""
    if str(REPO_ROOT) not in sys.path:
        sys.path.insert(0, str(REPO_ROOT))
    from tests.servers import redis_server as throwaway_redis

    with throwaway_redis() as url:
        yield url


@contextlib.contextmanager
def celery_worker(env: dict[str, str], workdir: Path) -> Iterator[None]:
    """A real Celery worker on the benchmark's broker, as production runs one beside gunicorn."""
    if str(REPO_ROOT) not in sys.path:
        sys.path.insert(0, str(REPO_ROOT))
    from config.celery import worker_argv

    log = open(workdir / "celery.log", "wb")  # noqa: SIM115 - closed below
    process = subprocess.Popen(worker_argv(), cwd=REPO_ROOT, env=env, stdout=log, stderr=subprocess.STDOUT)
    try:
        yield
    finally:
        process.terminate()
        process.wait(30)
        log.close()


def manage(env: dict[str, str], *args: str) -> None:
    """Run a manage.py command against the benchmark database."""
    subprocess.run(
        [sys.executable, "manage.py", *args], cwd=REPO_ROOT, env=env, check=True, stdout=subprocess.DEVNULL
    )


# ---------------------------------------------------------------- HTTP client


class Api:
    """A tiny keep-alive JSON client over http.client (one per thread)."""

    def __init__(self, port: int, token: str | None = None) -> None:
        self.connection = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
        self.headers = {"Accept": "application/json", "Host": "localhost"}
        if token:
            self.headers["Authorization"] = f"Token {token}"

    def call(self, method: str, path: str, payload: object = None) -> tuple[int, bytes]:
        headers = dict(self.headers)
        body = None
        if payload is not None:
            body = json.dumps(payload).encode()
            headers["Content-Type"] = "application/json"
        try:
            self.connection.request(method, path, body=body, headers=headers)
            response = self.connection.getresponse()
        except (http.client.RemoteDisconnected, ConnectionResetError, BrokenPipeError):
            # gunicorn closed an idle keep-alive connection (a long think): reconnect once. A
            # repeated answer is safe: the API stores one judgment per task.
            self.connection.close()
            self.connection.request(method, path, body=body, headers=headers)
            response = self.connection.getresponse()
        return response.status, response.read()

    def upload(
        self, path: str, files: list[tuple[str, bytes]], fields: dict[str, str] | None = None
    ) -> tuple[int, bytes]:
        boundary = uuid.uuid4().hex
        parts: list[bytes] = []
        for name, value in (fields or {}).items():
            parts.append(
                f'--{boundary}\r\nContent-Disposition: form-data; name="{name}"\r\n\r\n{value}\r\n'.encode()
            )
        for filename, content in files:
            parts.append(
                f'--{boundary}\r\nContent-Disposition: form-data; name="file"; '
                f'filename="{filename}"\r\nContent-Type: text/plain\r\n\r\n'.encode()
            )
            parts.append(content + b"\r\n")
        parts.append(f"--{boundary}--\r\n".encode())
        headers = dict(self.headers)
        headers["Content-Type"] = f"multipart/form-data; boundary={boundary}"
        self.connection.request("POST", path, body=b"".join(parts), headers=headers)
        response = self.connection.getresponse()
        return response.status, response.read()

    def close(self) -> None:
        self.connection.close()


def expect(status: int, body: bytes, *allowed: int) -> dict[str, object]:
    """The decoded JSON body, or a clear failure naming the unexpected status."""
    if status not in allowed:
        raise RuntimeError(f"unexpected HTTP {status}: {body[:500]!r}")
    return json.loads(body) if body else {}
