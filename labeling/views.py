"""HTML pages: home, the assessor's judging page and the coordinator's campaign pages.

Each view checks the role, validates one form, calls one service and redirects or renders.
Judging itself runs in the browser against the REST API (static/graded/judge.js).
"""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.core.paginator import Paginator
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from labeling import dashboard, selectors
from labeling.access import campaign_for_page, request_user
from labeling.forms import (
    AssignForm,
    BudgetForm,
    CampaignCreateForm,
    GuidelinesForm,
    ShortcutsForm,
    UploadForm,
)
from labeling.import_reports import ImportFailed, upload_kind
from labeling.models import Campaign, Judgment
from labeling.modes import (
    campaign_panels,
    campaign_preflight,
    campaign_progress,
    export_links,
    mode_of,
    shortcut_action,
    shortcut_actions,
)
from labeling.permissions import EXPORT, JUDGE, MANAGE, VIEW_RESULTS, is_admin, is_coordinator
from labeling.services import campaign_copies
from labeling.services import campaigns as campaign_services
from labeling.services.own_judgments import judgment_regrade
from labeling.services.preferences import shortcuts_update
from labeling.services.skips import items_skipped_by_every_assessor, skip_counts
from labeling.shortcuts import ShortcutsInvalid


@login_required
@require_GET
def home(request: HttpRequest) -> HttpResponse:
    """The user's campaigns: those to judge and, for coordinators, those to manage."""
    can_manage = is_coordinator(request.user)
    return render(
        request,
        "labeling/home.html",
        {
            "judging": dashboard.campaigns_to_judge(request.user),
            "managing": dashboard.campaigns_listed(request.user) if can_manage else [],
            "can_manage": can_manage,
        },
    )


@login_required
@require_GET
def campaign_list(request: HttpRequest) -> HttpResponse:
    """Every campaign the coordinator manages: search, filter by status or archived, and clone,
    archive or (admins) delete."""
    if not is_coordinator(request.user):
        raise PermissionDenied("Only coordinators and admins manage campaigns.")
    search = request.GET.get("q", "")[:200]
    status = request.GET.get("status", "")
    if status not in dashboard.LIST_FILTERS:
        status = ""
    campaigns = dashboard.campaigns_listed(request.user, search=search, status=status)
    return render(
        request,
        "labeling/campaign_list.html",
        {
            "campaigns": campaigns,
            "search": search,
            "status": status,
            "filters": [
                ("", "Active and drafts"),
                *Campaign.Status.choices,
                (dashboard.ARCHIVED, "Archived"),
            ],
            "can_delete": is_admin(request.user),
        },
    )


@login_required
@require_http_methods(["GET", "POST"])
def campaign_clone(request: HttpRequest, campaign_id: int) -> HttpResponse:
    """A new draft with this campaign's settings, files and assessors, without judgments."""
    campaign = campaign_for_page(request, campaign_id, MANAGE)
    if not is_coordinator(request.user):
        raise PermissionDenied("Only coordinators and admins create campaigns.")
    name = request.POST.get("name", "").strip()[:200] or f"{campaign.name} (copy)"
    with_arrivals = request.POST.get("with_arrivals") == "1"
    problem = ""
    if request.method == "POST":
        try:  # the mode may refuse settings stored under an operator limit lowered since
            clone = campaign_copies.campaign_clone(
                campaign=campaign, creator=request_user(request), name=name, with_arrivals=with_arrivals
            )
        except ValueError as error:
            problem = str(error)
    if request.method == "POST" and not problem:
        judges = selectors.campaign_counts(campaign)["judges"]
        not_copied = (
            f" Its {judges} model judge(s) were not copied: add them under Model judges." if judges else ""
        )
        messages.success(
            request, f"Cloned “{campaign.name}” as “{clone.name}”: settings, files and assessors.{not_copied}"
        )
        return redirect("labeling:campaign_detail", campaign_id=clone.pk)
    return render(
        request,
        "labeling/campaign_clone.html",
        {
            "campaign": campaign,
            "name": name,
            "counts": selectors.campaign_counts(campaign),
            "arrivals": campaign_copies.clone_arrivals(campaign),
            "with_arrivals": with_arrivals,
            "problem": problem,
        },
        status=400 if problem else 200,
    )


