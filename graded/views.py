"""The graded mode's pages: the judge page, the live dashboard and its model summary, the
campaign page's graded section and gold panel, and the gold form's actions. The caller (the
core's page views, through the mode seam) has checked who may see what."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, BinaryIO, cast

from django.conf import settings
from django.contrib import messages
from django.contrib.auth import get_user_model
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST

from graded import gold
from graded.forms import (
    ArrivalForm,
    ComparedSystemsForm,
    GoldForm,
    JudgeForm,
    JudgePromptForm,
    VerdictDefaultsForm,
    form_errors_text,
)
from labeling.access import campaign_for_page, request_user
from labeling.agreement import grade_agreement
from labeling.formats.fields import NOTE_MAX_CHARS
from labeling.judge_keys import judge_page_shortcuts
from labeling.models import Campaign, GoldItem, GoldSettings, Judge, Judgment, PoolItem, Skip, Verdict
from labeling.modes import export_links, mode_of
from labeling.permissions import EXPORT, MANAGE, VIEW_RESULTS
from labeling.selectors import verdict_summary
from labeling.services.campaigns import campaign_update
from labeling.services.imports import ImportFailed, ImportReport
from labeling.services.skips import items_skipped_by_every_assessor, notes_and_skips, skip_counts
from sampling import (
    arrival_add,
    campaign_model_summary,
    compared_systems,
    horizon_unit,
    judge_calibration_import,
    judge_choose_for_sampling,
    judge_create,
    judge_kind,
    judge_kind_own_fields,
    judge_labels_import,
    judge_run_cancel,
    judge_run_start,
    judge_update,
    judges_dashboard,
    judges_summaries,
    level_presentations,
    pooled_systems,
    strategy_for,
)

# How often the dashboard polls the API: often enough to feel live, rare enough to stay cheap.
DASHBOARD_POLL_SECONDS = 5

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


def judges_panel(request: HttpRequest, campaign: Campaign) -> dict[str, Any]:
    """The campaign page's judges panel (graded campaigns): each judge's version, coverage of the
    pool and agreement, with forms to add a judge and upload its labels or a calibration set."""
    # A refused add-judge form comes back with what was typed and its errors beside the fields.
    refused = request.session.pop(_refused_judge_form_key(campaign), None)
    judges = []
    for summary in judges_summaries(campaign):
        kind = judge_kind(summary["kind"])
        judges.append(
            {**summary, "about_template": kind.about_template, "manage_template": kind.manage_template}
        )
    return {
        "template": "graded/_judges.html",
        "judges": judges,
        # The add-judge form shows a kind's own fields only while that kind is chosen.
        "kind_fields": judge_kind_own_fields(),
        "can_manage": request.user.has_perm(MANAGE, campaign),
        "uses_judge": strategy_for(campaign).uses_judge,
        "form": JudgeForm(refused, prefix="judge") if refused else JudgeForm(prefix="judge"),
        "form_refused": bool(refused),
    }


def _refused_judge_form_key(campaign: Campaign) -> str:
    return f"refused-judge-form-{campaign.pk}"


def _keep_refused_judge_form(request: HttpRequest, campaign: Campaign) -> None:
    """What the coordinator typed into a refused add-judge form (never a key: the form names only
    the worker's variable), for the page the redirect shows."""
    typed = {name: value for name, value in request.POST.items() if name.startswith("judge-")}
    request.session[_refused_judge_form_key(campaign)] = typed


def _judges_campaign(request: HttpRequest, campaign_id: int) -> Campaign:
    campaign = campaign_for_page(request, campaign_id, MANAGE)
    if not mode_of(campaign).uses_sampling:
        raise Http404("This campaign's judging mode takes no judges.")
    return campaign


def _campaign_page(campaign: Campaign, anchor: str = "") -> HttpResponse:
    return redirect(reverse("labeling:campaign_detail", kwargs={"campaign_id": campaign.pk}) + anchor)


@login_required
@require_POST
def judge_add(request: HttpRequest, campaign_id: int) -> HttpResponse:
    """Add a judge; a refused form comes back filled in, its errors beside the fields."""
    campaign = _judges_campaign(request, campaign_id)
    form = JudgeForm(request.POST, prefix="judge")
    try:
        if not form.is_valid():
            raise ValueError(f"Judge not added: {form_errors_text(form)}")
        judge = judge_create(campaign=campaign, user=request_user(request), **form.judge_fields())
    except ValueError as error:
        _keep_refused_judge_form(request, campaign)
        messages.error(request, str(error))
        return _campaign_page(campaign)
    messages.success(request, f"Judge {judge.name} added: {judge_kind(judge.kind).following}.")
    return _campaign_page(campaign, f"#judge-{judge.pk}")


JudgeAction = Callable[[HttpRequest, Judge], str]
"""What one button of a judge does: the message to show, or ValueError / ImportFailed."""


def _on_judge(request: HttpRequest, campaign_id: int, judge_id: int, act: JudgeAction) -> HttpResponse:
    """One action on a judge of the campaign: its message, and the page opened at the judge (its
    bar, its figures; focus there), or at the top with the refusal (a bad file refused whole,
    each error naming file, line and reason)."""
    campaign = _judges_campaign(request, campaign_id)
    judge = get_object_or_404(Judge, pk=judge_id, campaign=campaign)
    try:
        messages.success(request, act(request, judge))
    except ImportFailed as failure:
        for error in failure.errors:
            messages.error(request, f"Refused, nothing stored: {error}")
        return _campaign_page(campaign)
    except ValueError as error:
        messages.error(request, str(error))
        return _campaign_page(campaign)
    return _campaign_page(campaign, f"#judge-{judge.pk}")


def _run(request: HttpRequest, judge: Judge) -> str:
    run = judge_run_start(judge, user=request_user(request))
    return f"{judge.name} (version {run.version}) is running over the pool; progress shows below."


def _cancel(request: HttpRequest, judge: Judge) -> str:
    cancelled = judge_run_cancel(judge)
    return (
        f"{judge.name}'s run stops after the requests in flight."
        if cancelled
        else f"{judge.name} has no run."
    )


def _sample_with(request: HttpRequest, judge: Judge) -> str:
    judge_choose_for_sampling(judge)
    return f"The strategy samples with {judge.name} from its next refit (a running campaign refits at once)."


def _new_version(request: HttpRequest, judge: Judge) -> str:
    """Edit: a new model or prompt (and settings), or a refit for the kinds that refit."""
    kind = judge_kind(judge.kind)
    if kind.edit_refits:
        changes: dict[str, Any] = {"refit": True}
    else:
        form = JudgePromptForm(request.POST)
        if not form.is_valid():
            raise ValueError(f"Not saved: {form_errors_text(form)}")
        changes = form.changes()
    judge = judge_update(judge, user=request_user(request), **changes)
    return f"{judge.name} is now version {judge.version}: {kind.edited}."


def _labels(request: HttpRequest, judge: Judge) -> str:
    files = _uploads(request, "file")
    if not files:
        raise ValueError("choose the judge's label file(s)")
    return _upload_words(judge, judge_labels_import(judge=judge, files=files))


def _calibration(request: HttpRequest, judge: Judge) -> str:
    humans, labels = _uploads(request, "human_qrels"), _uploads(request, "judge_labels")
    if not humans or not labels:
        raise ValueError("choose both the human qrels and the judge's labels of the calibration set")
    return _upload_words(
        judge, judge_calibration_import(judge=judge, human_qrels=humans, judge_labels=labels)
    )


def _upload_words(judge: Judge, report: ImportReport) -> str:
    notes = "".join(f" {note}." for note in report.notes)
    return f"{judge.name}: {report.lines} lines read, {report.created} new, {report.updated} replaced.{notes}"


def _judge_view(act: JudgeAction) -> Callable[[HttpRequest, int, int], HttpResponse]:
    @login_required
    @require_POST
    def view(request: HttpRequest, campaign_id: int, judge_id: int) -> HttpResponse:
        return _on_judge(request, campaign_id, judge_id, act)

    view.__doc__ = act.__doc__
    return view


judge_run = _judge_view(_run)
judge_cancel = _judge_view(_cancel)
judge_sample = _judge_view(_sample_with)
judge_version = _judge_view(_new_version)
judge_labels = _judge_view(_labels)
judge_calibration = _judge_view(_calibration)


def _uploads(request: HttpRequest, field: str) -> list[tuple[str, BinaryIO]]:
    """The files of one multipart field as (name, stream), as the import services take them."""
    return [(upload.name or field, cast(BinaryIO, upload)) for upload in request.FILES.getlist(field)]
