"""The campaign page's graded section: the compared systems, runs that arrive, the release
verdicts' panel and their forms' actions."""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.urls import reverse
from django.views.decorators.http import require_POST

from graded.forms import (
    ArrivalForm,
    ComparedSystemsForm,
    VerdictDefaultsForm,
    form_errors_text,
)
from graded.views.judging import grade_scale
from labeling.access import campaign_for_page
from labeling.agreement import grade_agreement
from labeling.import_reports import ImportFailed
from labeling.models import Campaign, PoolItem, Verdict
from labeling.permissions import MANAGE
from labeling.selectors import verdict_summary
from labeling.services.campaigns import campaign_update
from sampling import (
    arrival_add,
    compared_systems,
    horizon_unit,
    strategy_for,
)


def campaign_section(request: HttpRequest, campaign: Campaign) -> dict[str, Any]:
    """The campaign page's graded section: grades, agreement, the compared systems, the budget
    planner."""
    can_manage = request.user.has_perm(MANAGE, campaign)
    can_plan = can_manage and PoolItem.objects.filter(campaign=campaign).exists()
    return {
        "template": "graded/_section.html",
        "grades": grade_scale(campaign),
        "agreement": grade_agreement(campaign),
        "compared": compared_panel(campaign, can_manage),
        "arrival": arrival_panel(campaign, can_manage),
        "verdicts": verdicts_panel(campaign, can_manage),
        "plan_url": reverse("api-plan", args=[campaign.pk]) if can_plan else None,
    }


COMPARED_WORDS: dict[str, str] = {
    Campaign.Goal.ONE: "Evaluated system",
    Campaign.Goal.DIFFERENCE: "Compared pair",
    Campaign.Goal.LEADERBOARD: "Leaderboard systems",
    Campaign.Goal.RELATIVE: "Systems compared with their mean",
}


def arrival_panel(campaign: Campaign, can_manage: bool) -> dict[str, Any] | None:
    """The campaign page's form for a run that arrives with a human top-up (None unless the
    coordinator can add one: a strategy that takes arrivals and a draw made)."""
    level = strategy_for(campaign).level
    if not can_manage or not level.takes_arrivals or not campaign.draws.exists():
        return None
    return {
        "form": ArrivalForm(names=_pooled_names(campaign), campaign=campaign),
        "url": reverse("graded:campaign_arrival", args=[campaign.pk]),
        "unit": campaign.get_budget_unit_display().lower(),
        "metric": str(level.evaluation_metric(campaign)),
        "whole_topics": level.draws_whole_topics,
        "by_width": level.topup_by_width,
        "dashboard": reverse("labeling:campaign_dashboard", args=[campaign.pk]) + "#arrivals-panel",
    }


def verdicts_panel(campaign: Campaign, can_manage: bool) -> dict[str, Any] | None:
    """The campaign's release-verdict defaults, from the draft on (None unless the coordinator
    can set them on a strategy that takes arrivals, or the campaign compares two systems)."""
    level = strategy_for(campaign).level
    two_systems = campaign.goal == Campaign.Goal.DIFFERENCE
    if not can_manage or not (level.takes_arrivals or two_systems):
        return None
    return {
        "form": VerdictDefaultsForm(campaign=campaign),
        "url": reverse("graded:campaign_verdict_rule", args=[campaign.pk]),
        "metric": str(level.evaluation_metric(campaign)),
        "two_systems": two_systems,
    }


@login_required
@require_POST
def campaign_arrival(request: HttpRequest, campaign_id: int) -> HttpResponse:
    """A run that arrives (the campaign page's form): pooled with its top-up, then the dashboard's
    arrivals panel follows it; a refusal says why on the campaign page."""
    campaign = campaign_for_page(request, campaign_id, MANAGE)
    form = ArrivalForm(request.POST, request.FILES, names=_pooled_names(campaign), campaign=campaign)
    # A refusal lands at the top of the page, where its message is shown.
    back = reverse("labeling:campaign_detail", args=[campaign.pk])
    if not form.is_valid():
        messages.error(request, f"The run was not added: {form_errors_text(form)}")
        return redirect(back)
    upload = form.cleaned_data["file"]
    try:
        arrival = arrival_add(
            campaign=campaign,
            files=[(upload.name, upload)],
            budget=form.cleaned_data["budget"],
            target_width=form.cleaned_data["target_width"],
            reference=form.cleaned_data["reference"] or None,
            rule=form.cleaned_data["rule"] or None,
            question=form.cleaned_data["question"] or None,
            margin=form.cleaned_data["margin"],
        )
    except ImportFailed as failure:
        reasons = "; ".join(
            f"{error.file}{f' line {error.line}' if error.line else ''}: {error.reason}"
            for error in failure.errors
        )
        messages.error(request, f"The run was not added: {reasons}")
        return redirect(back)
    except ValueError as error:
        messages.error(request, f"The run was not added: {error}")
        return redirect(back)
    chosen = arrival.reference.name if arrival.reference else "-"
    if not arrival.reference_given:
        chosen += " (the best certified run)"
    if arrival.verdict_record.outcome == "unchanged":
        messages.success(
            request,
            f"{arrival.system.name} ranks the same documents as {chosen} at every rank the metric "
            "weighs: unchanged, with no top-up.",
        )
        return redirect(reverse("labeling:campaign_dashboard", args=[campaign.pk]) + "#arrivals-panel")
    planned = (
        f" (planned for a 95 % width of {arrival.target_width:g}; predicted {arrival.planned_width:.3g})"
        if arrival.target_width is not None and arrival.planned_width is not None
        else ""
    )
    messages.success(
        request,
        f"{arrival.system.name} arrived, compared with {chosen}: "
        f"a top-up of {arrival.topup_budget:g} {campaign.get_budget_unit_display().lower()}{planned}. "
        "Its estimate and difference are on the dashboard.",
    )
    return redirect(reverse("labeling:campaign_dashboard", args=[campaign.pk]) + "#arrivals-panel")


