"""Pages of training-data campaigns: the campaign page's section (uploads, settings, rounds) and
the dashboard."""

from __future__ import annotations

from typing import Any, BinaryIO, cast

from django import forms
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_POST

from estimation.training.selection import SELECTION_RULES
from labeling.access import campaign_for_page
from labeling.import_reports import ImportFailed
from labeling.models import Campaign
from labeling.modes import export_links
from labeling.permissions import EXPORT, MANAGE
from training import selectors, services
from training.benchmark import BENCHMARK_COMMAND, MEASURED_SE, benchmark_quote

UPLOADS = {
    "features": (
        "Feature pool",
        "LETOR / SVMlight rows: grade qid:Q 1:v 2:v ... # docid = D (grade -1 or none = "
        "unlabeled); plain or gzip.",
        services.pool_upload,
    ),
    "training_labels": (
        "Existing labels",
        "TREC qrels or labeled LETOR rows for pool rows.",
        services.labels_upload,
    ),
    "test": (
        "Test queries",
        "Labeled LETOR rows of held-out queries: the learning curve's yardstick.",
        services.test_upload,
    ),
    "scores": (
        "Your models' scores",
        "qid docid s_1 ... s_N per pool row: no model is trained then.",
        services.scores_upload,
    ),
}


class TrainingSettingsForm(forms.Form):
    strategy = forms.ChoiceField(choices=[(name, name) for name in SELECTION_RULES])
    round_size = forms.IntegerField(min_value=1, max_value=100_000, label="Labels per round")
    docs_per_query = forms.IntegerField(
        min_value=1, max_value=100_000, label="Documents per query (two-stage)"
    )
    cutoff = forms.IntegerField(min_value=1, max_value=1000, label="DCG cut-off K")
    ensemble = forms.IntegerField(min_value=1, max_value=64, label="Ensemble members N")
    drawn = forms.BooleanField(
        required=False, label="Draw (record inclusion probabilities) instead of taking the top"
    )


def campaign_section(request: HttpRequest, campaign: Campaign) -> dict[str, Any]:
    record = services.settings_of(campaign)
    pool = services.TrainingPool.objects.filter(campaign=campaign).first()
    editable = campaign.status == Campaign.Status.DRAFT
    settings_form = TrainingSettingsForm(
        initial={name: getattr(record, name) for name in services.SETTING_NAMES}
    )
    if not editable:  # fixed once started: shown, not offered for editing
        for field in settings_form.fields.values():
            field.disabled = True
    return {
        "template": "training/_section.html",
        "uploads": [
            {
                "kind": kind,
                "label": label,
                "help": text,
                "url": reverse("training:upload", args=[campaign.pk, kind]),
            }
            for kind, (label, text, _) in UPLOADS.items()
        ],
        "pool": pool,
        "settings_form": settings_form,
        # The header's Settings button leads to the form on this page; the form posts here.
        "settings_url": f"{reverse('labeling:campaign_detail', args=[campaign.pk])}#training-settings",
        "settings_action": reverse("training:settings", args=[campaign.pk]),
        "editable": editable,
        "rounds": selectors.rounds_table(campaign),
        "units_word": "pool rows",
    }


@login_required
@require_POST
def upload(request: HttpRequest, campaign_id: int, kind: str) -> HttpResponse:
    """One of the mode's uploads; a bad file is refused whole with its file, line and reason."""
    campaign = campaign_for_page(request, campaign_id, MANAGE)
    if kind not in UPLOADS or campaign.judging_mode != "training":
        raise Http404("Unknown upload.")
    label, _, service = UPLOADS[kind]
    # An UploadedFile reads like the binary file the readers take.
    files = [(upload.name or "upload", cast(BinaryIO, upload)) for upload in request.FILES.getlist("file")]
    try:
        report = service(campaign=campaign, files=files)
    except ImportFailed as failure:
        for error in failure.errors:
            where = f"{error.file}, line {error.line}" if error.line else error.file
            messages.error(request, f"{label} refused ({where}): {error.reason}. Nothing was stored.")
    else:
        notes = "".join(f" {note}." for note in report.notes)
        messages.success(request, f"{label}: {report.lines} rows read.{notes}")
    return redirect("labeling:campaign_detail", campaign_id=campaign.pk)


@login_required
@require_POST
def settings_change(request: HttpRequest, campaign_id: int) -> HttpResponse:
    campaign = campaign_for_page(request, campaign_id, MANAGE)
    form = TrainingSettingsForm(request.POST)
    if form.is_valid():
        try:
            services.training_configure(campaign, form.cleaned_data)
        except ValueError as error:
            messages.error(request, f"Settings not changed: {error}.")
        else:
            messages.success(request, "Training settings saved.")
    else:
        messages.error(request, f"Settings not changed: {form.errors.as_text()}")
    return redirect("labeling:campaign_detail", campaign_id=campaign.pk)


def _curve_svg(
    points: list[dict[str, float]], key: str, width: int = 420, height: int = 180
) -> dict[str, Any] | None:
    """The learning curve as SVG coordinates (drawn by the template; no script)."""
    if len(points) < 1:
        return None
    xs = [point[key] for point in points]
    ys = [point["test_dcg"] for point in points]
    x0, x1 = min(xs), max(xs) or 1.0
    y0, y1 = min(ys), max(ys)
    # Room on the left for the DCG ticks, below for the x ticks.
    left, right, top, bottom = 52, width - 16, 14, height - 26
    span_x = (x1 - x0) or 1.0
    span_y = (y1 - y0) or 1.0

    def at(x: float, y: float) -> tuple[float, float]:
        return left + (x - x0) / span_x * (right - left), bottom - (y - y0) / span_y * (bottom - top)

    coords = [at(x, y) for x, y in zip(xs, ys, strict=True)]
    x_format = "{:.2f}" if key == "hours" else "{:.0f}"
    return {
        "width": width,
        "height": height,
        "axes": {"left": left, "right": right, "top": top, "bottom": bottom},
        "ticks": {
            "y_low": f"{y0:.3f}",
            "y_high": f"{y1:.3f}",
            "x_low": x_format.format(x0),
            "x_high": x_format.format(x1),
        },
        "polyline": " ".join(f"{x:.1f},{y:.1f}" for x, y in coords),
        "dots": [{"x": x, "y": y, "label": f"{value:.3f}"} for (x, y), value in zip(coords, ys, strict=True)],
        "x_range": (x0, x1),
        "y_range": (y0, y1),
    }


def dashboard_page(request: HttpRequest, campaign: Campaign) -> HttpResponse:
    summary = selectors.training_summary(campaign)
    context = {
        "campaign": campaign,
        "summary": summary,
        "progress": selectors.training_progress(campaign),
        "curve_labels": _curve_svg(summary["learning_curve"], "labels"),
        "curve_hours": _curve_svg(summary["learning_curve"], "hours"),
        "exports": export_links(campaign, "dashboard") if request.user.has_perm(EXPORT, campaign) else [],
        "benchmark": benchmark_quote(),
        "benchmark_command": BENCHMARK_COMMAND,
        "measured_se": MEASURED_SE,
    }
    return render(request, "training/dashboard.html", context)
