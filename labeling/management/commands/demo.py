"""`manage.py demo`: load the generated demo campaigns and users (safe to run again)."""

from typing import Any

from django.core.management.base import BaseCommand

from labeling.demo import demo_load, demo_logins
from labeling.modes import mode_of


class Command(BaseCommand):
    help = (
        "Create demo users (one per role), a running graded demo campaign with three runs, and "
        "top-k, side-by-side and training-data campaigns on the same collection; idempotent."
    )

    def handle(self, *args: Any, **options: Any) -> None:
        campaigns, created = demo_load()
        verb = "Created" if created else "Kept"
        self.stdout.write(self.style.SUCCESS(f"{verb} the demo campaigns:"))
        for demo in campaigns:
            self.stdout.write(f"  {demo.pk:>3}  {mode_of(demo).label}: {demo.name}")
        self.stdout.write("Demo logins:\n" + demo_logins())
