"""The in-process Django set-up of the benchmarks that time the app's own code: a fresh database
(SQLite in `folder`, or `database_url`), migrated, the file cache under `folder`, and the Celery
app on an in-memory broker so that recomputes run where they are called, synchronously."""

from __future__ import annotations

import logging
import os
import sys
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent


def django_for_bench(folder: Path, database_url: str = "", *, quiet: bool = False) -> None:
    """Set Django up on a fresh database; `quiet` silences the INFO lines (a recompute per label
    logs one)."""
    os.environ["DATABASE_URL"] = database_url or f"sqlite:///{folder / 'bench.sqlite3'}"
    os.environ["VAR_DIR"] = str(folder / "var")
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    os.environ.pop("REDIS_URL", None)
    sys.path.insert(0, str(REPO_ROOT))
    import django
    from django.core.management import call_command

    django.setup()
    if quiet:
        logging.disable(logging.INFO)
    call_command("migrate", verbosity=0)
    from config.celery import app

    app.conf.broker_url = "memory://"
    app.conf.broker_transport_options = {}
