"""The gold tables, taken over from the core's migrations with their names: the state is created
here, the database already has them. Their content types move from the core to this app."""

import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models


def _content_types_move(apps, schema_editor, source="labeling", target="graded"):
    content_types = apps.get_model("contenttypes", "ContentType")
    names = ["goldsettings", "golditem", "goldanswer"]
    content_types.objects.filter(app_label=source, model__in=names).update(app_label=target)


def _content_types_back(apps, schema_editor):
    _content_types_move(apps, schema_editor, source="graded", target="labeling")


class Migration(migrations.Migration):
    initial = True

    dependencies = [
        ("labeling", "0036_engine_and_gold_tables_own_apps"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
        ("contenttypes", "0002_remove_content_type_name"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.CreateModel(
                    name="GoldItem",
                    fields=[
                        (
                            "id",
                            models.BigAutoField(
                                auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                            ),
                        ),
                        ("grade", models.PositiveSmallIntegerField()),
                        (
                            "source",
                            models.CharField(
                                choices=[("qrels", "Imported qrels"), ("agreed", "Assessors agreed")],
                                max_length=8,
                            ),
                        ),
                        ("created_at", models.DateTimeField(auto_now_add=True)),
                        (
                            "campaign",
                            models.ForeignKey(
                                on_delete=django.db.models.deletion.CASCADE,
                                related_name="gold_items",
                                to="labeling.campaign",
                            ),
                        ),
                        (
                            "document",
                            models.ForeignKey(
                                on_delete=django.db.models.deletion.CASCADE,
                                related_name="+",
                                to="labeling.document",
                            ),
                        ),
                        (
                            "topic",
                            models.ForeignKey(
                                on_delete=django.db.models.deletion.CASCADE,
                                related_name="+",
                                to="labeling.topic",
                            ),
                        ),
                    ],
                    options={
                        "db_table": "labeling_golditem",
                    },
                ),
                migrations.CreateModel(
                    name="GoldAnswer",
                    fields=[
                        (
                            "id",
                            models.BigAutoField(
                                auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                            ),
                        ),
                        ("grade", models.PositiveSmallIntegerField()),
                        ("correct", models.BooleanField()),
                        ("seconds", models.FloatField(blank=True, null=True)),
                        (
                            "counted",
                            models.BooleanField(
                                default=True, help_text="false once the coordinator resumed the assessor"
                            ),
                        ),
                        ("created_at", models.DateTimeField(auto_now_add=True)),
                        (
                            "assessor",
                            models.ForeignKey(
                                null=True,
                                on_delete=django.db.models.deletion.SET_NULL,
                                related_name="gold_answers",
                                to=settings.AUTH_USER_MODEL,
                            ),
                        ),
                        (
                            "task",
                            models.OneToOneField(
                                null=True,
                                on_delete=django.db.models.deletion.SET_NULL,
                                related_name="gold_answer",
                                to="labeling.task",
                            ),
                        ),
                        (
                            "gold",
                            models.ForeignKey(
                                on_delete=django.db.models.deletion.CASCADE,
                                related_name="answers",
                                to="graded.golditem",
                            ),
                        ),
                    ],
                    options={
                        "db_table": "labeling_goldanswer",
                    },
                ),
                migrations.CreateModel(
                    name="GoldSettings",
                    fields=[
                        (
                            "id",
                            models.BigAutoField(
                                auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                            ),
                        ),
                        (
                            "share",
                            models.FloatField(
                                default=0.0, help_text="share of an assessor's items that are gold (0 = none)"
                            ),
                        ),
                        (
                            "qualification",
                            models.PositiveIntegerField(
                                default=0, help_text="gold questions an assessor answers before any real item"
                            ),
                        ),
                        (
                            "min_accuracy",
                            models.FloatField(
                                default=0.0,
                                help_text="exact-grade accuracy below which an assessor is paused",
                            ),
                        ),
                        (
                            "min_answers",
                            models.PositiveIntegerField(
                                default=5, help_text="gold answers before the accuracy counts"
                            ),
                        ),
                        (
                            "campaign",
                            models.OneToOneField(
                                on_delete=django.db.models.deletion.CASCADE,
                                related_name="gold_settings",
                                to="labeling.campaign",
                            ),
                        ),
                    ],
                    options={
                        "db_table": "labeling_goldsettings",
                    },
                ),
                migrations.AddConstraint(
                    model_name="golditem",
                    constraint=models.UniqueConstraint(
                        fields=("campaign", "topic", "document"), name="gold_item_once"
                    ),
                ),
                migrations.AddIndex(
                    model_name="goldanswer",
                    index=models.Index(fields=["assessor", "gold"], name="gold_answer_assessor"),
                ),
            ],
            database_operations=[],
        ),
        migrations.RunPython(_content_types_move, _content_types_back),
    ]
