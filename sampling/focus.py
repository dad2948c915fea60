"""Which pooled systems a campaign samples and estimates for (its focus): the ones the
coordinator chose, else the first ones uploaded, as many as the goal compares."""

from __future__ import annotations

from labeling.models import Campaign
from sampling.pool_arrays import PoolArrays, pooled_systems


def focus_indices(campaign: Campaign, arrays: PoolArrays) -> list[int]:
    """Indices of the focus systems among the pooled ones: the named ones, else all (import order)."""
    names = list(arrays.system_names)
    if not names:
        raise ValueError("import runs first: no pooled system")
    return _focus_positions(campaign, names)


def compared_systems(campaign: Campaign) -> list[str]:
    """The pooled systems the sampling plans for, by name: the chosen ones (`focus_systems`), else
    the first ones uploaded, as many as the goal compares (empty without runs)."""
    names = [system.name for system in pooled_systems(campaign)]
    return [names[index] for index in _focus_positions(campaign, names)] if names else []


def goal_words(campaign: Campaign) -> str:
    """The goal in words, a leaderboard with the count of systems it ranks (k of the chosen ones,
    else every pooled run: without chosen systems k names none), not k itself."""
    goal = campaign.get_goal_display().lower()
    if campaign.goal == Campaign.Goal.LEADERBOARD:
        ranked = len(compared_systems(campaign))
        if ranked:
            goal = f"leaderboard of {ranked} system{'s' if ranked != 1 else ''}"
    return goal


def _focus_positions(campaign: Campaign, names: list[str]) -> list[int]:
    chosen = [name for name in (campaign.focus_systems or []) if name in names]
    indices = [names.index(name) for name in chosen] or list(range(len(names)))
    if campaign.goal == Campaign.Goal.ONE:
        return indices[:1]
    if campaign.goal == Campaign.Goal.DIFFERENCE:
        return indices[:2]
    if campaign.goal == Campaign.Goal.LEADERBOARD and campaign.goal_k:
        return indices[: max(1, campaign.goal_k)] if campaign.focus_systems else indices
    return indices
