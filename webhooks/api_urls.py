"""The webhooks' REST routes, mounted under /api/."""

from django.contrib.auth.decorators import login_not_required
from django.urls import path

from webhooks.api import WebhookApi, WebhooksApi

# DRF authenticates (session or token) and answers 401/403 itself (as labeling.api_urls).
urlpatterns = [
    path(
        "campaigns/<id:campaign_id>/webhooks/",
        login_not_required(WebhooksApi.as_view()),
        name="api-webhooks",
    ),
    path(
        "campaigns/<id:campaign_id>/webhooks/<id:webhook_id>/",
        login_not_required(WebhookApi.as_view()),
        name="api-webhook",
    ),
]