@login_required
@require_POST
def campaign_archive(request: HttpRequest, campaign_id: int) -> HttpResponse:
    """Archive (a running campaign is paused) or bring back a campaign."""
    campaign = campaign_for_page(request, campaign_id, MANAGE)
    archived = request.POST.get("archived", "1") == "1"
    campaign = campaign_copies.campaign_archive(campaign=campaign, archived=archived)
    verb = "archived: it no longer shows in the work lists" if archived else "back in the work lists"
    messages.success(request, f"“{campaign.name}” is {verb}.")
    return redirect("labeling:campaign_list")


@login_required
@require_http_methods(["GET", "POST"])
def campaign_delete(request: HttpRequest, campaign_id: int) -> HttpResponse:
    """Admins delete a campaign after typing its name; the page offers the exports first."""
    campaign = campaign_for_page(request, campaign_id, MANAGE)
    if not is_admin(request.user):
        raise PermissionDenied("Only admins delete campaigns.")
    typed = request.POST.get("name", "")
    if request.method == "POST" and typed == campaign.name:
        name = campaign.name
        campaign_copies.campaign_delete(campaign=campaign)
        messages.success(request, f"Deleted “{name}” and everything in it.")
        return redirect("labeling:campaign_list")
    return render(
        request,
        "labeling/campaign_delete.html",
        {
            "campaign": campaign,
            "counts": selectors.campaign_counts(campaign),
            "exports": export_links(campaign, "campaign"),
            "wrong_name": request.method == "POST",
        },
        status=400 if request.method == "POST" else 200,
    )


OWN_JUDGMENTS_PER_PAGE = 50


@login_required
@require_GET
def own_judgments(request: HttpRequest) -> HttpResponse:
    """The assessor's own judgments: today's and overall counts and time, a searchable list, and
    a new grade for any of them while its campaign runs (every change kept)."""
    campaigns = list(dashboard.campaigns_to_judge(request.user))
    campaign_id = request.GET.get("campaign", "")
    chosen = next((campaign for campaign in campaigns if str(campaign.pk) == campaign_id), None)
    search = request.GET.get("q", "")[:200]
    judgments = selectors.own_judgments(request_user(request), chosen.pk if chosen else None, search)
    page = Paginator(judgments, OWN_JUDGMENTS_PER_PAGE).get_page(request.GET.get("page"))
    return render(
        request,
        "labeling/own_judgments.html",
        {
            "page": page,
            "campaigns": campaigns,
            "chosen": chosen,
            "search": search,
            "tally": selectors.own_tally(request_user(request), chosen.pk if chosen else None),
            "other_answers": _other_answers(request.user, [chosen] if chosen else campaigns),
            "query": request.GET.urlencode(),
        },
    )


def _other_answers(user: Any, campaigns: list[Campaign]) -> list[dict[str, Any]]:
    """The user's answers that are not graded judgments (pairs, side by side), counted per
    campaign, since the list shows graded judgments only."""
    rows = []
    for campaign in campaigns:
        mode = mode_of(campaign)
        count = mode.other_answers_by(campaign, user.pk)
        if count:
            rows.append({"campaign": campaign, "count": count, "word": mode.judgments_word})
    return rows


@login_required
@require_POST
def own_judgment_regrade(request: HttpRequest, judgment_id: int) -> HttpResponse:
    """Change the grade of one of your judgments; back to the list you came from."""
    judgment = get_object_or_404(Judgment, pk=judgment_id, assessor_id=request.user.pk)
    try:
        grade = int(request.POST.get("grade", ""))
        judgment_regrade(judgment=judgment, assessor=request_user(request), grade=grade)
    except ValueError as error:
        messages.error(request, f"Not changed: {error}.")
    else:
        messages.success(request, f"Topic {judgment.topic.qid}, {judgment.document.docno}: grade changed.")
    back = request.POST.get("back", "")
    target = reverse("labeling:own_judgments")
    return redirect(f"{target}?{back}" if back else target)


