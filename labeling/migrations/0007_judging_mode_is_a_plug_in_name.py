"""Modes are plug-ins registered above the models: the field keeps the name, the services check it."""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("labeling", "0006_strategy_labels_in_plain_words"),
    ]

    operations = [
        migrations.AlterField(
            model_name="campaign",
            name="judging_mode",
            field=models.CharField(default="graded", max_length=16),
        ),
    ]
