"""The judging mode is a registered plug-in (labeling.modes); its k lives in the mode's settings."""

from django.db import migrations, models

import labeling.modes


class Migration(migrations.Migration):
    dependencies = [
        ("labeling", "0004_pair_judging_modes"),
    ]

    operations = [
        migrations.RemoveField(
            model_name="campaign",
            name="topk_k",
        ),
        migrations.AlterField(
            model_name="campaign",
            name="judging_mode",
            field=models.CharField(choices=labeling.modes.mode_choices, default="graded", max_length=16),
        ),
    ]
