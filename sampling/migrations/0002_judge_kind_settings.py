"""A judge's values of its kind's own settings that have no column (`JudgeKind.settings`): a kind
added later keeps its settings here; every existing judge gets an empty one."""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("sampling", "0001_initial"),
    ]

    operations = [
        migrations.AddField(
            model_name="judge",
            name="kind_settings",
            field=models.JSONField(
                blank=True,
                default=dict,
                help_text="the values of its kind's own settings that have no column (JudgeKind.settings)",
            ),
        ),
    ]
