"""The side-by-side demo campaign: the three generated runs' top-5 lists on the first topics."""

from __future__ import annotations

from django.db import transaction

from demo.loading import demo_campaign_draft, demo_fill_and_start
from labeling.models import Campaign

DEMO_SXS_CAMPAIGN = "Demo: sustainable cities, top-5 lists side by side"
# The side-by-side demo compares the three runs on the first few topics only.
DEMO_SXS_TOPICS = 4


@transaction.atomic
def demo_sxs_campaign() -> Campaign:
    campaign, created = demo_campaign_draft(
        DEMO_SXS_CAMPAIGN,
        judging_mode="sxs",
        mode_settings={"k": 5},
        budget=100,
        budget_unit=Campaign.BudgetUnit.JUDGMENTS,
        seed=2026,
    )
    return demo_fill_and_start(campaign, topics_limit=DEMO_SXS_TOPICS) if created else campaign
