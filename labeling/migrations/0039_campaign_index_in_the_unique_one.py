"""Topics and documents lose the index on their campaign alone: the unique (campaign, qid) and
(campaign, docno) indexes lead with the campaign and serve the same lookups, and the second index
let PostgreSQL, planning from statistics a bulk import had outgrown, read every document of the
campaign for each staged run line. Only the index is dropped (found by introspection, whatever
its generated name); on SQLite a field change would copy the whole table."""

import django.db.models.deletion
from django.db import migrations, models

TABLES = ("labeling_document", "labeling_topic")


def _campaign_only_indexes(schema_editor, table):
    constraints = schema_editor.connection.introspection.get_constraints(
        schema_editor.connection.cursor(), table
    )
    return [
        name
        for name, details in constraints.items()
        if details["index"] and not details["unique"] and details["columns"] == ["campaign_id"]
    ]


def drop_campaign_indexes(apps, schema_editor):
    for table in TABLES:
        for name in _campaign_only_indexes(schema_editor, table):
            schema_editor.execute(f"DROP INDEX {schema_editor.quote_name(name)}")


def create_campaign_indexes(apps, schema_editor):
    for model_name in ("Document", "Topic"):
        model = apps.get_model("labeling", model_name)
        if _campaign_only_indexes(schema_editor, model._meta.db_table):
            continue
        field = model._meta.get_field("campaign")
        schema_editor.execute(schema_editor._create_index_sql(model, fields=[field]))


class Migration(migrations.Migration):
    dependencies = [
        ("labeling", "0038_plural_names"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.AlterField(
                    model_name=model_name,
                    name="campaign",
                    field=models.ForeignKey(
                        db_index=False,
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name=related_name,
                        to="labeling.campaign",
                    ),
                )
                for model_name, related_name in (("document", "documents"), ("topic", "topics"))
            ],
            database_operations=[migrations.RunPython(drop_campaign_indexes, create_campaign_indexes)],
        ),
    ]
