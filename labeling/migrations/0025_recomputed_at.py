"""One word per thing: the worker's job after judgments is the recompute (it was also called the
refresh), so the progress record's time is when the last recompute stored it."""

from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [
        ("labeling", "0024_strategies_registered"),
    ]

    operations = [
        migrations.RenameField(
            model_name="campaignprogress", old_name="refreshed_at", new_name="recomputed_at"
        ),
    ]
