"""The admin's plural names (no database change)."""

from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [
        ("training", "0002_selection_inclusion_probabilities"),
    ]

    operations = [
        migrations.AlterModelOptions(
            name="trainingsettings",
            options={"verbose_name_plural": "training settings"},
        ),
    ]
