"""The live dashboard of a graded campaign and its model summary."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import render
from django.urls import reverse
from django.views.decorators.http import require_GET

from graded import gold
from graded.views.campaign import campaign_verdict_panel
from labeling.access import campaign_for_page
from labeling.models import Campaign
from labeling.modes import export_links, mode_of
from labeling.permissions import EXPORT, MANAGE, VIEW_RESULTS
from labeling.services.skips import items_skipped_by_every_assessor, notes_and_skips, skip_counts
from sampling import (
    campaign_model_summary,
    compared_systems,
    judges_dashboard,
    level_presentations,
    pooled_systems,
    strategy_for,
)

# How often the dashboard polls the API: often enough to feel live, rare enough to stay cheap.
DASHBOARD_POLL_SECONDS = 5


def dashboard_page(request: HttpRequest, campaign: Campaign) -> HttpResponse:
    """Estimates with intervals, their history, the budget, the sampling distribution and
    throughput; the page polls the REST API."""
    api = {
        name: reverse(f"api-{name}", args=[campaign.pk])
        for name in (
            "estimates",
            "estimates-history",
            "sampling",
            "throughput",
            "progress",
            "evaluate",
            "arrivals",
        )
    }
    can_manage = request.user.has_perm(MANAGE, campaign)
    takes_arrivals = strategy_for(campaign).level.takes_arrivals
    config = {
        "campaign": campaign.pk,
        "metric": campaign.metric,
        "urls": {**api, "model": reverse("graded:dashboard_model", args=[campaign.pk])},
        "poll_seconds": DASHBOARD_POLL_SECONDS,
        "can_evaluate": can_manage,
        # A run that arrives with a human top-up (item-level strategies): its panel lists them.
        "arrivals": takes_arrivals,
        "can_arrive": can_manage and takes_arrivals and campaign.draws.exists(),
        # The history chart starts with these when many runs would overlap.
        "focus": compared_systems(campaign),
        # How each sampling level's estimate rows are shown (the estimates name their level).
        "levels": level_presentations(),
    }
    context = {
        "campaign": campaign,
        "model": campaign_model_summary(campaign),
        "exports": export_links(campaign, "dashboard") if request.user.has_perm(EXPORT, campaign) else [],
        "dashboard_config": config,
        "can_manage": can_manage,
        "skips": skip_counts(campaign),
        "skipped_by_everyone": items_skipped_by_every_assessor(campaign),
        "notes": notes_and_skips(campaign),
        "gold_paused": gold.gold_paused_assessors(campaign) if can_manage else [],
        "judges_panel": judges_dashboard(campaign),
        "pooled_systems": [system.name for system in pooled_systems(campaign)] if takes_arrivals else [],
        # A width is planned where single documents are drawn (not where topics are drawn whole).
        "arrival_width_metric": (
            str(strategy_for(campaign).level.evaluation_metric(campaign))
            if takes_arrivals and strategy_for(campaign).level.topup_by_width
            else ""
        ),
        "campaign_verdict": campaign_verdict_panel(campaign),
        # The arrival form's verdict fields (its plan, fixed when the run is submitted).
        "verdict_rules": list(Campaign.VerdictRule.values),
        "verdict_questions": Campaign.VerdictQuestion.choices,
        "arrival_metric": str(strategy_for(campaign).level.evaluation_metric(campaign))
        if takes_arrivals
        else "",
    }
    return render(request, "graded/dashboard.html", context)


@login_required
@require_GET
def dashboard_model(request: HttpRequest, campaign_id: int) -> JsonResponse:
    """The strategy and the label and cost models of the last refit, for the dashboard (404 for a
    campaign whose mode does not sample)."""
    campaign = campaign_for_page(request, campaign_id, VIEW_RESULTS)
    if not mode_of(campaign).uses_sampling:
        raise Http404("This campaign's judging mode does not sample.")
    return JsonResponse(campaign_model_summary(campaign))
