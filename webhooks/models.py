"""A campaign's webhooks, the events recorded for them, and each delivery with its attempts.

The tables were created by the core's migrations (``labeling_webhook...``) before webhooks became
an app of their own; they keep their names, and this app's first migration only took them over.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models


class Webhook(models.Model):
    """A URL the campaign's events are sent to (`webhooks.deliveries`): signed JSON, delivered by
    the worker's own queue with retries. The URL passed the operator's outbound-host check when
    it was registered, and passes it again on every attempt and every redirect."""

    campaign = models.ForeignKey("labeling.Campaign", on_delete=models.CASCADE, related_name="webhooks")
    url = models.URLField(max_length=2000)
    # The shared secret signs every delivery (HMAC-SHA256); it is never shown again, exported or
    # logged after it is set, not even in part.
    secret = models.CharField(max_length=200)
    events = models.JSONField(default=list, help_text="event names it receives")
    active = models.BooleanField(default=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        db_table = "labeling_webhook"  # created by the core's migrations before the move
        ordering = ("id",)

    def __str__(self) -> str:
        return f"webhook {self.pk} of campaign {self.campaign_id}"


class WebhookEvent(models.Model):
    """Something that happened in a campaign, recorded once (`key` makes a repeat a no-op)."""

    campaign = models.ForeignKey("labeling.Campaign", on_delete=models.CASCADE, related_name="webhook_events")
    name = models.CharField(max_length=40)
    key = models.CharField(max_length=200, help_text="unique per campaign: the same event is recorded once")
    data = models.JSONField(default=dict)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        db_table = "labeling_webhookevent"  # created by the core's migrations before the move
        constraints = [models.UniqueConstraint(fields=["campaign", "key"], name="webhook_event_key_unique")]
        ordering = ("id",)

    def __str__(self) -> str:
        return f"{self.name} in campaign {self.campaign_id}"


class WebhookDelivery(models.Model):
    """One event to one webhook: pending until a 2xx answer, failed after the last attempt."""

    class Status(models.TextChoices):
        PENDING = "pending", "Pending"
        DELIVERED = "delivered", "Delivered"
        FAILED = "failed", "Failed"

    webhook = models.ForeignKey(Webhook, on_delete=models.CASCADE, related_name="deliveries")
    event = models.ForeignKey(WebhookEvent, on_delete=models.CASCADE, related_name="deliveries")
    status = models.CharField(max_length=12, choices=Status.choices, default=Status.PENDING)
    attempts = models.PositiveSmallIntegerField(default=0)
    next_attempt_at = models.DateTimeField(null=True, blank=True)
    delivered_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        verbose_name_plural = "webhook deliveries"
        db_table = "labeling_webhookdelivery"  # created by the core's migrations before the move
        constraints = [models.UniqueConstraint(fields=["webhook", "event"], name="webhook_delivery_unique")]
        indexes = [models.Index(fields=["status", "next_attempt_at"], name="webhook_delivery_due")]
        ordering = ("-id",)

    def __str__(self) -> str:
        return f"delivery {self.pk} ({self.status})"


class WebhookAttempt(models.Model):
    """One try of a delivery: when, the HTTP status (null when none came back), why it failed."""

    delivery = models.ForeignKey(WebhookDelivery, on_delete=models.CASCADE, related_name="tries")
    at = models.DateTimeField(auto_now_add=True)
    status_code = models.PositiveSmallIntegerField(null=True, blank=True)
    seconds = models.FloatField(default=0.0)
    error = models.CharField(max_length=500, blank=True, default="")

    class Meta:
        db_table = "labeling_webhookattempt"  # created by the core's migrations before the move
        ordering = ("id",)

    def __str__(self) -> str:
        return f"attempt of delivery {self.delivery_id}: {self.status_code or self.error}"
