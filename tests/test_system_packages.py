"""`.ci/system-packages`, the one install step of `make test` and `.ci/run`: it installs the
missing Debian packages as root and, as anyone else, stops with the command to run."""

from __future__ import annotations

import subprocess
from pathlib import Path

from tests.conftest import REPO_ROOT

SCRIPT = REPO_ROOT / ".ci" / "system-packages"


def _stub(folder: Path, name: str, body: str) -> None:
    path = folder / name
    path.write_text(f"#!/bin/sh\n{body}\n")
    path.chmod(0o755)


def _run(
    tmp_path: Path, *, uid: int, with_redis: bool = False
) -> tuple[subprocess.CompletedProcess[str], str]:
    """The script with a PATH of stubs only: `id -u` says `uid`, apt-get logs its arguments, and
    redis-server, systemd-analyze and sqlite3 are missing unless `with_redis`."""
    stubs = tmp_path / "bin"
    stubs.mkdir()
    log = tmp_path / "apt-get.log"
    _stub(stubs, "id", f"echo {uid}")
    _stub(stubs, "apt-get", f'echo "$*" >> {log}')
    if with_redis:
        _stub(stubs, "redis-server", "exit 0")
        _stub(stubs, "systemd-analyze", "exit 0")
        _stub(stubs, "sqlite3", "exit 0")
    result = subprocess.run(
        ["/bin/bash", str(SCRIPT)], env={"PATH": str(stubs)}, capture_output=True, text=True, timeout=30
    )
    return result, log.read_text() if log.exists() else ""


def test_it_installs_what_is_missing_as_root(tmp_path: Path) -> None:
    result, apt_calls = _run(tmp_path, uid=0)
    assert result.returncode == 0, result.stderr
    update, install = apt_calls.splitlines()
    assert update == "update -qq"
    assert install.startswith("install -y -qq --no-install-recommends ")
    assert {"redis-server", "systemd"} <= set(install.split())


def test_it_stops_with_the_command_to_run_when_not_root(tmp_path: Path) -> None:
    result, apt_calls = _run(tmp_path, uid=1000)
    assert result.returncode == 1
    assert "apt-get update && apt-get install -y --no-install-recommends" in result.stderr
    assert "redis-server" in result.stderr and apt_calls == ""


def test_it_does_nothing_when_nothing_is_missing(tmp_path: Path) -> None:
    has_the_rest = Path("/usr/bin/chromium").exists() and any(
        Path("/usr/lib/postgresql").glob("*/bin/initdb")
    )
    result, apt_calls = _run(tmp_path, uid=1000, with_redis=True)
    if has_the_rest:
        assert (result.returncode, result.stdout, apt_calls) == (0, "", "")
    else:
        assert "redis-server" not in result.stderr
