"""The training mode's REST routes, mounted under /api/."""

from django.contrib.auth.decorators import login_not_required
from django.urls import path

from training import api

urlpatterns = [
    path(
        f"campaigns/<id:campaign_id>/training/{name}/",
        login_not_required(view.as_view()),
        name=f"api-training-{name}",
    )
    for name, view in (
        ("features", api.FeaturesImportApi),
        ("labels", api.TrainingLabelsImportApi),
        ("test", api.TestQueriesImportApi),
        ("scores", api.ScoresImportApi),
    )
] + [
    path(
        "campaigns/<id:campaign_id>/training/",
        login_not_required(api.TrainingSummaryApi.as_view()),
        name="api-training",
    ),
]