@login_required
@require_http_methods(["GET", "POST"])
def keyboard_settings(request: HttpRequest) -> HttpResponse:
    """The assessor's shortcut keys: switch single keys off, remap a key, reset one or all."""
    user = request_user(request)
    current = selectors.shortcut_preferences(user)
    form = ShortcutsForm(enabled=current.enabled, keys=current.keys)
    if request.method == "POST":
        # The reset buttons belong to their own form (so Enter in a key field saves, never resets).
        reset = request.POST.get("reset", "")
        action = shortcut_action(reset)
        if reset == "all" or action is not None:
            names = tuple(each.name for each in shortcut_actions()) if action is None else (reset,)
            shortcuts_update(user=user, reset=names)
            messages.success(
                request,
                "Every key is back to its default."
                if action is None
                else f"“{action.label}” is back to its default key.",
            )
            return redirect("labeling:keyboard_settings")
        form = ShortcutsForm(request.POST, enabled=current.enabled, keys=current.keys)
        if form.is_valid():
            try:
                shortcuts_update(
                    user=user,
                    keys=form.keys(),
                    enabled=form.cleaned_data["shortcuts_enabled"],
                    replace=True,
                )
            except ShortcutsInvalid as error:
                form.refused(error)
            else:
                messages.success(request, "Keyboard settings saved.")
                return redirect("labeling:keyboard_settings")
    status = 400 if form.errors else 200
    return render(request, "labeling/keyboard_settings.html", {"form": form}, status=status)


@login_required
@require_GET
def judge(request: HttpRequest) -> HttpResponse:
    """Straight to the only running campaign the assessor judges, else a choice."""
    campaigns = list(dashboard.campaigns_to_judge(request.user).filter(status=Campaign.Status.RUNNING))
    if len(campaigns) == 1:
        return redirect("labeling:judge_campaign", campaign_id=campaigns[0].pk)
    return render(request, "labeling/judge_choose.html", {"campaigns": campaigns})


@login_required
@require_GET
def judge_campaign(request: HttpRequest, campaign_id: int) -> HttpResponse:
    """The judging page of the campaign's mode; items come from and go to the REST API without
    reloading the page."""
    campaign = campaign_for_page(request, campaign_id, JUDGE)
    return mode_of(campaign).judge_page(request, campaign)


@login_required
@require_http_methods(["GET", "POST"])
def campaign_create(request: HttpRequest) -> HttpResponse:
    """A new draft campaign; its creator coordinates it."""
    if not is_coordinator(request.user):
        raise PermissionDenied("Only coordinators and admins create campaigns.")
    form = CampaignCreateForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        data = dict(form.cleaned_data)
        if data.get("goal") != Campaign.Goal.LEADERBOARD:
            data["goal_k"] = None
        try:
            campaign = campaign_services.campaign_create(creator=request_user(request), **data)
        except ValueError as error:
            form.add_error(None, str(error))
        else:
            messages.success(request, f"Campaign “{campaign.name}” created. Upload topics and runs next.")
            return redirect("labeling:campaign_detail", campaign_id=campaign.pk)
    return render(request, "labeling/campaign_form.html", {"form": form}, status=400 if form.errors else 200)


def _plain_number(value: float) -> float | int:
    """200.0 shows as 200 in a form field; 12.5 stays 12.5."""
    return int(value) if float(value).is_integer() else value


