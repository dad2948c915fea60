"""The Celery application; tasks are discovered in each installed app's tasks.py."""

import os
import sys

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

if "celery" in os.path.basename(os.path.dirname(sys.argv[0])) or os.path.basename(sys.argv[0]) == "celery":
    # The `celery` command (or `python -m celery`): a refusal is one line before Celery's own
    # start-up wraps it in a traceback. Imported anywhere else, the settings load when used.
    from config.startup import settings_or_exit

    settings_or_exit("celery")

app = Celery("config")
# All CELERY_* settings live in Django's settings module.
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()


def worker_argv(*extra: str, threads: int = 0) -> list[str]:
    """The command line of one Celery worker process for this project: solo pool (one task at a
    time; run more workers for more), or with `threads` that many tasks at once in threads (the
    webhooks worker: its tasks wait on the network, and one slow receiver must not hold the
    others); no gossip or mingle (workers coordinate through the database and the cache, not
    with each other). Several workers on one broker need distinct node names: pass
    ``-n worker1@%h``, ``-n worker2@%h``."""
    pool = ["--pool=threads", f"--concurrency={threads}"] if threads else ["--pool=solo"]
    return [
        sys.executable,
        "-m",
        "celery",
        "-A",
        "config",
        "worker",
        *pool,
        "--loglevel=INFO",
        "--without-gossip",
        "--without-mingle",
        *extra,
    ]
