"""HTML routes of side-by-side judging beyond the core's (judge and dashboard pages are the
campaign's own, drawn by the mode): the settings form."""

from django.urls import path

from sxs import views

app_name = "sxs"

urlpatterns = [
    path("sxs/<id:campaign_id>/settings/", views.settings_edit, name="settings"),
]
