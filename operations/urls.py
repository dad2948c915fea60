"""The scoped-tokens panel's actions (the REST API has the same under /api/: `operations.api_urls`)."""

from django.urls import path

from operations import views

app_name = "operations"

urlpatterns = [
    path("campaigns/<id:campaign_id>/tokens/", views.scoped_token_create_page, name="token-create"),
    path("campaigns/<id:campaign_id>/tokens/made/", views.scoped_token_made_page, name="token-made"),
    path(
        "campaigns/<id:campaign_id>/tokens/<id:token_id>/revoke/",
        views.scoped_token_revoke_page,
        name="token-revoke",
    ),
]
