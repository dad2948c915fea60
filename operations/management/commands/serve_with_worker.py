"""`manage.py serve_with_worker`: a Celery worker subprocess plus the web server, stopped together.

By default the web server is gunicorn (`config/gunicorn.py`: gthread workers, several processes
with a few threads each), which serves a team of assessors at once; `--dev` runs Django's
development server with autoreload instead (one process, for changing the code).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from typing import Any

from django.conf import settings
from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandParser

from config.celery import worker_argv


def gunicorn_argv(bind: str, *extra: str) -> list[str]:
    """The command line of the web server `make run` starts: gunicorn with config/gunicorn.py."""
    return [
        sys.executable,
        "-m",
        "gunicorn",
        "config.wsgi",
        "--config",
        str(settings.BASE_DIR / "config" / "gunicorn.py"),
        "--bind",
        bind,
        *extra,
    ]


def _stop(process: subprocess.Popen[bytes], timeout: float = 15) -> None:
    if process.poll() is None:
        process.terminate()
    try:
        process.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


class Command(BaseCommand):
    help = (
        "Start a Celery worker (kombu filesystem broker under var/, or Redis when REDIS_URL is set) "
        "and gunicorn (or, with --dev, the development server with autoreload); Ctrl-C stops both."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("addrport", nargs="?", default="127.0.0.1:8000", help="address:port to listen on")
        parser.add_argument(
            "--dev", action="store_true", help="the development server with autoreload instead of gunicorn"
        )
        parser.add_argument("--workers", type=int, default=None, help="gunicorn processes (else config's)")
        parser.add_argument(
            "--threads", type=int, default=None, help="gunicorn threads per process (config/gunicorn.py's)"
        )

    def handle(self, *args: Any, **options: Any) -> None:
        addrport: str = options["addrport"]
        host = addrport if ":" in addrport else f"127.0.0.1:{addrport}"
        # The autoreloader runs this command again in a child (RUN_MAIN=true) and restarts that
        # child on every change: the worker belongs to the outer process, started once.
        reloaded_child = os.environ.get("RUN_MAIN") == "true"
        worker = deliverer = None
        if not reloaded_child:
            broker = (
                "Redis at " + settings.REDIS_URL
                if settings.REDIS_URL
                else f"filesystem queue in {settings.CELERY_QUEUE_DIR}"
            )
            worker = subprocess.Popen(worker_argv(), cwd=settings.BASE_DIR, env=os.environ.copy())
            self.stdout.write(f"Celery worker started (pid {worker.pid}) on the {broker}.")
            # Webhook deliveries have a worker of their own: a slow receiver never delays a recompute.
            deliverer_argv = worker_argv(
                "-Q", settings.WEBHOOKS_QUEUE, "-n", "webhooks@%h", threads=settings.WEBHOOK_DELIVERY_SLOTS
            )
            deliverer = subprocess.Popen(deliverer_argv, cwd=settings.BASE_DIR, env=os.environ.copy())
            self.stdout.write(f"Webhook worker started (pid {deliverer.pid}).")
            self.stdout.write(
                self.style.SUCCESS(f"\nOpen http://{host}/  (API docs: http://{host}/api/docs/)")
            )
            # By the command's name: the core does not import the demo app that builds on it.
            call_command("demo", logins=True, stdout=self.stdout)
            self.stdout.write("")
        # A plain `kill` (SIGTERM) must stop the worker too, not only Ctrl-C.
        signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(0))
        try:
            if options["dev"]:
                call_command("runserver", host, use_reloader=True)
            else:
                self._gunicorn(host, options["workers"], options["threads"], worker)
        except KeyboardInterrupt:
            pass
        finally:
            if deliverer is not None:
                _stop(deliverer)
            if worker is not None:
                _stop(worker)
                self.stdout.write("Celery workers stopped.")

    def _gunicorn(
        self, host: str, workers: int | None, threads: int | None, worker: subprocess.Popen[bytes] | None
    ) -> None:
        """Run gunicorn until it exits, or until the worker dies (then stop gunicorn too)."""
        extra: list[str] = []
        if workers:
            extra += ["--workers", str(workers)]
        if threads:
            extra += ["--threads", str(threads)]
        server = subprocess.Popen(gunicorn_argv(host, *extra), cwd=settings.BASE_DIR, env=os.environ.copy())
        self.stdout.write(f"gunicorn started (pid {server.pid}).")
        try:
            while server.poll() is None:
                if worker is not None and worker.poll() is not None:
                    self.stderr.write(f"The Celery worker exited (code {worker.returncode}); stopping.")
                    break
                time.sleep(0.5)
        finally:
            # gunicorn stops its workers gracefully on SIGTERM (Ctrl-C has reached it already).
            _stop(server, timeout=35)
            self.stdout.write("gunicorn stopped.")
