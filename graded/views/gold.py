"""The campaign page's gold panel and the gold form's action."""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.contrib.auth import get_user_model
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect
from django.views.decorators.http import require_POST

from graded import gold
from graded.forms import (
    GoldForm,
)
from graded.models import GoldItem, GoldSettings
from labeling.access import campaign_for_page
from labeling.models import Campaign, Judgment
from labeling.permissions import MANAGE


def gold_panel(campaign: Campaign) -> dict[str, Any]:
    """The campaign page's gold panel (graded tasks in every mode that has them): counts, the
    settings form, per-assessor quality, and the notice of paused assessors at the top."""
    record = GoldSettings.objects.filter(campaign=campaign).first()
    initial = {"share": 0.0, "qualification": 0, "min_accuracy": 0.0, "min_answers": 5}
    if record is not None:
        initial = {
            "share": round(100 * record.share, 2),
            "qualification": record.qualification,
            "min_accuracy": round(100 * record.min_accuracy, 2),
            "min_answers": record.min_answers,
        }
    quality = gold.gold_quality(campaign)
    return {
        "template": "graded/_gold.html",
        "notice_template": "graded/_gold_notice.html",
        "items": GoldItem.objects.filter(campaign=campaign).count(),
        "qrels": Judgment.objects.filter(campaign=campaign, source=Judgment.Source.QRELS).count(),
        "form": GoldForm(initial=initial),
        "quality": quality,
        "paused": [row["assessor"] for row in quality if row["paused"]],
    }


@login_required
@require_POST
def campaign_gold(request: HttpRequest, campaign_id: int) -> HttpResponse:
    """Gold settings, marking gold items, or resuming a paused assessor (by the button pressed)."""
    campaign = campaign_for_page(request, campaign_id, MANAGE)
    action = request.POST.get("action", "settings")
    if action == "mark":
        made = (
            gold.gold_mark_agreed(campaign=campaign)
            if request.POST.get("source") == "agreed"
            else gold.gold_mark_from_qrels(campaign=campaign)
        )
        messages.success(request, f"{made} new gold item(s).")
    elif action == "resume":
        user = get_object_or_404(get_user_model(), username=request.POST.get("username", ""))
        gold.gold_resume(campaign=campaign, assessor=user)
        messages.success(
            request, f"{user.get_username()} can judge again; their earlier gold answers no longer count."
        )
    else:
        form = GoldForm(request.POST)
        if not form.is_valid():
            messages.error(request, f"Gold settings not changed: {form.errors.as_text()}")
        else:
            data = form.cleaned_data
            gold.gold_configure(
                campaign=campaign,
                share=data["share"] / 100,
                qualification=data["qualification"],
                min_accuracy=data["min_accuracy"] / 100,
                min_answers=data["min_answers"],
            )
            messages.success(request, "Gold settings saved.")
    return redirect("labeling:campaign_detail", campaign_id=campaign.pk)
