"""Side-by-side REST routes, mounted under /api/ beside labeling's (downloads come from the
export registry, routed by labeling.api_urls)."""

from django.contrib.auth.decorators import login_not_required
from django.urls import path

from sxs import api


def _api(view):
    # DRF authenticates (session or token) and answers 401/403 itself.
    return login_not_required(view)


PREFIX = "campaigns/<id:campaign_id>/sxs/"

urlpatterns = [
    path(PREFIX + "settings/", _api(api.SxsSettingsApi.as_view()), name="api-sxs-settings"),
    path(PREFIX + "tasks/<id:task_id>/skip/", _api(api.SxsSkipApi.as_view()), name="api-sxs-skip"),
    path(
        "campaigns/<id:campaign_id>/learned-dcg/", _api(api.LearnedDcgApi.as_view()), name="api-learned-dcg"
    ),
    path(
        "campaigns/<id:campaign_id>/learned-dcg/apply/",
        _api(api.LearnedDcgApplyApi.as_view()),
        name="api-learned-dcg-apply",
    ),
]
