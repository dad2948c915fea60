"""Which campaigns the sampling engine serves: the graded mode's (the other modes draw their own
units). What the engine's webhook events say they can be emitted for."""

from __future__ import annotations

from labeling.models import Campaign


def engine_serves(campaign: Campaign) -> bool:
    """Whether the sampling engine draws this campaign's items (its graded mode): the campaigns
    whose webhook events (budget spent, verdicts, judge runs) it can emit."""
    return campaign.judging_mode == "graded"
