"""A migrated test database is made once and copied after that.

Applying the 75 migrations costs each test process 8-30 s of CPU (it renders every model state
again), and `make test` starts seven processes that need a database. The first process migrates
as it always did and keeps a copy of the result; the next ones copy it and run `migrate`, which
then has nothing to apply (it still creates any content type or permission the models ask for).

- SQLite: the copy is a file, `var/test-template-<key>.sqlite3`, kept for the next runs.
- PostgreSQL: the copy is a database on the server, `test_template_<key>`, and a test database
  is made from it with `CREATE DATABASE ... TEMPLATE`.

The key hashes every migration file and Django's version, so a changed or added migration makes a
new template: the copy is never older than the code. Processes that start together
(pytest-xdist's) wait for the first one's template rather than all migrating at once on the same
cores (bounded: after `TEMPLATE_WAIT_SECONDS` a process migrates on its own). On SQLite the
controlling process makes a missing template before any test process starts
(`pytest_sessionstart`): the slow tests that start their own servers run first, and they copy it
too rather than each migrating beside the others."""

from __future__ import annotations

import fcntl
import hashlib
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

REPO_ROOT = Path(__file__).resolve().parent.parent
TEMPLATE_PREFIX = "test-template-"
# One migration takes 8-30 s on a loaded 2-core machine.
TEMPLATE_WAIT_SECONDS = 180.0

# The lock this process holds while it makes the template (released once it is saved, or at exit).
_making: list[int] = []


