"""The judge page of a graded campaign: the grade scale and the page itself."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.urls import reverse

from labeling.fields import NOTE_MAX_CHARS
from labeling.judge_keys import judge_page_shortcuts
from labeling.models import Campaign, Skip

# The judge page's name for its keyboard actions (labeling.shortcuts; GradedTasksMode.shortcut_pages).
GRADED_PAGE = "graded"


def grade_scale(campaign: Campaign) -> list[dict[str, Any]]:
    """The campaign's grades with their values and keys, lowest first."""
    return [
        {
            "value": value,
            "name": grade["name"],
            "key": grade["key"],
            "description": grade.get("description", ""),
        }
        for value, grade in enumerate(campaign.grades)
    ]


def judge_page(request: HttpRequest, campaign: Campaign) -> HttpResponse:
    """The graded judge page: the query beside a document and its grade buttons; items come
    from and go to the REST API without reloads."""
    grades = grade_scale(campaign)
    undo_seconds = settings.LABELING_UNDO_SECONDS
    shortcuts = judge_page_shortcuts(request.user, {GRADED_PAGE}, [grade["key"] for grade in grades])
    config = {
        "campaign": campaign.pk,
        "grades": grades,
        "undo_window_seconds": undo_seconds,
        "next_url": reverse("api-next", args=[campaign.pk]),
        "answer_url": reverse("api-answer", args=[0]).replace("/0/", "/{task}/"),
        "undo_url": reverse("api-undo", args=[campaign.pk]),
        "skip_url": reverse("api-skip", args=[0]).replace("/0/", "/{task}/"),
        "lease_url": reverse("api-lease", args=[0]).replace("/0/", "/{task}/"),
        "progress_url": reverse("api-progress", args=[campaign.pk]),
        "login_url": reverse("login"),
    }
    context = {
        "campaign": campaign,
        "grades": grades,
        "undo_window_seconds": undo_seconds,
        "judge_config": config,
        "shortcuts": shortcuts,
        "skip_reasons": Skip.Reason.choices,
        "note_max_chars": NOTE_MAX_CHARS,
        # Words of the shared judging chrome (labeling/_judge_chrome.html).
        "judge_unit": "item",
        "judge_answer": "judgment",
    }
    return render(request, "graded/judge.html", context)
