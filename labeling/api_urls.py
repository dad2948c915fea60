"""REST API routes, mounted under /api/."""

from django.contrib.auth.decorators import login_not_required, login_required
from django.urls import path
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerSplitView

from labeling import api
from labeling.modes import every_export


def _api(view):
    # DRF authenticates (session or token) and answers 401/403 itself; the site-wide login
    # redirect would send API clients to an HTML page instead.
    return login_not_required(view)


urlpatterns = [
    path("auth/token/", _api(api.TokenApi.as_view()), name="api-token"),
    path("schema/", _api(SpectacularAPIView.as_view()), name="api-schema"),
    # The docs page is a page: an anonymous visitor is sent to the login form (not _api). Only
    # Swagger UI: Redoc's bundle always loads its logo from cdn.redoc.ly, a request off the
    # server that the Content-Security-Policy blocks (and an error on every visit).
    path(
        "docs/",
        login_required(
            SpectacularSwaggerSplitView.as_view(url_name="api-schema", template_name="api_docs/swagger.html")
        ),
        name="api-docs",
    ),
    path("campaigns/", _api(api.CampaignListCreateApi.as_view()), name="api-campaigns"),
    path("campaigns/<id:campaign_id>/", _api(api.CampaignDetailApi.as_view()), name="api-campaign"),
    path("campaigns/<id:campaign_id>/clone/", _api(api.CampaignCloneApi.as_view()), name="api-clone"),
    path("campaigns/<id:campaign_id>/archive/", _api(api.CampaignArchiveApi.as_view()), name="api-archive"),
    path("campaigns/<id:campaign_id>/assessors/", _api(api.AssessorsApi.as_view()), name="api-assessors"),
    path(
        "campaigns/<id:campaign_id>/preflight/",
        _api(api.CampaignPreflightApi.as_view()),
        name="api-preflight",
    ),
    path("campaigns/<id:campaign_id>/start/", _api(api.CampaignStartApi.as_view()), name="api-start"),
    path("campaigns/<id:campaign_id>/pause/", _api(api.CampaignPauseApi.as_view()), name="api-pause"),
    path("campaigns/<id:campaign_id>/next/", _api(api.NextTaskApi.as_view()), name="api-next"),
    path("campaigns/<id:campaign_id>/undo/", _api(api.UndoApi.as_view()), name="api-undo"),
    path("campaigns/<id:campaign_id>/progress/", _api(api.ProgressApi.as_view()), name="api-progress"),
    path("my/judgments/", _api(api.OwnJudgmentsApi.as_view()), name="api-own-judgments"),
    path("my/shortcuts/", _api(api.ShortcutsApi.as_view()), name="api-shortcuts"),
    path("judgments/<id:judgment_id>/grade/", _api(api.OwnJudgmentGradeApi.as_view()), name="api-regrade"),
    path("tasks/<id:task_id>/answer/", _api(api.AnswerApi.as_view()), name="api-answer"),
    path("tasks/<id:task_id>/skip/", _api(api.SkipApi.as_view()), name="api-skip"),
    path("tasks/<id:task_id>/lease/", _api(api.LeaseApi.as_view()), name="api-lease"),
]

# Every download of every judging mode, from the export registry (labeling.modes).
urlpatterns += [
    path(
        f"campaigns/<id:campaign_id>/{export.path}",
        _api(api.ExportApi.as_view(export=export)),
        name=export.name,
    )
    for export in every_export()
]
