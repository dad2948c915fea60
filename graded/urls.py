"""The graded mode's HTML routes: the gold, judges and compared-systems forms' actions and the
dashboard's model summary."""

from django.urls import path

from graded import views

app_name = "graded"

urlpatterns = [
    path("campaigns/<id:campaign_id>/gold/", views.campaign_gold, name="campaign_gold"),
    # The judges panel: one route per action (the REST API has the same under /api/).
    path("campaigns/<id:campaign_id>/judges/", views.judge_add, name="judge_add"),
    *(
        path(f"campaigns/<id:campaign_id>/judges/<id:judge_id>/{action}/", view, name=f"judge_{action}")
        for action, view in (
            ("run", views.judge_run),
            ("cancel", views.judge_cancel),
            ("sample", views.judge_sample),
            ("version", views.judge_version),
            ("labels", views.judge_labels),
            ("calibration", views.judge_calibration),
        )
    ),
    path("campaigns/<id:campaign_id>/compared/", views.campaign_compared, name="campaign_compared"),
    path("campaigns/<id:campaign_id>/arrivals/", views.campaign_arrival, name="campaign_arrival"),
    path(
        "campaigns/<id:campaign_id>/verdict-rule/", views.campaign_verdict_rule, name="campaign_verdict_rule"
    ),
    path("campaigns/<id:campaign_id>/dashboard/model.json", views.dashboard_model, name="dashboard_model"),
]
