"""What the graded dashboard shows of the sampling engine: the strategy, the label model and the
cost model of the last refit, in words and numbers."""

from __future__ import annotations

from typing import Any

from labeling.models import Campaign
from sampling.focus import goal_words
from sampling.models import SamplingState
from sampling.strategies import strategy_for

# Below this R² the dashboard says that document length barely predicts judging time.
WEAK_COST_FIT_R2 = 0.1


def campaign_model_summary(campaign: Campaign) -> dict[str, Any]:
    """What the dashboard shows about the sampler: strategy, level, and the label and cost
    models of the last refit (None before the first one)."""
    record = SamplingState.objects.filter(campaign=campaign).first()
    strategy = strategy_for(campaign)
    summary: dict[str, Any] = {
        "strategy": campaign.strategy,
        "strategy_label": strategy.label,
        "level": strategy.level.name,
        "goal": campaign.goal,
        "goal_label": goal_words(campaign),
        "focus_systems": list(campaign.focus_systems or []),
        "metric": campaign.metric,
        "status": campaign.status,
        "mix": campaign.mix,
        "label_model": None,
        "cost_model": None,
        "refit_at": None,
        "version": None,
    }
    if record is None:
        return summary
    label = dict(record.label_model or {})
    cost = dict(record.cost_model or {})
    summary.update(
        refit_at=record.updated_at.isoformat(),
        version=record.version,
        focus_systems=label.get("focus_systems") or summary["focus_systems"],
        label_model={
            key: label.get(key)
            for key in ("kind", "n_labels", "prior_strength", "prior_weight", "default_prior")
        },
        cost_model={
            **{key: cost.get(key) for key in ("kind", "n_points", "r_squared", "rmse", "fit_refused")},
            "weak_fit": cost_fit_is_weak(cost),
        },
    )
    return summary


def cost_fit_is_weak(cost_model: dict[str, Any]) -> bool:
    """True when a fitted cost model explains little of the judging time: not an error (items
    are then priced about the same, as the data says), but worth saying on the dashboard."""
    r_squared = cost_model.get("r_squared")
    return cost_model.get("kind") == "fitted" and r_squared is not None and r_squared < WEAK_COST_FIT_R2