@login_required
@require_POST
def campaign_verdict_rule(request: HttpRequest, campaign_id: int) -> HttpResponse:
    """The campaign's verdict defaults (rule, question, margin): what a run that arrives takes
    unless it names its own, and a two-system campaign's plan until its first judgment."""
    campaign = campaign_for_page(request, campaign_id, MANAGE)
    form = VerdictDefaultsForm(request.POST, campaign=campaign)
    page = reverse("labeling:campaign_detail", args=[campaign.pk])
    # A refusal lands at the top of the page, where its message is shown.
    if not form.is_valid():
        messages.error(request, f"Verdict rule not changed: {form_errors_text(form)}")
        return redirect(page)
    try:
        campaign_update(campaign=campaign, **form.cleaned_data)
    except ValueError as error:
        messages.error(request, f"Verdict rule not changed: {error}")
        return redirect(page)
    rule = Campaign.VerdictRule(form.cleaned_data["verdict_rule"]).label
    messages.success(request, f"Verdicts: {rule}.")
    return redirect(page + "#verdicts")


def campaign_verdict_panel(campaign: Campaign) -> dict[str, Any] | None:
    """A two-system campaign's verdict and its plan, for the campaign page and the dashboard
    (None for other goals, or before its plan exists)."""
    if campaign.goal != Campaign.Goal.DIFFERENCE:
        return None
    own = Verdict.objects.filter(campaign=campaign, arrival__isnull=True).first()
    summary = verdict_summary(own)
    if own is None or summary is None:
        return None
    return {
        **summary,
        "first": own.first,
        "second": own.second,
        "decided": own.decided_at,
        "fixed": own.plan_fixed_at is not None,
        "words": VERDICT_WORDS.get(own.outcome, ""),
        "rule_label": own.rule,
        "question_label": Campaign.VerdictQuestion(own.question).label,
        "horizon_unit": horizon_unit(campaign),
    }


VERDICT_WORDS = {
    "better": "is better than",
    "worse": "is worse than",
    "not_worse": "is not worse (within the margin) than",
    "not_better": "is not better (by the margin) than",
    "not_settled": "is not settled against",
    "unchanged": "ranks the same documents as",
}


def compared_panel(campaign: Campaign, can_manage: bool) -> dict[str, Any] | None:
    """What the sampling plans for, by name, whether the coordinator chose it or it is the first
    runs uploaded, and the form to choose (None before any run is pooled)."""
    names = _pooled_names(campaign)
    if not names:
        return None
    current = compared_systems(campaign)
    chosen = bool(campaign.focus_systems)
    initial = {"first": current[0] if current else None, "second": current[1] if len(current) > 1 else None}
    form = ComparedSystemsForm(initial={**initial, "systems": current}, names=names, goal=campaign.goal)
    verdict = campaign_verdict_panel(campaign)
    # Once a judgment fixed the verdict's plan, the pair it reads is fixed too: shown, not a form.
    fixed = verdict is not None and verdict["fixed"]
    return {
        "title": COMPARED_WORDS.get(campaign.goal, "Compared systems"),
        "goal": campaign.goal,
        "verdict": verdict,
        "rule": Campaign.VerdictRule(campaign.verdict_rule).label,
        "current": current,
        "chosen": chosen,
        "form": form if can_manage and not fixed else None,
        "url": reverse("graded:campaign_compared", args=[campaign.pk]),
    }


def _pooled_names(campaign: Campaign) -> list[str]:
    return [system.name for system in campaign.systems.filter(evaluation_only=False).order_by("id")]


@login_required
@require_POST
def campaign_compared(request: HttpRequest, campaign_id: int) -> HttpResponse:
    """Choose the system evaluated, the pair compared or the leaderboard's systems."""
    campaign = campaign_for_page(request, campaign_id, MANAGE)
    names = _pooled_names(campaign)
    form = ComparedSystemsForm(request.POST, names=names, goal=campaign.goal)
    if not form.is_valid():
        messages.error(request, f"Compared systems not changed: {form_errors_text(form)}")
    else:
        try:
            campaign_update(campaign=campaign, focus_systems=form.cleaned_data["chosen"])
        except ValueError as error:
            messages.error(request, f"Compared systems not changed: {error}")
        else:
            joiner = " minus " if campaign.goal == Campaign.Goal.DIFFERENCE else ", "
            title = COMPARED_WORDS.get(campaign.goal, "Compared systems")
            messages.success(request, f"{title}: {joiner.join(form.cleaned_data['chosen'])}.")
    return redirect(reverse("labeling:campaign_detail", args=[campaign.pk]) + "#compared")