def _detail_context(request: HttpRequest, campaign: Campaign, **extra: Any) -> dict[str, Any]:
    mode = mode_of(campaign)
    progress = campaign_progress(campaign)
    preflight = campaign_preflight(campaign) if campaign.status == Campaign.Status.DRAFT else []
    return {
        "campaign": campaign,
        "mode": mode,
        "mode_summary": mode.describe(campaign),
        "progress": progress,
        "progress_percent": 100.0 * progress.fraction,
        # A campaign's own verdict that stopped judging before its budget was spent.
        "stopped_by_verdict": selectors.verdict_stopped(campaign),
        "pool": selectors.campaign_counts(campaign),
        "skips": skip_counts(campaign),
        "skipped_by_everyone": items_skipped_by_every_assessor(campaign),
        "throughput": mode.throughput(campaign),
        "mode_section": mode.campaign_section(request, campaign),
        "assessors": [member.user.get_username() for member in selectors.campaign_assessors(campaign)],
        "assign_form": extra.pop("assign_form", None) or AssignForm(),
        "budget_form": extra.pop("budget_form", None)
        or BudgetForm(initial={"budget": _plain_number(campaign.budget)}),
        "guidelines_form": extra.pop("guidelines_form", None) or GuidelinesForm(campaign=campaign),
        "mode_panels": campaign_panels(request, campaign),
        # The registered boxes of the mode's kinds; prior labels come through the API only.
        "uploads": [upload for kind in mode.uploads if (upload := upload_kind(kind)) is not None],
        "exports": export_links(campaign, "campaign") if request.user.has_perm(EXPORT, campaign) else [],
        "preflight": preflight,
        "preflight_blocked": any(problem.blocking for problem in preflight),
        **extra,
    }


@login_required
@require_GET
def campaign_detail(request: HttpRequest, campaign_id: int) -> HttpResponse:
    """Progress, throughput, uploads, assessors, start/pause and exports of one campaign."""
    campaign = campaign_for_page(request, campaign_id, MANAGE)
    return render(request, "labeling/campaign_detail.html", _detail_context(request, campaign))


@login_required
@require_POST
def campaign_upload(request: HttpRequest, campaign_id: int, kind: str) -> HttpResponse:
    """Import topics, documents, runs or qrels; a malformed file is rejected whole."""
    campaign = campaign_for_page(request, campaign_id, MANAGE)
    spec = upload_kind(kind) if kind in mode_of(campaign).uploads else None
    if spec is None:
        raise Http404("Unknown upload kind.")
    form = UploadForm(request.POST, request.FILES, multiple=spec.multiple)
    if not form.is_valid():
        errors = [
            {"file": "", "line": None, "message": " ".join(str(error) for error in form.non_field_errors())}
        ]
        return render(
            request,
            "labeling/campaign_detail.html",
            _detail_context(request, campaign, import_errors=errors),
            status=400,
        )
    files = [(upload.name, upload) for upload in form.cleaned_data["files"]]
    arguments: dict[str, Any] = {"campaign": campaign, "files": files}
    if spec.formats:
        arguments["file_format"] = form.cleaned_data["format"]
    try:
        report = spec.service(**arguments)
    except ImportFailed as failure:
        refused = [
            {"file": error.file, "line": error.line, "message": error.reason} for error in failure.errors
        ]
        return render(
            request,
            "labeling/campaign_detail.html",
            _detail_context(request, campaign, import_errors=refused),
            status=400,
        )
    systems = f" Systems: {', '.join(report.systems)}." if report.systems else ""
    notes = "".join(f" {note}." for note in report.notes)
    messages.success(
        request,
        f"{spec.label}: {report.files} file(s), {report.lines} lines read, "
        f"{report.created} new, {report.updated} updated, {report.unchanged} unchanged.{systems}{notes}",
    )
    return redirect("labeling:campaign_detail", campaign_id=campaign.pk)


@login_required
@require_POST
def campaign_assign(request: HttpRequest, campaign_id: int) -> HttpResponse:
    """Make existing users assessors of the campaign."""
    campaign = campaign_for_page(request, campaign_id, MANAGE)
    form = AssignForm(request.POST)
    if form.is_valid():
        try:
            users = campaign_services.campaign_assessors_assign(
                campaign=campaign, usernames=form.cleaned_data["usernames"]
            )
        except ValueError as error:
            form.add_error("usernames", str(error))
        else:
            messages.success(request, f"Assigned {', '.join(user.get_username() for user in users)}.")
            return redirect("labeling:campaign_detail", campaign_id=campaign.pk)
    return render(
        request,
        "labeling/campaign_detail.html",
        _detail_context(request, campaign, assign_form=form),
        status=400,
    )


