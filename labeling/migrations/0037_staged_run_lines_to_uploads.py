"""The run import's staging table moved to the uploads app: the core forgets the model, the table
stays under its name (PostgreSQL: still UNLOGGED). Nothing changes in the database."""

from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [
        ("labeling", "0036_engine_and_gold_tables_own_apps"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.DeleteModel(
                    name="StagedRunLine",
                ),
            ],
            database_operations=[],
        ),
    ]
