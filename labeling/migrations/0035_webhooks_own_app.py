"""Webhooks moved to their own app: the core forgets the four models, the tables stay (the
webhooks app's first migration takes them over under the same names). Nothing changes in the
database."""

from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [
        ("labeling", "0034_arrival_reports"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.RemoveField(
                    model_name="webhookdelivery",
                    name="webhook",
                ),
                migrations.RemoveField(
                    model_name="webhookattempt",
                    name="delivery",
                ),
                migrations.RemoveField(
                    model_name="webhookdelivery",
                    name="event",
                ),
                migrations.RemoveField(
                    model_name="webhookevent",
                    name="campaign",
                ),
                migrations.DeleteModel(
                    name="Webhook",
                ),
                migrations.DeleteModel(
                    name="WebhookAttempt",
                ),
                migrations.DeleteModel(
                    name="WebhookDelivery",
                ),
                migrations.DeleteModel(
                    name="WebhookEvent",
                ),
            ],
            database_operations=[],
        ),
    ]
