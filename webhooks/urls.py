"""The webhooks panel's actions (the REST API has the same under /api/: `webhooks.api_urls`)."""

from django.urls import path

from webhooks import views

app_name = "webhooks"

urlpatterns = [
    path("campaigns/<id:campaign_id>/webhooks/", views.webhook_add_page, name="add"),
    path(
        "campaigns/<id:campaign_id>/webhooks/<id:webhook_id>/remove/",
        views.webhook_remove_page,
        name="remove",
    ),
]
