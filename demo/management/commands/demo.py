"""`manage.py demo`: load the generated demo campaigns and users (safe to run again);
`--logins`: only print the demo's logins (what `serve_with_worker` shows under its address)."""

import logging
from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from demo.loading import demo_load, demo_logins
from labeling.modes import mode_of


class Command(BaseCommand):
    help = (
        "Create demo users (one per role), a running graded demo campaign with three runs, and "
        "top-k, side-by-side and training-data campaigns on the same collection; idempotent."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--logins", action="store_true", help="only print the demo's logins")

    def handle(self, *args: Any, **options: Any) -> None:
        if options["logins"]:
            self.stdout.write("Demo logins:\n" + demo_logins())
            return
        # The demo's judging history recomputes its campaigns about 30 times; those log lines are
        # for the operators of a running server, not for whoever loads the demo.
        recompute_log = logging.getLogger("labeling.recompute")
        level = recompute_log.level
        recompute_log.setLevel(logging.WARNING)
        try:
            campaigns, created = demo_load()
        finally:
            recompute_log.setLevel(level)
        verb = "Created" if created else "Kept"
        self.stdout.write(self.style.SUCCESS(f"{verb} the demo campaigns:"))
        for demo in campaigns:
            self.stdout.write(f"  {demo.pk:>3}  {mode_of(demo).label}: {demo.name}")
        self.stdout.write("Demo logins:\n" + demo_logins())
