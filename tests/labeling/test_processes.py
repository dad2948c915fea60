"""docs/operations.md names every process of the production layout: its process table matches
the queues the code routes tasks to, every task goes to a queue some documented process takes,
the upgrade steps name every process, and the documented systemd units run the table's commands
and pass `systemd-analyze verify`."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

from django.conf import settings

from config.celery import app as celery_app
from tests.conftest import REPO_ROOT

OPERATIONS = (REPO_ROOT / "docs" / "operations.md").read_text(encoding="utf-8")
INSTALL_DIR = "/srv/labels"


def _process_table() -> dict[str, tuple[str, str]]:
    """process -> (command, queue) from the table under "Production"."""
    rows = re.findall(r"^\| ([a-z ]+) \| `([^`]+)` \| (none|`[a-z]+`) \|", OPERATIONS, flags=re.M)
    return {name: (command, queue.strip("`")) for name, command, queue in rows}


def _queue_of(command: str) -> str:
    found = re.search(r"-Q (\S+)", command)
    return found.group(1) if found else celery_app.conf.task_default_queue


def _units() -> dict[str, str]:
    """unit file name -> its text, from the ```ini blocks."""
    blocks = re.findall(r"```ini\n# /etc/systemd/system/(\S+)[^\n]*\n(.*?)```", OPERATIONS, flags=re.S)
    return {name: text for name, text in blocks}


def test_the_process_table_names_every_queue_the_code_routes_to() -> None:
    table = _process_table()
    assert set(table) == {"web", "recompute worker", "webhooks worker"}
    documented = {queue for _, queue in table.values() if queue != "none"}
    routed = {route["queue"] for route in settings.CELERY_TASK_ROUTES.values()}
    assert documented == routed | {celery_app.conf.task_default_queue}
    assert settings.WEBHOOKS_QUEUE in documented
    for name, (command, queue) in table.items():
        if command.startswith(".venv/bin/celery"):
            assert _queue_of(command) == queue, name
    # Every task the workers know goes to a queue a documented process takes.
    celery_app.loader.import_default_modules()
    tasks = [name for name in celery_app.tasks if not name.startswith("celery.")]
    assert len(tasks) >= 5
    for task in tasks:
        assert (
            settings.CELERY_TASK_ROUTES.get(task, {}).get("queue", celery_app.conf.task_default_queue)
            in documented
        )


def test_the_upgrade_steps_stop_and_start_every_process() -> None:
    upgrade = OPERATIONS[OPERATIONS.index("An upgrade is:") :].split("\n\n")[0]
    for name in _process_table():
        assert name in upgrade, name


def test_the_systemd_units_run_the_tables_commands_and_verify(tmp_path: Path) -> None:
    units = _units()
    assert set(units) == {"labels-web.service", "labels-worker@.service", "labels-webhooks.service"}
    commands = {
        name: re.search(r"^ExecStart=(.*)$", text, flags=re.M).group(1)  # type: ignore[union-attr]
        for name, text in units.items()
    }
    table = _process_table()
    # The unit's command is the table's, from the install directory (%%h is systemd's escape of
    # %h, and the template's instance names the worker).
    expected = {
        "labels-web.service": table["web"][0],
        "labels-worker@.service": table["recompute worker"][0].replace("worker1@", "worker%i@"),
        "labels-webhooks.service": table["webhooks worker"][0],
    }
    for name, command in commands.items():
        assert command == f"{INSTALL_DIR}/" + expected[name].replace("%h", "%%h"), name
    for text in units.values():
        assert "User=labels" in text and "RestartPreventExitStatus=2" in text
    analyze = shutil.which("systemd-analyze")
    assert analyze is not None, "the suite's Debian packages include systemd (.ci/system-packages)"
    paths = []
    for name, text in units.items():
        # The checkout stands in for the install directory: verify checks the commands exist.
        path = tmp_path / name.replace("@.service", "@1.service")
        path.write_text(
            text.replace(INSTALL_DIR, str(REPO_ROOT)).replace("/etc/labels/environment", "-/dev/null")
        )
        paths.append(str(path))
    verified = subprocess.run([analyze, "verify", *paths], capture_output=True, text=True, timeout=60)
    assert verified.returncode == 0 and verified.stderr.strip() == "", verified.stderr