@login_required
@require_POST
def campaign_budget(request: HttpRequest, campaign_id: int) -> HttpResponse:
    """Raise or cut the budget (a cut drops queued items nobody holds)."""
    campaign = campaign_for_page(request, campaign_id, MANAGE)
    form = BudgetForm(request.POST)
    if form.is_valid():
        try:
            campaign = campaign_services.campaign_update(
                campaign=campaign, budget=form.cleaned_data["budget"]
            )
        except ValueError as error:
            form.add_error("budget", str(error))
        else:
            messages.success(
                request,
                f"The budget is now {campaign.budget:g} ({campaign.get_budget_unit_display().lower()}).",
            )
            return redirect("labeling:campaign_detail", campaign_id=campaign.pk)
    return render(
        request,
        "labeling/campaign_detail.html",
        _detail_context(request, campaign, budget_form=form),
        status=400,
    )


@login_required
@require_POST
def campaign_guidelines(request: HttpRequest, campaign_id: int) -> HttpResponse:
    """Change the guidelines and grade descriptions (also while assessors judge)."""
    campaign = campaign_for_page(request, campaign_id, MANAGE)
    form = GuidelinesForm(request.POST, campaign=campaign)
    if form.is_valid():
        try:
            campaign_services.campaign_update(campaign=campaign, **form.changes())
        except ValueError as error:
            form.add_error(None, str(error))
        else:
            messages.success(request, "Guidelines saved: assessors see them on their next item.")
            return redirect("labeling:campaign_detail", campaign_id=campaign.pk)
    return render(
        request,
        "labeling/campaign_detail.html",
        _detail_context(request, campaign, guidelines_form=form),
        status=400,
    )


def _status_change(request: HttpRequest, campaign_id: int, service: Any, done: str) -> HttpResponse:
    campaign = campaign_for_page(request, campaign_id, MANAGE)
    try:
        service(campaign=campaign)
    except ValueError as error:
        messages.error(request, f"Cannot do that: {error}.")
    else:
        messages.success(request, done)
    return redirect("labeling:campaign_detail", campaign_id=campaign.pk)


@login_required
@require_POST
def campaign_start(request: HttpRequest, campaign_id: int) -> HttpResponse:
    """Start or resume judging; a draft with pre-flight problems starts only once confirmed."""
    campaign = campaign_for_page(request, campaign_id, MANAGE)
    if campaign.status == Campaign.Status.DRAFT and not request.POST.get("confirm"):
        problems = campaign_preflight(campaign)
        # A blocking problem is not confirmed away: the start below refuses and says why.
        if problems and not any(problem.blocking for problem in problems):
            return render(
                request,
                "labeling/campaign_detail.html",
                _detail_context(request, campaign, preflight_confirm=True),
            )
    return _status_change(request, campaign_id, campaign_services.campaign_start, "Judging is running.")


@login_required
@require_POST
def campaign_pause(request: HttpRequest, campaign_id: int) -> HttpResponse:
    """Pause judging: no new items are handed out."""
    return _status_change(request, campaign_id, campaign_services.campaign_pause, "Judging is paused.")


@login_required
@require_GET
def campaign_dashboard(request: HttpRequest, campaign_id: int) -> HttpResponse:
    """The campaign's live dashboard, as its judging mode draws it (graded: estimates, their
    history, the budget, the sampling distribution and throughput; pairs: lists, kappa metrics,
    agreement); the page polls the REST API and never reloads."""
    campaign = campaign_for_page(request, campaign_id, VIEW_RESULTS)
    return mode_of(campaign).dashboard_page(request, campaign)
