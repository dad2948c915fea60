"""HTML pages: the pairwise judging page (runs against the REST API), the coordinator's
pairwise settings form, the pair campaign's dashboard and the results page."""

from __future__ import annotations

from typing import Any

from django import forms
from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.http import url_has_allowed_host_and_scheme
from django.views.decorators.http import require_GET, require_http_methods

from labeling.access import campaign_for_page
from labeling.fields import NOTE_MAX_CHARS
from labeling.judge_keys import judge_page_shortcuts
from labeling.models import Campaign, Skip
from labeling.modes import export_links
from labeling.permissions import EXPORT, JUDGE, MANAGE, VIEW_RESULTS
from pairwise import dashboard as pair_dashboard
from pairwise import selectors, services
from pairwise.models import PairwiseSettings, TopKHeap
from pairwise.selectors import is_topk
from pairwise.shortcuts import PAIR

# How often the dashboard reloads its body: as often as labeling's dashboard polls its API.
DASHBOARD_POLL_SECONDS = 5


class PairwiseSettingsForm(forms.ModelForm):
    """The procedure's settings in plain words; the mode is chosen when the campaign is created."""

    class Meta:
        model = PairwiseSettings
        fields = [name for name in services.SETTING_FIELDS if name != "mode"]
        labels = {
            "k": "Documents to select and order (k)",
            "documents_per_topic": "Documents per topic (n)",
            "pairs_per_topic": "Pairs per topic",
            "use_prior_order": "Insert in the runs' order",
            "reuse_answers": "Reuse answers",
            "use_transitivity": "Use transitivity",
            "allow_bad_shortcut": "Clearly-irrelevant shortcut",
        }
        help_texts = {
            "k": "Top-k: each list ends with the best k documents of a topic, best first.",
            "documents_per_topic": "The best n documents of the imported runs, fused by reciprocal rank, "
            "are compared per topic.",
            "pairs_per_topic": "Random pairs drawn per topic; each is judged by as many assessors as "
            "the campaign's overlap.",
            "use_prior_order": "Insert documents in the order of the fused runs; off: in random order.",
            "reuse_answers": "Never ask the same pair twice in one list.",
            "use_transitivity": "Never ask a pair whose order follows from earlier answers.",
            "allow_bad_shortcut": "Offer a one-click “clearly irrelevant” answer for each side.",
        }

    # Settings only one mode uses: the other mode's form leaves them out (and as they are).
    MODE_ONLY = {
        "pairs_per_topic": "pairwise",
        "use_prior_order": "topk",
        "reuse_answers": "topk",
        "use_transitivity": "topk",
    }

    def __init__(self, *args: Any, mode: str, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        for name, only in self.MODE_ONLY.items():
            if only != mode:
                del self.fields[name]
        if mode == "pairwise":
            self.fields["k"].label = "Documents shown per merged order (k)"
            self.fields["k"].help_text = "How many documents the Bradley-Terry order of each topic shows."


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
        "progress_url": reverse("api-progress", args=[campaign.pk]),
    }
    context = {
        "campaign": campaign,
        "pairwise": pairwise,
        "undo_window_seconds": settings.LABELING_UNDO_SECONDS,
        "judge_config": config,
        "shortcuts": judge_page_shortcuts(request.user, {PAIR}),
        # Words of the shared judging chrome (labeling/_judge_chrome.html).
        "judge_unit": "pair",
        "judge_answer": "answer",
        "sides": [("left", "Left", "←"), ("right", "Right", "→")],
    }
    config["skip_url"] = reverse("api-skip", args=[0]).replace("/0/", "/{task}/")
    # A top-k comparison is a step of one sort: a skip hands the query's whole list on.
    topk = is_topk(campaign)
    config["skip_unit"] = context["skip_unit"] = "query's top-k list" if topk else "pair"
    if topk:
        context["skip_consequence"] = (
            "Someone else continues this query's sort where you stopped; it does not come back to you."
        )
    context["skip_reasons"] = Skip.Reason.choices
    context["note_max_chars"] = NOTE_MAX_CHARS
    return render(request, "pairwise/judge.html", context)


