"""HTML routes of pairwise judging: the judging page, the settings form, the dashboard and the
results page."""

from django.urls import path

from pairwise import views

app_name = "pairwise"

urlpatterns = [
    path("pairwise/<int:campaign_id>/judge/", views.judge, name="judge"),
    path("pairwise/<int:campaign_id>/settings/", views.settings_edit, name="settings"),
    path("pairwise/<int:campaign_id>/dashboard/", views.dashboard, name="dashboard"),
    path("pairwise/<int:campaign_id>/results/", views.results, name="results"),
    path("pairwise/<int:campaign_id>/heaps/<int:heap_id>/release/", views.heap_release, name="heap_release"),
]
