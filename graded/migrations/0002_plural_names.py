"""The admin's plural names (no database change)."""

from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [
        ("graded", "0001_initial"),
    ]

    operations = [
        migrations.AlterModelOptions(
            name="goldsettings",
            options={"verbose_name_plural": "gold settings"},
        ),
    ]
