"""HTML pages: the pairwise judging page (runs against the REST API), the coordinator's
pairwise settings form and the results page."""

from __future__ import annotations

from django import forms
from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_http_methods

from labeling.access import campaign_for_page
from labeling.models import Campaign
from labeling.modes import exports_of
from labeling.permissions import EXPORT, JUDGE, MANAGE, VIEW_RESULTS
from pairwise import selectors, services
from pairwise.models import PairwiseSettings, TopKHeap


class PairwiseSettingsForm(forms.ModelForm):
    class Meta:
        model = PairwiseSettings
        fields = list(services.SETTING_FIELDS)
        labels = {
            "k": "k: documents to find and order (top-k mode)",
            "documents_per_topic": "Documents compared per topic (n)",
            "pairs_per_topic": "Random pairs per topic (pairwise mode)",
            "use_prior_order": "Insert documents in the runs' order",
            "reuse_answers": "Never ask a pair twice",
            "use_transitivity": "Infer pairs from earlier answers (transitivity)",
            "allow_bad_shortcut": "Offer the clearly-irrelevant shortcut",
        }
        help_texts = {
            "k": "How many documents the top-k list holds, best first.",
            "documents_per_topic": "The best n documents of the fused runs (reciprocal rank) are compared.",
            "pairs_per_topic": "Each pair is judged as many times as the campaign's overlap.",
            "use_prior_order": "Otherwise in random order; the runs' order needs fewer comparisons.",
            "reuse_answers": "An answer given once for a pair is used again instead of asking.",
            "use_transitivity": "A pair whose order follows from earlier answers is not asked.",
            "allow_bad_shortcut": "One click marks a document clearly irrelevant; it is never shown again.",
        }


def _pairwise(campaign: Campaign) -> PairwiseSettings:
    pairwise = selectors.pairwise_settings_get(campaign)
    if pairwise is None:
        raise Http404("This campaign does not judge in pairs.")
    return pairwise


@login_required
@require_GET
def judge(request: HttpRequest, campaign_id: int) -> HttpResponse:
    """The pair judging page at its own address (the campaign's /judge/ page shows the same)."""
    return judge_page(request, campaign_for_page(request, campaign_id, JUDGE))


def judge_page(request: HttpRequest, campaign: Campaign) -> HttpResponse:
    """Two documents side by side; pairs come from and go to the REST API without reloads."""
    pairwise = _pairwise(campaign)
    config = {
        "campaign": campaign.pk,
        "mode": campaign.judging_mode,
        "allow_bad_shortcut": pairwise.allow_bad_shortcut,
        "undo_window_seconds": settings.LABELING_UNDO_SECONDS,
        "next_url": reverse("api-pairwise-next", args=[campaign.pk]),
        "answer_url": reverse("api-pairwise-answer", args=[campaign.pk, 0]).replace("/0/", "/{task}/"),
        "undo_url": reverse("api-pairwise-undo", args=[campaign.pk]),
    }
    context = {
        "campaign": campaign,
        "pairwise": pairwise,
        "undo_window_seconds": settings.LABELING_UNDO_SECONDS,
        "judge_config": config,
        # Words of the shared judging chrome (labeling/_judge_chrome.html).
        "judge_unit": "pair",
        "judge_answer": "answer",
        "sides": [("left", "Left", "←"), ("right", "Right", "→")],
    }
    return render(request, "pairwise/judge.html", context)


@login_required
@require_http_methods(["GET", "POST"])
def settings_edit(request: HttpRequest, campaign_id: int) -> HttpResponse:
    """Change a pair campaign's k, n and the improvements (until the first pair is answered)."""
    campaign = campaign_for_page(request, campaign_id, MANAGE)
    current = _pairwise(campaign)
    form = PairwiseSettingsForm(request.POST or None, instance=current)
    if request.method == "POST" and form.is_valid():
        try:
            services.pairwise_configure(
                campaign=campaign, **{name: form.cleaned_data[name] for name in services.SETTING_FIELDS}
            )
        except ValueError as error:
            form.add_error(None, str(error))
        else:
            messages.success(request, "Pairwise settings saved.")
            return redirect("labeling:campaign_detail", campaign_id=campaign.pk)
    return render(request, "pairwise/settings.html", {"campaign": campaign, "form": form})


@login_required
@require_GET
def results(request: HttpRequest, campaign_id: int) -> HttpResponse:
    """The coordinator's view: top-k per topic and assessor, merged orders, kappa metrics, agreement."""
    return dashboard_page(request, campaign_for_page(request, campaign_id, VIEW_RESULTS))


def dashboard_page(request: HttpRequest, campaign: Campaign) -> HttpResponse:
    """A pair campaign's results: top-k per topic and assessor, merged orders, kappa metrics,
    agreement and downloads (the caller checked the right to view results)."""
    pairwise = _pairwise(campaign)
    data = selectors.pairwise_results(campaign, pairwise)
    exports = []
    if request.user.has_perm(EXPORT, campaign):
        exports = [
            (export.label, reverse(export.name, args=[campaign.pk])) for export in exports_of(campaign)
        ]
    context = {
        "campaign": campaign,
        "pairwise": pairwise,
        "data": data,
        "exports": exports,
        "can_manage": request.user.has_perm(MANAGE, campaign),
    }
    return render(request, "pairwise/results.html", context)


@login_required
@require_http_methods(["POST"])
def heap_release(request: HttpRequest, campaign_id: int, heap_id: int) -> HttpResponse:
    """Release an unfinished top-k list from its assessor (a button on the results page)."""
    campaign = campaign_for_page(request, campaign_id, MANAGE)
    _pairwise(campaign)
    try:
        heap = services.heap_release(campaign=campaign, heap_id=heap_id)
    except TopKHeap.DoesNotExist:
        raise Http404("No such top-k heap in this campaign.") from None
    except ValueError as error:
        messages.error(request, str(error))
    else:
        messages.success(
            request, f"Topic {heap.topic.qid}: released; the next assessor continues this top-k list."
        )
    return redirect("pairwise:results", campaign_id=campaign.pk)
