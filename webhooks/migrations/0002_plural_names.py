"""The admin's plural names (no database change)."""

from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [
        ("webhooks", "0001_initial"),
    ]

    operations = [
        migrations.AlterModelOptions(
            name="webhookdelivery",
            options={"ordering": ("-id",), "verbose_name_plural": "webhook deliveries"},
        ),
    ]
