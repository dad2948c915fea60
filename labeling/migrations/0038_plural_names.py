"""The admin's plural names (no database change)."""

from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [
        ("labeling", "0037_staged_run_lines_to_uploads"),
    ]

    operations = [
        migrations.AlterModelOptions(
            name="assessorpreferences",
            options={"verbose_name_plural": "assessor preferences"},
        ),
    ]
