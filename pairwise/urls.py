"""HTML routes of pairwise judging: the judging page, the settings form, the dashboard and the
results page."""

from django.urls import path

from pairwise import views

app_name = "pairwise"

urlpatterns = [
    path("pairwise/<id:campaign_id>/judge/", views.judge, name="judge"),
    path("pairwise/<id:campaign_id>/settings/", views.settings_edit, name="settings"),
    path("pairwise/<id:campaign_id>/dashboard/", views.dashboard, name="dashboard"),
    path("pairwise/<id:campaign_id>/results/", views.results, name="results"),
    path("pairwise/<id:campaign_id>/heaps/<id:heap_id>/release/", views.heap_release, name="heap_release"),
]
