"""PostgreSQL: the staging table of run imports is not WAL-logged.

Staged rows live only while their import runs; after a crash (which ends the import too) they
are worthless, and logging a million of them cost the import about as much as writing them.
A no-op on other databases.
"""

from django.db import migrations


def unlogged(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute("ALTER TABLE labeling_stagedrunline SET UNLOGGED")


def logged(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute("ALTER TABLE labeling_stagedrunline SET LOGGED")


class Migration(migrations.Migration):
    dependencies = [("labeling", "0017_judge_runs")]

    operations = [migrations.RunPython(unlogged, logged, elidable=False)]
