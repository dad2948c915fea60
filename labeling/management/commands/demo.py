"""`manage.py demo`: load the generated demo campaign and users (safe to run again)."""

from typing import Any

from django.core.management.base import BaseCommand

from labeling.demo import DEMO_SXS_CAMPAIGN, DEMO_TOPK_CAMPAIGN, demo_load, demo_logins
from labeling.models import Campaign


class Command(BaseCommand):
    help = (
        "Create demo users (one per role), a running graded demo campaign with three runs and a "
        "top-k and a side-by-side campaign on the same collection; idempotent."
    )

    def handle(self, *args: Any, **options: Any) -> None:
        campaign, created = demo_load()
        verb = "Created" if created else "Kept existing"
        self.stdout.write(self.style.SUCCESS(f"{verb} demo campaign {campaign.name!r} (id {campaign.pk})."))
        topk = Campaign.objects.get(name=DEMO_TOPK_CAMPAIGN)
        self.stdout.write(self.style.SUCCESS(f"Pairwise judging: {topk.name!r} (id {topk.pk})."))
        sxs = Campaign.objects.get(name=DEMO_SXS_CAMPAIGN)
        self.stdout.write(self.style.SUCCESS(f"Side-by-side judging: {sxs.name!r} (id {sxs.pk})."))
        self.stdout.write("Demo logins:\n" + demo_logins())