@login_required
@require_http_methods(["GET", "POST"])
def settings_edit(request: HttpRequest, campaign_id: int) -> HttpResponse:
    """Change k, n and the improvements of a pair campaign (its mode is chosen at creation)."""
    campaign = campaign_for_page(request, campaign_id, MANAGE)
    form = PairwiseSettingsForm(
        request.POST or None, instance=_pairwise(campaign), mode=campaign.judging_mode
    )
    if request.method == "POST" and form.is_valid():
        try:
            services.pairwise_configure(
                campaign=campaign, **{name: form.cleaned_data[name] for name in form.fields}
            )
        except ValueError as error:
            form.add_error(None, str(error))
        else:
            messages.success(request, "Pairwise settings saved.")
            return redirect("labeling:campaign_detail", campaign_id=campaign.pk)
    topk = campaign.judging_mode == "topk"
    return render(request, "pairwise/settings.html", {"campaign": campaign, "form": form, "topk": topk})


def dashboard_page(request: HttpRequest, campaign: Campaign) -> HttpResponse:
    """A pair campaign's dashboard; the caller has checked that the user may view results.

    With ?fragment=1 only the body, which the page's script fetches every few seconds to stay
    current without a reload.
    """
    pairwise = _pairwise(campaign)
    can_manage = request.user.has_perm(MANAGE, campaign)
    context = {
        "campaign": campaign,
        "pairwise": pairwise,
        "data": pair_dashboard.dashboard_data(campaign, pairwise),
        "exports": export_links(campaign) if request.user.has_perm(EXPORT, campaign) else [],
        "can_manage": can_manage,
        "can_judge": request.user.has_perm(JUDGE, campaign),
        # The Release buttons come back here, wherever this page is mounted.
        "here": request.path,
        "dashboard_config": {
            "fragment_url": f"{request.path}?fragment=1",
            "poll_seconds": DASHBOARD_POLL_SECONDS,
        },
    }
    if request.GET.get("fragment") == "1":
        return render(request, "pairwise/_dashboard_body.html", context)
    return render(request, "pairwise/dashboard.html", context)


@login_required
@require_GET
def dashboard(request: HttpRequest, campaign_id: int) -> HttpResponse:
    """The pair campaign's dashboard is the campaign's dashboard (its mode draws it)."""
    campaign = campaign_for_page(request, campaign_id, VIEW_RESULTS)
    return redirect("labeling:campaign_dashboard", campaign_id=campaign.pk)


@login_required
@require_GET
def results(request: HttpRequest, campaign_id: int) -> HttpResponse:
    """The coordinator's view: top-k per topic and assessor, merged orders, kappa metrics, agreement."""
    campaign = campaign_for_page(request, campaign_id, VIEW_RESULTS)
    pairwise = _pairwise(campaign)
    data = selectors.pairwise_results(campaign, pairwise)
    context = {
        "campaign": campaign,
        "pairwise": pairwise,
        "data": data,
        "exports": export_links(campaign) if request.user.has_perm(EXPORT, campaign) else [],
        "can_manage": request.user.has_perm(MANAGE, campaign),
        "can_judge": request.user.has_perm(JUDGE, campaign),
    }
    return render(request, "pairwise/results.html", context)


@login_required
@require_http_methods(["POST"])
def heap_release(request: HttpRequest, campaign_id: int, heap_id: int) -> HttpResponse:
    """Release an unfinished top-k list from its assessor (a button on the results page and the
    dashboard; `next` says where to go back to)."""
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
    back = request.POST.get("next", "")
    if url_has_allowed_host_and_scheme(
        back, allowed_hosts={request.get_host()}, require_https=request.is_secure()
    ):
        return redirect(back)
    return redirect("pairwise:results", campaign_id=campaign.pk)