def migrations_key() -> str:
    """What the migrated schema depends on: every migration file's bytes and Django's version."""
    import django

    digest = hashlib.sha256(django.get_version().encode())
    for path in sorted(REPO_ROOT.glob("*/migrations/*.py")):
        digest.update(str(path.relative_to(REPO_ROOT)).encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()[:16]


def _connection() -> Any:
    from django.db import connections

    return connections["default"]


def sqlite_test_name() -> str | None:
    """The default database's test file when it is SQLite (after pytest-django's suffixes)."""
    connection = _connection()
    if connection.vendor != "sqlite":
        return None
    name = str(connection.settings_dict.get("TEST", {}).get("NAME") or "")
    return name if name and ":memory:" not in name and "mode=memory" not in name else None


class _SqliteTemplate:
    def __init__(self, name: str) -> None:
        from django.conf import settings

        self.name = name
        self.template = Path(settings.VAR_DIR) / f"{TEMPLATE_PREFIX}{migrations_key()}.sqlite3"
        self.lock_path = self.template.parent / "test-template-sqlite.lock"

    def exists(self) -> bool:
        return self.template.is_file()

    def copy_in(self) -> None:
        self.remove_copy()
        shutil.copyfile(self.template, self.name)

    def remove_copy(self) -> None:
        for suffix in ("", "-wal", "-shm", "-journal"):
            if os.path.exists(self.name + suffix):
                os.remove(self.name + suffix)

    def save(self) -> None:
        """A consistent copy of the freshly migrated database (SQLite's backup reads the WAL too),
        put in place atomically; older templates go."""
        if not os.path.isfile(self.name):
            return
        handle, temporary = tempfile.mkstemp(prefix=self.template.name, dir=self.template.parent)
        os.close(handle)
        try:
            source, target = sqlite3.connect(self.name), sqlite3.connect(temporary)
            try:
                source.backup(target)
            finally:
                source.close()
                target.close()
            os.replace(temporary, self.template)
        finally:
            if os.path.exists(temporary):
                os.remove(temporary)
        for stale in self.template.parent.glob(f"{TEMPLATE_PREFIX}*.sqlite3"):
            if stale != self.template:
                stale.unlink(missing_ok=True)


class _PostgresqlTemplate:
    def __init__(self, name: str) -> None:
        from django.conf import settings

        self.name = name
        self.template = f"test_template_{migrations_key()}"
        self.lock_path = Path(settings.VAR_DIR) / "test-template-postgresql.lock"

    def _execute(self, *statements: str) -> list[Any]:
        connection = _connection()
        connection.close()  # CREATE DATABASE ... TEMPLATE needs the source without sessions
        with connection._nodb_cursor() as cursor:
            rows = []
            for statement in statements:
                cursor.execute(statement)
                rows = cursor.fetchall() if cursor.description else []
            return rows

    def exists(self) -> bool:
        return bool(self._execute(f"SELECT 1 FROM pg_database WHERE datname = '{self.template}'"))

    def copy_in(self) -> None:
        self.remove_copy()
        self._execute(f'CREATE DATABASE "{self.name}" TEMPLATE "{self.template}"')

    def remove_copy(self) -> None:
        self._execute(f'DROP DATABASE IF EXISTS "{self.name}"')

    def save(self) -> None:
        stale = self._execute("SELECT datname FROM pg_database WHERE datname LIKE 'test_template_%'")
        self._execute(
            *(f'DROP DATABASE IF EXISTS "{name}"' for (name,) in stale if name != self.template),
            f'CREATE DATABASE "{self.template}" TEMPLATE "{self.name}"',
        )


def sqlite_database_from_template(path: Path) -> bool:
    """A migrated SQLite database at `path` for a test's own server or child process, when this
    machine has the template (their `migrate` then has nothing to apply); True if it was put there.
    Without one the child migrates, as before."""
    template = _SqliteTemplate(str(path))
    if not template.exists():
        return False
    path.parent.mkdir(parents=True, exist_ok=True)
    template.copy_in()
    return True


def _template_for_this_database(*, set_up: bool) -> _SqliteTemplate | _PostgresqlTemplate | None:
    """The template of the default database's test database (`set_up`: Django already switched
    the connection to it, so its name is the connection's)."""
    connection = _connection()
    if connection.vendor == "postgresql":
        name = connection.settings_dict["NAME"] if set_up else connection.creation._get_test_db_name()
        return _PostgresqlTemplate(name)
    name = sqlite_test_name()
    return _SqliteTemplate(name) if name else None


def _lock_to_make(template: _SqliteTemplate | _PostgresqlTemplate) -> bool:
    """Wait until no other process is making the template; True: this process holds the lock
    and makes it (there is none yet). False when one exists or the wait ran out."""
    template.lock_path.parent.mkdir(parents=True, exist_ok=True)
    handle = os.open(str(template.lock_path), os.O_RDWR | os.O_CREAT, 0o600)
    deadline = time.monotonic() + TEMPLATE_WAIT_SECONDS
    while True:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
            break
        except BlockingIOError:
            if time.monotonic() > deadline:
                os.close(handle)
                return False
            time.sleep(0.2)
    _making.append(handle)
    if template.exists():
        _lock_release()
        return False
    return True


def _lock_release() -> None:
    while _making:
        os.close(_making.pop())


@pytest.hookimpl(tryfirst=True)
def pytest_sessionstart(session: pytest.Session) -> None:
    """In the controlling process (before pytest-xdist starts the others), a missing SQLite
    template is made by `manage.py migrate` on a file of its own. Should that fail, the test
    processes migrate as before and report it."""
    if hasattr(session.config, "workerinput") or session.config.getvalue("reuse_db"):
        return
    template = _template_for_this_database(set_up=False)
    if not isinstance(template, _SqliteTemplate) or not _lock_to_make(template):
        return
    try:
        handle, fresh = tempfile.mkstemp(prefix="migrating-", suffix=".sqlite3", dir=template.template.parent)
        os.close(handle)
        os.remove(fresh)
        env = {
            **os.environ,
            "DATABASE_URL": f"sqlite:///{fresh}",
            "DJANGO_SETTINGS_MODULE": "config.settings",
        }
        env.pop("REDIS_URL", None)
        try:
            migrated = (
                subprocess.run(
                    [sys.executable, "manage.py", "migrate", "--noinput"],
                    cwd=REPO_ROOT,
                    env=env,
                    capture_output=True,
                    timeout=TEMPLATE_WAIT_SECONDS,
                ).returncode
                == 0
            )
        except subprocess.TimeoutExpired:
            migrated = False
        if migrated:
            _SqliteTemplate(fresh).save()
        _SqliteTemplate(fresh).remove_copy()
    finally:
        _lock_release()


@pytest.fixture(scope="session")
def django_db_keepdb(
    request: pytest.FixtureRequest, django_db_modify_db_settings: None, django_db_blocker: Any
) -> Iterator[bool]:
    """True (keep: migrate only what is missing) when the template was copied in; the copy is
    removed at the end of the session, as Django removes a database it created."""
    if request.config.getvalue("reuse_db"):
        yield True
        return
    with django_db_blocker.unblock():
        template = _template_for_this_database(set_up=False)
        try:
            copied = template is not None and not _lock_to_make(template) and template.exists()
            if copied:
                template.copy_in()
        except BaseException:
            _lock_release()
            raise
    try:
        yield copied
    finally:
        _lock_release()
    if copied:
        with django_db_blocker.unblock():
            _connection().close()
            template.remove_copy()


@pytest.fixture(scope="session")
def django_db_setup(django_db_setup: None, django_db_keepdb: bool, django_db_blocker: Any) -> None:
    """pytest-django's set-up; after a full migration, the template for the next processes."""
    try:
        if _making:
            with django_db_blocker.unblock():
                template = _template_for_this_database(set_up=True)
                if template is not None:
                    template.save()
    finally:
        _lock_release()
