"""Pairwise REST routes, mounted under /api/ beside labeling's (downloads come from the export
registry, routed by labeling.api_urls)."""

from django.contrib.auth.decorators import login_not_required
from django.urls import path

from pairwise import api


def _api(view):
    # DRF authenticates (session or token) and answers 401/403 itself.
    return login_not_required(view)


PREFIX = "campaigns/<id:campaign_id>/pairwise/"

urlpatterns = [
    path(PREFIX + "settings/", _api(api.PairwiseSettingsApi.as_view()), name="api-pairwise-settings"),
    path(PREFIX + "next/", _api(api.PairNextApi.as_view()), name="api-pairwise-next"),
    path(
        PREFIX + "tasks/<id:task_id>/answer/", _api(api.PairAnswerApi.as_view()), name="api-pairwise-answer"
    ),
    path(PREFIX + "undo/", _api(api.PairUndoApi.as_view()), name="api-pairwise-undo"),
    path(PREFIX + "topk/", _api(api.TopKApi.as_view()), name="api-pairwise-topk"),
    # The contract names this one without the pairwise/ prefix.
    path("campaigns/<id:campaign_id>/topk/", _api(api.TopKApi.as_view()), name="api-topk"),
    path(
        PREFIX + "heaps/<id:heap_id>/release/",
        _api(api.HeapReleaseApi.as_view()),
        name="api-pairwise-release",
    ),
    path(PREFIX + "results/", _api(api.ResultsApi.as_view()), name="api-pairwise-results"),
    path(PREFIX + "agreement/", _api(api.AgreementApi.as_view()), name="api-pairwise-agreement"),
]
