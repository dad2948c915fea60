"""The campaign page's model-judges panel and one route per judge action (as the API has)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, BinaryIO, cast

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect
from django.urls import reverse
from django.views.decorators.http import require_POST

from graded.forms import (
    JudgeForm,
    JudgePromptForm,
    form_errors_text,
)
from labeling.access import campaign_for_page, request_user
from labeling.import_reports import ImportFailed, ImportReport
from labeling.models import Campaign
from labeling.modes import mode_of
from labeling.permissions import MANAGE
from sampling import (
    Judge,
    judge_calibration_import,
    judge_choose_for_sampling,
    judge_create,
    judge_kind,
    judge_kind_own_fields,
    judge_labels_import,
    judge_run_cancel,
    judge_run_start,
    judge_update,
    judges_summaries,
    strategy_for,
)


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
