"""The graded mode's HTML routes: the gold, judges and compared-systems forms' actions and the
dashboard's model summary."""

from django.urls import path

from graded import views

app_name = "graded"

urlpatterns = [
    path("campaigns/<id:campaign_id>/gold/", views.campaign_gold, name="campaign_gold"),
    path("campaigns/<id:campaign_id>/judges/", views.campaign_judges, name="campaign_judges"),
    path("campaigns/<id:campaign_id>/compared/", views.campaign_compared, name="campaign_compared"),
    path("campaigns/<id:campaign_id>/dashboard/model.json", views.dashboard_model, name="dashboard_model"),
]
