"""The run import's staging table, taken over from the core's migrations with its name: the state
is created here, the database already has it."""

from django.db import migrations, models


def _content_types_move(apps, schema_editor, source="labeling", target="uploads"):
    content_types = apps.get_model("contenttypes", "ContentType")
    content_types.objects.filter(app_label=source, model__in=["stagedrunline"]).update(app_label=target)


def _content_types_back(apps, schema_editor):
    _content_types_move(apps, schema_editor, source="uploads", target="labeling")


class Migration(migrations.Migration):
    initial = True

    dependencies = [
        ("labeling", "0037_staged_run_lines_to_uploads"),
        ("contenttypes", "0002_remove_content_type_name"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.CreateModel(
                    name="StagedRunLine",
                    fields=[
                        (
                            "id",
                            models.BigAutoField(
                                auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                            ),
                        ),
                        ("import_key", models.CharField(max_length=32)),
                        ("file_index", models.PositiveIntegerField()),
                        ("qid", models.CharField(max_length=64)),
                        ("docno", models.CharField(max_length=200)),
                        ("rank", models.IntegerField()),
                        ("score", models.FloatField()),
                        ("line", models.PositiveIntegerField()),
                    ],
                    options={
                        "db_table": "labeling_stagedrunline",
                    },
                ),
            ],
            database_operations=[],
        ),
        migrations.RunPython(_content_types_move, _content_types_back),
    ]
