"""The campaign dashboard's pairwise section: top-k progress, kappa metrics, agreement."""

from __future__ import annotations

from typing import Any

from labeling.models import Campaign
from pairwise.selectors import campaign_agreement, kappa_metrics, pairwise_settings_get, topk_results


def dashboard_section(campaign: Campaign) -> dict[str, Any] | None:
    """What the section shows, or None when there is nothing to show (a graded campaign
    without doubly judged items)."""
    pairwise = pairwise_settings_get(campaign)
    agreement = campaign_agreement(campaign)
    if pairwise is None:
        if agreement["inferred_from_grades"] is None:
            return None
        return {"pairwise": None, "agreement": agreement}
    heaps = [heap for heap in topk_results(campaign)]
    return {
        "pairwise": pairwise,
        "heaps": heaps,
        "heaps_done": sum(heap.done for heap in heaps),
        "judgments": sum(heap.judgments for heap in heaps),
        "kappa": kappa_metrics(campaign, pairwise.k),
        "agreement": agreement,
    }
