"""HTML pages: the side-by-side judging page (runs against the REST API), the coordinator's
settings form and the SxS dashboard."""

from __future__ import annotations

from typing import Any

from django import forms
from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_http_methods

from labeling.access import campaign_for_page
from labeling.fields import NOTE_MAX_CHARS
from labeling.judge_keys import judge_page_shortcuts
from labeling.models import Campaign, Skip
from labeling.modes import export_links
from labeling.permissions import EXPORT, JUDGE, MANAGE
from labeling.shortcuts import PageShortcuts
from sxs import selectors, services
from sxs.models import SxsSettings
from sxs.shortcuts import SXS, SXS_GRADE

# How often the dashboard's learned-DCG section asks the API for the latest fit.
LEARNED_POLL_SECONDS = 5

# The five answers with their keys, as the page shows them left to right.
# Their keys are the assessor's (labeling/shortcuts.py); "much better" is also Shift+arrow.
ANSWER_BUTTONS: list[dict[str, Any]] = [
    {"value": -2, "action": "sxs_left_much", "label": "Left much better"},
    {"value": -1, "action": "sxs_left", "label": "Left better"},
    {"value": 0, "action": "sxs_same", "label": "About the same"},
    {"value": 1, "action": "sxs_right", "label": "Right better"},
    {"value": 2, "action": "sxs_right_much", "label": "Right much better"},
]
_SECOND_KEYS = {-2: "⇧←", -1: "sxs_left_arrow", 0: "sxs_same_arrow", 1: "sxs_right_arrow", 2: "⇧→"}


def _answer_buttons(shortcuts: PageShortcuts) -> list[dict[str, Any]]:
    """The answers with their second key as shown (an arrow), none when single keys are off."""
    shown = shortcuts.shown
    buttons = []
    for answer in ANSWER_BUTTONS:
        second = _SECOND_KEYS[answer["value"]]
        arrow = second if second.startswith("⇧") else shown.get(second, "")
        buttons.append({**answer, "arrow": arrow if shortcuts.enabled else ""})
    return buttons


class SxsSettingsForm(forms.ModelForm):
    # Fields that only the paper's QP reads (the page says so next to them).
    QP_ONLY = ("c_tie", "c_tie_grid", "much_better_margin")

    class Meta:
        model = SxsSettings
        fields = list(services.SETTING_FIELDS)
        labels = {
            "k": "Results per list (K)",
            "unjudged": "Documents without a grade",
            "selection": "Which comparison next",
            "random_start": "Random answers before margin selection",
            "fit_method": "How to learn gains and discounts",
            "c_grid": "Values of C to try",
            "c_tie": "Cost of 'about the same' answers (C_t)",
            "c_tie_grid": "Values of C_t to try",
            "folds": "Cross-validation folds",
            "ties": "Learn from 'about the same' answers",
            "monotone_discounts": "Discounts never grow down the list",
            "much_better_margin": "'Much better' margin",
        }

    def list_fields(self) -> list[forms.BoundField]:
        """What the tasks are made from (fixed once an answer exists)."""
        return [self[name] for name in services.TASK_FIELDS]

    def fit_fields(self) -> list[forms.BoundField]:
        """How learned DCG is fitted (may change at any time; a change refits)."""
        return [self[name] for name in services.FIT_FIELDS]


def _settings(campaign: Campaign) -> SxsSettings:
    found = selectors.sxs_settings_get(campaign)
    if found is None:
        raise Http404("This campaign does not judge side by side.")
    return found


def judge_page(request: HttpRequest, campaign: Campaign) -> HttpResponse:
    """The query above two result lists; items come from and go to the REST API without reloads."""
    sxs = _settings(campaign)
    grades = [{"value": value, **grade} for value, grade in enumerate(campaign.grades)]
    shortcuts = judge_page_shortcuts(request.user, {SXS, SXS_GRADE}, [grade["key"] for grade in grades])
    answers = _answer_buttons(shortcuts)
    config = {
        "campaign": campaign.pk,
        "k": sxs.k,
        "grades": grades,
        "answers": answers,
        "undo_window_seconds": settings.LABELING_UNDO_SECONDS,
        "next_url": reverse("api-next", args=[campaign.pk]),
        "answer_url": reverse("api-answer", args=[0]).replace("/0/", "/{task}/"),
        "skip_url": reverse("api-skip", args=[0]).replace("/0/", "/{task}/"),
        "lease_url": reverse("api-lease", args=[0]).replace("/0/", "/{task}/"),
        "undo_url": reverse("api-undo", args=[campaign.pk]),
        "progress_url": reverse("api-progress", args=[campaign.pk]),
    }
    context = {
        "campaign": campaign,
        "sxs": sxs,
        "grades": grades,
        "answers": answers,
        "undo_window_seconds": settings.LABELING_UNDO_SECONDS,
        "judge_config": config,
        "shortcuts": shortcuts,
        # Words of the shared judging chrome (labeling/_judge_chrome.html).
        "judge_unit": "comparison",
        "judge_answer": "answer",
        # The skip box every judge page shares (labeling/_skip_form.html): comparisons and the
        # single documents shown to grade first skip alike.
        "skip_unit": "item",
        "skip_reasons": Skip.Reason.choices,
        "note_max_chars": NOTE_MAX_CHARS,
    }
    return render(request, "sxs/judge.html", context)


def dashboard_page(request: HttpRequest, campaign: Campaign) -> HttpResponse:
    """An SxS campaign's dashboard; the caller has checked that the user may view results."""
    targets = selectors.apply_targets(request.user, campaign)
    context = {
        "campaign": campaign,
        "sxs": _settings(campaign),
        "data": selectors.dashboard_data(campaign),
        "exports": export_links(campaign) if request.user.has_perm(EXPORT, campaign) else [],
        "can_judge": request.user.has_perm(JUDGE, campaign),
        "apply_targets": targets,
        # What static/sxs/learned-dcg.js reads (a json_script block: no inline script).
        "learned_config": {
            "learned_url": reverse("api-learned-dcg", args=[campaign.pk]),
            "apply_url": reverse("api-learned-dcg-apply", args=[campaign.pk]),
            "campaign_url": reverse("labeling:campaign_detail", args=[0]).replace("/0/", "/{id}/"),
            "poll_seconds": LEARNED_POLL_SECONDS,
        },
    }
    return render(request, "sxs/dashboard.html", context)


@login_required
@require_http_methods(["GET", "POST"])
def settings_edit(request: HttpRequest, campaign_id: int) -> HttpResponse:
    """Change K, the unjudged policy and the selection rule (before the first answer) and the
    learned-DCG fit's choices (at any time)."""
    campaign = campaign_for_page(request, campaign_id, MANAGE)
    form = SxsSettingsForm(request.POST or None, instance=_settings(campaign))
    if request.method == "POST" and form.is_valid():
        try:
            services.sxs_configure(
                campaign=campaign, **{name: form.cleaned_data[name] for name in form.fields}
            )
        except ValueError as error:
            form.add_error(None, str(error))
        else:
            messages.success(request, "Side-by-side settings saved.")
            return redirect("labeling:campaign_detail", campaign_id=campaign.pk)
    context = {"campaign": campaign, "form": form, "qp_only": SxsSettingsForm.QP_ONLY}
    return render(request, "sxs/settings.html", context)
