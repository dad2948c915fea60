"""`make run`'s server command: gunicorn and a Celery worker, serving pages, stopped together."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from tests.conftest import REPO_ROOT
from tests.database_template import sqlite_database_from_template


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _children(pid: int) -> list[int]:
    """Direct children of a process (Linux /proc)."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            with contextlib.suppress(OSError):
                if int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1]) == pid:
                    found.append(int(entry.name))
    return found


def _command_line(pid: int) -> str:
    try:
        return (Path("/proc") / str(pid) / "cmdline").read_bytes().replace(b"\0", b" ").decode()
    except OSError:
        return ""


def _get(url: str, timeout: float = 60) -> tuple[int, bytes]:
    deadline = time.monotonic() + timeout
    while True:
        try:
            with urllib.request.urlopen(url, timeout=5) as response:
                return response.status, response.read()
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.2)


@pytest.mark.servers
@pytest.mark.skipif(not Path("/proc").is_dir(), reason="reads process trees from /proc")
def test_it_serves_pages_with_gunicorn_and_a_worker_and_stops_both(tmp_path: Path) -> None:
    env = {key: value for key, value in os.environ.items() if key not in ("DATABASE_URL", "REDIS_URL")}
    env.update({"VAR_DIR": str(tmp_path / "var"), "DJANGO_SETTINGS_MODULE": "config.settings"})
    sqlite_database_from_template(tmp_path / "var" / "db.sqlite3")
    subprocess.run(
        [sys.executable, "manage.py", "migrate", "--noinput"],
        cwd=REPO_ROOT,
        env=env,
        check=True,
        capture_output=True,
    )
    port = _free_port()
    log = open(tmp_path / "server.log", "wb")  # noqa: SIM115 - closed below
    server = subprocess.Popen(
        [sys.executable, "manage.py", "serve_with_worker", f"127.0.0.1:{port}"],
        cwd=REPO_ROOT,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    children: list[int] = []
    try:
        status, body = _get(f"http://127.0.0.1:{port}/accounts/login/")
        assert status == 200 and b"<form" in body
        # Static files are served too (whitenoise, no collectstatic needed outside production).
        status, _ = _get(f"http://127.0.0.1:{port}/static/labeling/judging-common.js")
        assert status == 200
        children = _children(server.pid)
        commands = [_command_line(pid) for pid in children]
        assert any("gunicorn" in command for command in commands), commands
        assert any("celery" in command and "worker" in command for command in commands), commands
        # gunicorn's own workers: several processes answer (config/gunicorn.py).
        gunicorn = next(pid for pid, command in zip(children, commands, strict=True) if "gunicorn" in command)
        assert len(_children(gunicorn)) >= 2
    finally:
        server.send_signal(signal.SIGTERM)
        try:
            server.wait(60)
        finally:
            log.close()
    # A kill stops the web server and the worker with the command.
    deadline = time.monotonic() + 10
    while any(_command_line(pid) for pid in children) and time.monotonic() < deadline:
        time.sleep(0.2)
    alive = [pid for pid in children if _command_line(pid)]
    printed = (tmp_path / "server.log").read_text()
    assert alive == [], printed[-3000:]
    # The demo's logins under the address (the demo app's command, called by its name).
    assert "Demo logins:" in printed and "demo-assessor / labeling-demo" in printed, printed[-3000:]
