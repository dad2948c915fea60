"""The backup and restore recipes of docs/operations.md run: a populated database is backed up
as the page says (PostgreSQL: `pg_dump --format=custom`, then `pg_restore` into a new database;
the embedded default: sqlite3's `.backup`), and the app started on the copy has every campaign
and judgment, no migration left to apply, and answers its health check."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from collections.abc import Callable
from pathlib import Path

import pytest
from django.contrib.auth.models import AbstractBaseUser
from django.db import connection

from labeling.models import Campaign, Judgment
from tests.conftest import REPO_ROOT
from tests.labeling.helpers import judge_some
from tests.servers import postgres_binary

pytestmark = [pytest.mark.postgresql, pytest.mark.django_db(transaction=True)]

# What the app started on the copy reports, through its own code: counts, and the health check
# answered by the WSGI application.
REPORT = """
import django, json
django.setup()
from django.test import Client
from labeling.models import Campaign, Judgment
health = Client().get("/api/health/")
print(json.dumps({"campaigns": Campaign.objects.count(), "judgments": Judgment.objects.count(),
                  "health": health.status_code, "status": health.json()["status"]}))
"""


def _url(database: str) -> str:
    settings = connection.settings_dict
    password = f":{settings['PASSWORD']}" if settings.get("PASSWORD") else ""
    return f"postgresql://{settings['USER']}{password}@{settings['HOST']}:{settings['PORT']}/{database}"


def _restored_postgresql(tmp_path: Path) -> tuple[str, Callable[[], None]]:
    dump = tmp_path / "labels.dump"
    live = _url(connection.settings_dict["NAME"])
    subprocess.run(
        [postgres_binary("pg_dump") or "pg_dump", "--format=custom", f"--file={dump}", live], check=True
    )
    name = f"restored_{uuid.uuid4().hex[:8]}"
    with connection.cursor() as cursor:
        cursor.execute(f'CREATE DATABASE "{name}"')
    restored = _url(name)
    subprocess.run(
        [postgres_binary("pg_restore") or "pg_restore", "--no-owner", f"--dbname={restored}", str(dump)],
        check=True,
    )

    def drop() -> None:
        with connection.cursor() as cursor:
            cursor.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')

    return restored, drop


def _restored_sqlite(tmp_path: Path) -> tuple[str, Callable[[], None]]:
    copy = tmp_path / "backup.sqlite3"
    subprocess.run(["sqlite3", connection.settings_dict["NAME"], f".backup {copy}"], check=True, timeout=60)
    return f"sqlite:///{copy}", lambda: None


def test_a_backup_restores_into_a_new_database_the_app_starts_on(
    campaign: Campaign, assessor: AbstractBaseUser, tmp_path: Path
) -> None:
    judge_some(campaign, assessor, 3, grade=2)
    expected = {"campaigns": Campaign.objects.count(), "judgments": Judgment.objects.count()}
    assert expected["judgments"] >= 3
    restore = _restored_postgresql if connection.vendor == "postgresql" else _restored_sqlite
    url, drop = restore(tmp_path)
    try:
        env = {
            **os.environ,
            "DATABASE_URL": url,
            "VAR_DIR": str(tmp_path / "var"),
            "DJANGO_SETTINGS_MODULE": "config.settings",
        }
        env.pop("REDIS_URL", None)
        unapplied = subprocess.run(
            [sys.executable, "manage.py", "migrate", "--check"],
            cwd=REPO_ROOT,
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert unapplied.returncode == 0, unapplied.stdout + unapplied.stderr
        report = subprocess.run(
            [sys.executable, "-c", REPORT],
            cwd=REPO_ROOT,
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert report.returncode == 0, report.stderr
        found = json.loads(report.stdout.strip().splitlines()[-1])
        assert found == {**expected, "health": 200, "status": "ok"}, found
    finally:
        drop()
