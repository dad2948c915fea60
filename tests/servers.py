"""Throwaway PostgreSQL and Redis servers on free loopback ports, for integration tests.

Each server lives in a temporary directory and is stopped and deleted afterwards; a test
never uses a service someone else left running. A missing binary skips the test with the
reason, except under CI=true, where it fails.

As a command, it runs another command beside a throwaway PostgreSQL server, with DATABASE_URL
pointing at it (`make test` runs the database tests on PostgreSQL this way):

    python -m tests.servers postgresql -- python -m pytest -n 2 tests/labeling
"""

from __future__ import annotations

import glob
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

STARTUP_SECONDS = 30.0


def unavailable(reason: str) -> None:
    """Skip for a missing binary, but fail in CI where it must be installed."""
    if os.environ.get("CI") == "true":
        pytest.fail(f"{reason} (CI=true: .ci/run installs it)")
    pytest.skip(reason)


def free_port() -> int:
    """A TCP port on 127.0.0.1 nobody listens on right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def postgres_binary(name: str) -> str | None:
    """`initdb`/`postgres` from PATH, else the newest /usr/lib/postgresql/*/bin."""
    found = shutil.which(name)
    if found:
        return found
    candidates = sorted(
        glob.glob(f"/usr/lib/postgresql/*/bin/{name}"), key=lambda path: int(Path(path).parts[4])
    )
    return candidates[-1] if candidates else None


def _wait_until(check: object, what: str, process: subprocess.Popen[bytes], log: Path) -> None:
    deadline = time.monotonic() + STARTUP_SECONDS
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(
                f"{what} exited with {process.returncode}:\n{log.read_text(errors='replace')[-3000:]}"
            )
        if check():  # type: ignore[operator]
            return
        time.sleep(0.1)
    raise RuntimeError(
        f"{what} did not come up in {STARTUP_SECONDS:.0f} s:\n{log.read_text(errors='replace')[-3000:]}"
    )


def _stop(process: subprocess.Popen[bytes], stop_signal: int = signal.SIGTERM) -> None:
    if process.poll() is None:
        process.send_signal(stop_signal)
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=5)


@contextmanager
def postgres_server(prefix: tuple[str, ...] = ()) -> Iterator[str]:
    """Start PostgreSQL in a temporary directory; yield its DATABASE_URL (superuser `postgres`).
    `prefix` goes before the server's command (`tests.suite` runs it at the lowest priority)."""
    initdb, postgres = postgres_binary("initdb"), postgres_binary("postgres")
    if initdb is None or postgres is None:
        unavailable(
            "PostgreSQL binaries (initdb, postgres) not found on PATH or in /usr/lib/postgresql/*/bin"
        )
    # PostgreSQL refuses to run as root: run it as the postgres system user in a directory it owns.
    run_as: dict[str, str] = {}
    if os.geteuid() == 0:
        try:
            import pwd

            account = pwd.getpwnam("postgres")
        except KeyError:
            unavailable("running as root and there is no 'postgres' system user to run PostgreSQL as")
        run_as = {"user": "postgres", "group": str(account.pw_gid)}
    home = Path(tempfile.mkdtemp(prefix="test-postgres-"))
    if run_as:
        os.chown(home, account.pw_uid, account.pw_gid)
    data, log = home / "data", home / "server.log"
    port = free_port()
    process: subprocess.Popen[bytes] | None = None
    try:
        subprocess.run(
            [
                initdb,
                "-D",
                str(data),
                "-U",
                "postgres",
                "-A",
                "trust",
                "-E",
                "UTF8",
                "--locale=C",
                "--no-sync",
            ],
            check=True,
            capture_output=True,
            cwd=home,
            **_user_kwargs(run_as),
        )
        with open(log, "wb") as log_file:
            process = subprocess.Popen(
                [
                    *prefix,
                    postgres,
                    "-D",
                    str(data),
                    "-p",
                    str(port),
                    "-h",
                    "127.0.0.1",
                    "-k",
                    str(home),
                    "-c",
                    "fsync=off",
                    "-c",
                    "synchronous_commit=off",
                    "-c",
                    "full_page_writes=off",
                    "-c",
                    "max_connections=100",
                ],
                stdout=log_file,
                stderr=subprocess.STDOUT,
                cwd=home,
                **_user_kwargs(run_as),
            )
        url = f"postgresql://postgres@127.0.0.1:{port}/postgres"

        def accepting() -> bool:
            import psycopg

            try:
                psycopg.connect(url, connect_timeout=2).close()
                return True
            except psycopg.OperationalError:
                return False

        _wait_until(accepting, "postgres", process, log)
        yield url
    finally:
        if process is not None:
            _stop(process, signal.SIGINT)  # SIGINT = fast shutdown
        shutil.rmtree(home, ignore_errors=True)


def _user_kwargs(run_as: dict[str, str]) -> dict[str, object]:
    if not run_as:
        return {}
    return {"user": run_as["user"], "group": int(run_as["group"]), "extra_groups": []}


@contextmanager
def answering_process(
    command: list[str], *, what: str, log: Path, answering: Callable[[], bool], **popen: Any
) -> Iterator[subprocess.Popen[bytes]]:
    """`command` started with its output in `log`, waited for until `answering()` (its log in
    the error when it exits or takes too long), and stopped afterwards."""
    process: subprocess.Popen[bytes] | None = None
    try:
        with open(log, "wb") as log_file:
            process = subprocess.Popen(command, stdout=log_file, stderr=subprocess.STDOUT, **popen)
        _wait_until(answering, what, process, log)
        yield process
    finally:
        if process is not None:
            _stop(process)


@contextmanager
def redis_server() -> Iterator[str]:
    """Start redis-server with no persistence on a free port; yield its URL."""
    binary = shutil.which("redis-server")
    if binary is None:
        unavailable("redis-server not found on PATH")
    home = Path(tempfile.mkdtemp(prefix="test-redis-"))
    port = free_port()
    url = f"redis://127.0.0.1:{port}/0"

    def answering() -> bool:
        import redis

        try:
            return bool(redis.Redis.from_url(url, socket_connect_timeout=1).ping())
        except redis.exceptions.ConnectionError:
            return False

    command = [binary, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"]
    try:
        with answering_process(
            [*command, "--dir", str(home)], what="redis-server", log=home / "redis.log", answering=answering
        ):
            yield url
    finally:
        shutil.rmtree(home, ignore_errors=True)


@pytest.fixture(scope="session")
def postgres_url() -> Iterator[str]:
    """A throwaway PostgreSQL server for the session."""
    with postgres_server() as url:
        yield url


@pytest.fixture(scope="session")
def redis_url() -> Iterator[str]:
    """A throwaway Redis server for the session."""
    with redis_server() as url:
        yield url


def main(argv: list[str]) -> int:
    """`postgresql -- COMMAND...`: run COMMAND with DATABASE_URL on a throwaway PostgreSQL server
    and return its exit status. A missing binary prints why and returns 0 (1 under CI=true)."""
    if len(argv) < 3 or argv[0] != "postgresql" or argv[1] != "--":
        print("usage: python -m tests.servers postgresql -- COMMAND [ARGUMENT...]", file=sys.stderr)
        return 2
    try:
        with postgres_server() as url:
            print(f"PostgreSQL for this command: {url}", flush=True)
            return subprocess.run(argv[2:], env={**os.environ, "DATABASE_URL": url}).returncode
    except (pytest.skip.Exception, pytest.fail.Exception) as missing:
        print(f"not run on PostgreSQL: {missing.msg}", file=sys.stderr)
        return 1 if isinstance(missing, pytest.fail.Exception) else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
