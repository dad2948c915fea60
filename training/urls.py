"""The training mode's pages."""

from django.urls import path

from training import views

app_name = "training"

urlpatterns = [
    path("campaigns/<id:campaign_id>/training/upload/<slug:kind>/", views.upload, name="upload"),
    path("campaigns/<id:campaign_id>/training/settings/", views.settings_change, name="settings"),
]
