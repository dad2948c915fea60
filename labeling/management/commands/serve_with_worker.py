"""`manage.py serve_with_worker`: a Celery worker subprocess plus the web server, stopped together."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from typing import Any

from django.conf import settings
from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandParser

from config.celery import worker_argv
from labeling.demo import demo_logins


class Command(BaseCommand):
    help = (
        "Start a Celery worker (kombu filesystem broker under var/, or Redis when REDIS_URL is set) "
        "and the development web server; Ctrl-C stops both."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("addrport", nargs="?", default="127.0.0.1:8000", help="address:port to listen on")

    def handle(self, *args: Any, **options: Any) -> None:
        addrport: str = options["addrport"]
        broker = (
            "Redis at " + settings.REDIS_URL
            if settings.REDIS_URL
            else f"filesystem queue in {settings.CELERY_QUEUE_DIR}"
        )
        worker = subprocess.Popen(
            worker_argv(),
            cwd=settings.BASE_DIR,
            env=os.environ.copy(),
        )
        self.stdout.write(f"Celery worker started (pid {worker.pid}) on the {broker}.")
        host = addrport if ":" in addrport else f"127.0.0.1:{addrport}"
        self.stdout.write(self.style.SUCCESS(f"\nOpen http://{host}/  (API: http://{host}/api/schema/)"))
        self.stdout.write("Demo logins:\n" + demo_logins() + "\n")
        # A plain `kill` (SIGTERM) must stop the worker too, not only Ctrl-C.
        signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(0))
        try:
            call_command("runserver", addrport, use_reloader=False)
        finally:
            worker.terminate()
            try:
                worker.wait(timeout=15)
            except subprocess.TimeoutExpired:
                worker.kill()
                worker.wait()
            self.stdout.write("Celery worker stopped.")
