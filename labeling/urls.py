"""HTML routes (login and logout come from django.contrib.auth.urls under /accounts/)."""

from django.urls import path

from labeling import views

app_name = "labeling"

urlpatterns = [
    path("", views.home, name="home"),
    path("judge/", views.judge, name="judge"),
    path("account/keyboard/", views.keyboard_settings, name="keyboard_settings"),
    path("my-judgments/", views.own_judgments, name="own_judgments"),
    path("my-judgments/<id:judgment_id>/grade/", views.own_judgment_regrade, name="own_judgment_regrade"),
    path("judge/<id:campaign_id>/", views.judge_campaign, name="judge_campaign"),
    path("campaigns/", views.campaign_list, name="campaign_list"),
    path("campaigns/new/", views.campaign_create, name="campaign_create"),
    path("campaigns/<id:campaign_id>/clone/", views.campaign_clone, name="campaign_clone"),
    path("campaigns/<id:campaign_id>/archive/", views.campaign_archive, name="campaign_archive"),
    path("campaigns/<id:campaign_id>/delete/", views.campaign_delete, name="campaign_delete"),
    path("campaigns/<id:campaign_id>/", views.campaign_detail, name="campaign_detail"),
    path("campaigns/<id:campaign_id>/dashboard/", views.campaign_dashboard, name="campaign_dashboard"),
    path("campaigns/<id:campaign_id>/upload/<slug:kind>/", views.campaign_upload, name="campaign_upload"),
    path("campaigns/<id:campaign_id>/assessors/", views.campaign_assign, name="campaign_assign"),
    path("campaigns/<id:campaign_id>/budget/", views.campaign_budget, name="campaign_budget"),
    path("campaigns/<id:campaign_id>/guidelines/", views.campaign_guidelines, name="campaign_guidelines"),
    path("campaigns/<id:campaign_id>/start/", views.campaign_start, name="campaign_start"),
    path("campaigns/<id:campaign_id>/pause/", views.campaign_pause, name="campaign_pause"),
]
