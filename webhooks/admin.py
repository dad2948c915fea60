"""The webhooks' tables in the Django admin; the secret is never shown there either."""

from django.contrib import admin

from webhooks.models import Webhook, WebhookAttempt, WebhookDelivery, WebhookEvent


@admin.register(Webhook)
class WebhookAdmin(admin.ModelAdmin):
    list_display = ["campaign", "url", "active", "created_at"]
    list_filter = ["active"]
    list_select_related = ["campaign"]
    # The shared secret is set once, through the campaign page or the API, and never shown.
    exclude = ["secret"]
    raw_id_fields = ["campaign", "created_by"]


@admin.register(WebhookEvent)
class WebhookEventAdmin(admin.ModelAdmin):
    list_display = ["campaign", "name", "key", "created_at"]
    list_filter = ["name"]
    list_select_related = ["campaign"]


@admin.register(WebhookDelivery)
class WebhookDeliveryAdmin(admin.ModelAdmin):
    list_display = ["webhook", "event", "status", "attempts", "next_attempt_at", "delivered_at"]
    list_filter = ["status"]
    list_select_related = ["webhook", "event"]
    raw_id_fields = ["webhook", "event"]


@admin.register(WebhookAttempt)
class WebhookAttemptAdmin(admin.ModelAdmin):
    list_display = ["delivery", "at", "status_code", "seconds", "error"]
    list_select_related = ["delivery"]
    raw_id_fields = ["delivery"]
