"""The top-k demo campaign: the generated collection judged in pairs (HeapSort top-5 of each
topic's best 12 documents, two lists per topic)."""

from __future__ import annotations

from django.db import transaction

from demo.loading import demo_campaign_draft, demo_fill_and_start
from labeling.models import Campaign

# The generated collection judged in pairs: each assessor finds the ordered top 5 of a topic's
# best 12.
DEMO_TOPK_CAMPAIGN = "Demo: sustainable cities, top-5 by pairwise preferences"


@transaction.atomic
def demo_topk_campaign() -> Campaign:
    campaign, created = demo_campaign_draft(
        DEMO_TOPK_CAMPAIGN,
        judging_mode="topk",
        mode_settings={"k": 5, "documents_per_topic": 12},
        overlap=2,  # two lists per topic, so the dashboard can show agreement
        budget=400,
        budget_unit=Campaign.BudgetUnit.JUDGMENTS,
        seed=2025,
    )
    return demo_fill_and_start(campaign) if created else campaign
