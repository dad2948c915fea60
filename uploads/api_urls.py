"""The upload routes, mounted under /api/ beside the core's (`labeling.api_urls`)."""

from django.contrib.auth.decorators import login_not_required
from django.urls import path

from uploads import api

# DRF authenticates (session or token) and answers 401/403 itself: no site-wide login redirect.
urlpatterns = [
    path(
        f"campaigns/<id:campaign_id>/{view.kind}/",
        login_not_required(view.as_view()),
        name=f"api-{view.kind}",
    )
    for view in (
        api.TopicsImportApi,
        api.DocumentsImportApi,
        api.RunsImportApi,
        api.QrelsImportApi,
        api.LabelsImportApi,
    )
]
