"""The operations API under /api/."""

from django.contrib.auth.decorators import login_not_required
from django.urls import path

from operations import api

urlpatterns = [
    # DRF authenticates (session or token) and answers 401/403 itself (as labeling.api_urls).
    path("health/", login_not_required(api.HealthApi.as_view()), name="api-health"),
    path("users/", login_not_required(api.UserCreateApi.as_view()), name="api-users"),
    path("users/<str:username>/", login_not_required(api.UserApi.as_view()), name="api-user"),
    path(
        "campaigns/<id:campaign_id>/tokens/",
        login_not_required(api.ScopedTokensApi.as_view()),
        name="api-scoped-tokens",
    ),
    path(
        "campaigns/<id:campaign_id>/tokens/<id:token_id>/",
        login_not_required(api.ScopedTokenApi.as_view()),
        name="api-scoped-token",
    ),
    path("audit/", login_not_required(api.AuditApi.as_view()), name="api-audit"),
    path("audit/export/", login_not_required(api.AuditExportApi.as_view()), name="api-audit-export"),
]
