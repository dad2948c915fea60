"""The webhooks' tables, taken over from the core's migrations (0030, 0031) with their names: the
state is created here, the database already has them. Their content types (and with them the
admin permissions) move from the core to this app."""

import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models


def _content_types_move(apps, schema_editor, source="labeling", target="webhooks"):
    content_types = apps.get_model("contenttypes", "ContentType")
    names = ["webhook", "webhookevent", "webhookdelivery", "webhookattempt"]
    content_types.objects.filter(app_label=source, model__in=names).update(app_label=target)


def _content_types_back(apps, schema_editor):
    _content_types_move(apps, schema_editor, source="webhooks", target="labeling")


class Migration(migrations.Migration):
    initial = True

    dependencies = [
        ("labeling", "0035_webhooks_own_app"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
        ("contenttypes", "0002_remove_content_type_name"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.CreateModel(
                    name="Webhook",
                    fields=[
                        (
                            "id",
                            models.BigAutoField(
                                auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                            ),
                        ),
                        ("url", models.URLField(max_length=2000)),
                        ("secret", models.CharField(max_length=200)),
                        ("events", models.JSONField(default=list, help_text="event names it receives")),
                        ("active", models.BooleanField(default=True)),
                        ("created_at", models.DateTimeField(auto_now_add=True)),
                        (
                            "campaign",
                            models.ForeignKey(
                                on_delete=django.db.models.deletion.CASCADE,
                                related_name="webhooks",
                                to="labeling.campaign",
                            ),
                        ),
                        (
                            "created_by",
                            models.ForeignKey(
                                null=True,
                                on_delete=django.db.models.deletion.SET_NULL,
                                related_name="+",
                                to=settings.AUTH_USER_MODEL,
                            ),
                        ),
                    ],
                    options={
                        "db_table": "labeling_webhook",
                        "ordering": ("id",),
                    },
                ),
                migrations.CreateModel(
                    name="WebhookDelivery",
                    fields=[
                        (
                            "id",
                            models.BigAutoField(
                                auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                            ),
                        ),
                        (
                            "status",
                            models.CharField(
                                choices=[
                                    ("pending", "Pending"),
                                    ("delivered", "Delivered"),
                                    ("failed", "Failed"),
                                ],
                                default="pending",
                                max_length=12,
                            ),
                        ),
                        ("attempts", models.PositiveSmallIntegerField(default=0)),
                        ("next_attempt_at", models.DateTimeField(blank=True, null=True)),
                        ("delivered_at", models.DateTimeField(blank=True, null=True)),
                        ("created_at", models.DateTimeField(auto_now_add=True)),
                        (
                            "webhook",
                            models.ForeignKey(
                                on_delete=django.db.models.deletion.CASCADE,
                                related_name="deliveries",
                                to="webhooks.webhook",
                            ),
                        ),
                    ],
                    options={
                        "db_table": "labeling_webhookdelivery",
                        "ordering": ("-id",),
                    },
                ),
                migrations.CreateModel(
                    name="WebhookAttempt",
                    fields=[
                        (
                            "id",
                            models.BigAutoField(
                                auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                            ),
                        ),
                        ("at", models.DateTimeField(auto_now_add=True)),
                        ("status_code", models.PositiveSmallIntegerField(blank=True, null=True)),
                        ("seconds", models.FloatField(default=0.0)),
                        ("error", models.CharField(blank=True, default="", max_length=500)),
                        (
                            "delivery",
                            models.ForeignKey(
                                on_delete=django.db.models.deletion.CASCADE,
                                related_name="tries",
                                to="webhooks.webhookdelivery",
                            ),
                        ),
                    ],
                    options={
                        "db_table": "labeling_webhookattempt",
                        "ordering": ("id",),
                    },
                ),
                migrations.CreateModel(
                    name="WebhookEvent",
                    fields=[
                        (
                            "id",
                            models.BigAutoField(
                                auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                            ),
                        ),
                        ("name", models.CharField(max_length=40)),
                        (
                            "key",
                            models.CharField(
                                help_text="unique per campaign: the same event is recorded once",
                                max_length=200,
                            ),
                        ),
                        ("data", models.JSONField(default=dict)),
                        ("created_at", models.DateTimeField(auto_now_add=True)),
                        (
                            "campaign",
                            models.ForeignKey(
                                on_delete=django.db.models.deletion.CASCADE,
                                related_name="webhook_events",
                                to="labeling.campaign",
                            ),
                        ),
                    ],
                    options={
                        "db_table": "labeling_webhookevent",
                        "ordering": ("id",),
                    },
                ),
                migrations.AddField(
                    model_name="webhookdelivery",
                    name="event",
                    field=models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="deliveries",
                        to="webhooks.webhookevent",
                    ),
                ),
                migrations.AddConstraint(
                    model_name="webhookevent",
                    constraint=models.UniqueConstraint(
                        fields=("campaign", "key"), name="webhook_event_key_unique"
                    ),
                ),
                migrations.AddIndex(
                    model_name="webhookdelivery",
                    index=models.Index(fields=["status", "next_attempt_at"], name="webhook_delivery_due"),
                ),
                migrations.AddConstraint(
                    model_name="webhookdelivery",
                    constraint=models.UniqueConstraint(
                        fields=("webhook", "event"), name="webhook_delivery_unique"
                    ),
                ),
            ],
            database_operations=[],
        ),
        migrations.RunPython(_content_types_move, _content_types_back),
    ]
