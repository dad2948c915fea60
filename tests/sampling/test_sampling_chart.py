"""The sampling chart's colour is what the campaign's goal measures, under every strategy: the
expected difference of the two systems for "Compare two systems" (it showed the first system's
expected DCG), the systems' mean for a leaderboard."""

from __future__ import annotations

import pytest

from labeling.models import Campaign
from labeling.services.campaigns import campaign_update
from sampling import sampling_per_topic, sampling_state_recompute


def _expected(campaign: Campaign, strategy: str) -> dict[str, float]:
    campaign_update(campaign=campaign, strategy=strategy)
    sampling_state_recompute(Campaign.objects.get(pk=campaign.pk), force=True)
    return {str(row["topic"]): float(row["expected"]) for row in sampling_per_topic(campaign)}  # type: ignore[arg-type]


@pytest.mark.parametrize("goal", ["difference", "leaderboard"])
@pytest.mark.parametrize("strategy", ["passive", "items"])
def test_every_strategy_colours_the_chart_with_the_goals_expectation(
    draft_campaign: Campaign, goal: str, strategy: str
) -> None:
    campaign_update(campaign=draft_campaign, goal=goal, goal_k=2 if goal == "leaderboard" else None)
    # The active strategy's distribution is built from this expectation itself.
    reference = _expected(draft_campaign, "active")
    assert _expected(draft_campaign, strategy) == pytest.approx(reference)


def test_the_difference_is_not_the_first_systems_metric(draft_campaign: Campaign) -> None:
    campaign_update(campaign=draft_campaign, goal="difference")
    difference = _expected(draft_campaign, "items")
    campaign_update(campaign=draft_campaign, goal="one")
    first_system = _expected(draft_campaign, "items")
    # Both runs retrieve documents of every topic: the difference is far below one run's DCG.
    assert all(abs(difference[qid]) < first_system[qid] for qid in first_system)
