"""The sampling engine's tables, taken over from the core's migrations with their names: the state
is created here, the database already has them. Their content types (and with them the admin
permissions) move from the core to this app."""

import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models


def _content_types_move(apps, schema_editor, source="labeling", target="sampling"):
    content_types = apps.get_model("contenttypes", "ContentType")
    names = [
        "samplingstate",
        "estimatesnapshot",
        "judge",
        "judgeversion",
        "judgerun",
        "judgecall",
        "judgelabel",
        "judgecalibration",
    ]
    content_types.objects.filter(app_label=source, model__in=names).update(app_label=target)


def _content_types_back(apps, schema_editor):
    _content_types_move(apps, schema_editor, source="sampling", target="labeling")


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
                    name="Judge",
                    fields=[
                        (
                            "id",
                            models.BigAutoField(
                                auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                            ),
                        ),
                        ("name", models.CharField(max_length=200)),
                        ("kind", models.CharField(default="upload", max_length=16)),
                        (
                            "model",
                            models.CharField(
                                blank=True, help_text="e.g. DeepSeek-V3, gpt-4o-2024-08-06", max_length=200
                            ),
                        ),
                        (
                            "prompt",
                            models.TextField(blank=True, help_text="the prompt text, or its name and hash"),
                        ),
                        (
                            "version_date",
                            models.DateField(blank=True, help_text="when the labels were made", null=True),
                        ),
                        ("notes", models.TextField(blank=True)),
                        (
                            "shares_model_with",
                            models.CharField(
                                blank=True,
                                help_text="systems under evaluation built on the same model (comma-separated)",  # noqa: E501
                                max_length=500,
                            ),
                        ),
                        (
                            "simulated",
                            models.BooleanField(
                                default=False, help_text="labels simulated from human grades (demo)"
                            ),
                        ),
                        (
                            "version",
                            models.PositiveIntegerField(
                                default=1, help_text="raised by every edit of what the judge is asked"
                            ),
                        ),
                        (
                            "base_url",
                            models.CharField(
                                blank=True,
                                help_text="endpoint: e.g. http://localhost:8000/v1",
                                max_length=500,
                            ),
                        ),
                        (
                            "api_key_variable",
                            models.CharField(
                                blank=True,
                                help_text="endpoint: the environment variable that holds the API key",
                                max_length=100,
                            ),
                        ),
                        (
                            "with_probabilities",
                            models.BooleanField(
                                default=False, help_text="endpoint: ask for log-probabilities"
                            ),
                        ),
                        ("max_tokens", models.PositiveIntegerField(default=64)),
                        ("concurrency", models.PositiveSmallIntegerField(default=4)),
                        ("requests_per_minute", models.FloatField(default=0.0, help_text="0: no limit")),
                        (
                            "price_in_per_1k",
                            models.FloatField(default=0.0, help_text="price per 1,000 prompt tokens"),
                        ),
                        (
                            "price_out_per_1k",
                            models.FloatField(default=0.0, help_text="price per 1,000 answer tokens"),
                        ),
                        (
                            "cost_cap",
                            models.FloatField(
                                blank=True,
                                help_text="stop its runs once its total cost reaches this",
                                null=True,
                            ),
                        ),
                        (
                            "thresholds",
                            models.JSONField(
                                blank=True,
                                help_text="lexical: cut points fitted at its first run of this version",
                                null=True,
                            ),
                        ),
                        (
                            "chosen_for_sampling",
                            models.BooleanField(
                                default=False,
                                help_text="the judge the judged strategy uses (else the first judge with labels)",  # noqa: E501
                            ),
                        ),
                        ("created_at", models.DateTimeField(auto_now_add=True)),
                        (
                            "campaign",
                            models.ForeignKey(
                                on_delete=django.db.models.deletion.CASCADE,
                                related_name="judges",
                                to="labeling.campaign",
                            ),
                        ),
                        (
                            "created_by",
                            models.ForeignKey(
                                blank=True,
                                null=True,
                                on_delete=django.db.models.deletion.SET_NULL,
                                to=settings.AUTH_USER_MODEL,
                            ),
                        ),
                    ],
                    options={
                        "db_table": "labeling_judge",
                        "ordering": ["campaign", "created_at", "id"],
                    },
                ),
                migrations.CreateModel(
                    name="JudgeCalibration",
                    fields=[
                        (
                            "id",
                            models.BigAutoField(
                                auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                            ),
                        ),
                        ("sampling_version", models.PositiveIntegerField()),
                        (
                            "table",
                            models.JSONField(
                                help_text="source, mean_gain, sd_gain, counts per class (last: no label)"
                            ),
                        ),
                        ("created_at", models.DateTimeField(auto_now_add=True)),
                        (
                            "campaign",
                            models.ForeignKey(
                                on_delete=django.db.models.deletion.CASCADE,
                                related_name="judge_calibrations",
                                to="labeling.campaign",
                            ),
                        ),
                        (
                            "judge",
                            models.ForeignKey(
                                null=True,
                                on_delete=django.db.models.deletion.SET_NULL,
                                related_name="+",
                                to="sampling.judge",
                            ),
                        ),
                    ],
                    options={
                        "db_table": "labeling_judgecalibration",
                    },
                ),
                migrations.CreateModel(
                    name="JudgeLabel",
                    fields=[
                        (
                            "id",
                            models.BigAutoField(
                                auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                            ),
                        ),
                        ("qid", models.CharField(max_length=64)),
                        ("docno", models.CharField(max_length=200)),
                        ("grade", models.SmallIntegerField(blank=True, null=True)),
                        ("probs", models.JSONField(blank=True, null=True)),
                        (
                            "judge_class",
                            models.SmallIntegerField(
                                help_text="the grade, or the grade nearest the expected grade"
                            ),
                        ),
                        ("rationale", models.TextField(blank=True)),
                        ("seconds", models.FloatField(blank=True, null=True)),
                        ("cost", models.FloatField(blank=True, null=True)),
                        (
                            "human_grade",
                            models.SmallIntegerField(blank=True, help_text="calibration set only", null=True),
                        ),
                        ("source_file", models.CharField(blank=True, max_length=200)),
                        (
                            "version",
                            models.PositiveIntegerField(
                                blank=True, help_text="the judge version that made it", null=True
                            ),
                        ),
                        ("created_at", models.DateTimeField(auto_now_add=True)),
                        (
                            "judge",
                            models.ForeignKey(
                                on_delete=django.db.models.deletion.CASCADE,
                                related_name="labels",
                                to="sampling.judge",
                            ),
                        ),
                    ],
                    options={
                        "db_table": "labeling_judgelabel",
                    },
                ),
                migrations.CreateModel(
                    name="JudgeRun",
                    fields=[
                        (
                            "id",
                            models.BigAutoField(
                                auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                            ),
                        ),
                        ("version", models.PositiveIntegerField()),
                        (
                            "status",
                            models.CharField(
                                choices=[
                                    ("queued", "Queued"),
                                    ("running", "Running"),
                                    ("done", "Done"),
                                    ("cancelled", "Cancelled"),
                                    ("cost_cap", "Stopped at the cost cap"),
                                    ("failed", "Failed"),
                                ],
                                default="queued",
                                max_length=16,
                            ),
                        ),
                        (
                            "pairs_total",
                            models.PositiveIntegerField(default=0, help_text="pool pairs this run covers"),
                        ),
                        (
                            "cached",
                            models.PositiveIntegerField(
                                default=0, help_text="pairs answered before this run (no request)"
                            ),
                        ),
                        ("labels", models.PositiveIntegerField(default=0)),
                        ("refusals", models.PositiveIntegerField(default=0)),
                        ("errors", models.PositiveIntegerField(default=0)),
                        (
                            "skipped",
                            models.PositiveIntegerField(
                                default=0, help_text="pairs not sent: nothing to judge in the data"
                            ),
                        ),
                        ("requests", models.PositiveIntegerField(default=0)),
                        ("tokens_in", models.PositiveBigIntegerField(default=0)),
                        ("tokens_out", models.PositiveBigIntegerField(default=0)),
                        ("cost", models.FloatField(default=0.0)),
                        ("last_error", models.TextField(blank=True)),
                        (
                            "failures_in_a_row",
                            models.PositiveIntegerField(
                                default=0,
                                help_text="requests that failed after their retries, one after another, across steps",  # noqa: E501
                            ),
                        ),
                        (
                            "lost_steps",
                            models.PositiveSmallIntegerField(
                                default=0, help_text="steps in a row whose worker died before finishing them"
                            ),
                        ),
                        ("cancel_requested", models.BooleanField(default=False)),
                        ("lease_until", models.DateTimeField(blank=True, null=True)),
                        ("created_at", models.DateTimeField(auto_now_add=True)),
                        ("started_at", models.DateTimeField(blank=True, null=True)),
                        ("finished_at", models.DateTimeField(blank=True, null=True)),
                        ("updated_at", models.DateTimeField(auto_now=True)),
                        (
                            "created_by",
                            models.ForeignKey(
                                blank=True,
                                null=True,
                                on_delete=django.db.models.deletion.SET_NULL,
                                to=settings.AUTH_USER_MODEL,
                            ),
                        ),
                        (
                            "judge",
                            models.ForeignKey(
                                on_delete=django.db.models.deletion.CASCADE,
                                related_name="runs",
                                to="sampling.judge",
                            ),
                        ),
                    ],
                    options={
                        "db_table": "labeling_judgerun",
                        "ordering": ["judge", "-created_at", "-id"],
                    },
                ),
                migrations.CreateModel(
                    name="JudgeCall",
                    fields=[
                        (
                            "id",
                            models.BigAutoField(
                                auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                            ),
                        ),
                        ("version", models.PositiveIntegerField()),
                        ("qid", models.CharField(max_length=64)),
                        ("docno", models.CharField(max_length=200)),
                        (
                            "outcome",
                            models.CharField(
                                choices=[
                                    ("label", "Label"),
                                    ("refusal", "Refusal"),
                                    ("error", "Error"),
                                    ("skipped", "not sent"),
                                ],
                                max_length=8,
                            ),
                        ),
                        ("grade", models.SmallIntegerField(blank=True, null=True)),
                        ("probs", models.JSONField(blank=True, null=True)),
                        (
                            "text",
                            models.TextField(
                                blank=True, help_text="the answer (first 2,000 characters), or the error"
                            ),
                        ),
                        ("tokens_in", models.PositiveIntegerField(default=0)),
                        ("tokens_out", models.PositiveIntegerField(default=0)),
                        ("seconds", models.FloatField(default=0.0)),
                        ("cost", models.FloatField(default=0.0)),
                        ("created_at", models.DateTimeField(auto_now_add=True)),
                        (
                            "judge",
                            models.ForeignKey(
                                on_delete=django.db.models.deletion.CASCADE,
                                related_name="calls",
                                to="sampling.judge",
                            ),
                        ),
                        (
                            "run",
                            models.ForeignKey(
                                blank=True,
                                null=True,
                                on_delete=django.db.models.deletion.SET_NULL,
                                related_name="+",
                                to="sampling.judgerun",
                            ),
                        ),
                    ],
                    options={
                        "db_table": "labeling_judgecall",
                    },
                ),
                migrations.CreateModel(
                    name="JudgeVersion",
                    fields=[
                        (
                            "id",
                            models.BigAutoField(
                                auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                            ),
                        ),
                        ("number", models.PositiveIntegerField()),
                        ("model", models.CharField(blank=True, max_length=200)),
                        ("prompt", models.TextField(blank=True)),
                        (
                            "asked_with",
                            models.JSONField(
                                default=dict, help_text="base_url, with_probabilities, max_tokens, thresholds"
                            ),
                        ),
                        ("created_at", models.DateTimeField(auto_now_add=True)),
                        (
                            "created_by",
                            models.ForeignKey(
                                blank=True,
                                null=True,
                                on_delete=django.db.models.deletion.SET_NULL,
                                to=settings.AUTH_USER_MODEL,
                            ),
                        ),
                        (
                            "judge",
                            models.ForeignKey(
                                on_delete=django.db.models.deletion.CASCADE,
                                related_name="versions",
                                to="sampling.judge",
                            ),
                        ),
                    ],
                    options={
                        "db_table": "labeling_judgeversion",
                        "ordering": ["judge", "number"],
                    },
                ),
                migrations.CreateModel(
                    name="SamplingState",
                    fields=[
                        (
                            "id",
                            models.BigAutoField(
                                auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                            ),
                        ),
                        ("version", models.PositiveIntegerField(default=0)),
                        ("pool_version", models.PositiveIntegerField(default=0)),
                        ("fingerprint", models.CharField(blank=True, max_length=128)),
                        ("level", models.CharField(default="query", max_length=8)),
                        ("arrays", models.BinaryField()),
                        ("label_model", models.JSONField(default=dict)),
                        ("cost_model", models.JSONField(default=dict)),
                        (
                            "weight_bounds",
                            models.JSONField(default=dict, help_text="item level: max P/Q per system so far"),
                        ),
                        ("updated_at", models.DateTimeField(auto_now=True)),
                        (
                            "campaign",
                            models.OneToOneField(
                                on_delete=django.db.models.deletion.CASCADE,
                                related_name="sampling_state",
                                to="labeling.campaign",
                            ),
                        ),
                    ],
                    options={
                        "db_table": "labeling_samplingstate",
                    },
                ),
                migrations.CreateModel(
                    name="EstimateSnapshot",
                    fields=[
                        (
                            "id",
                            models.BigAutoField(
                                auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                            ),
                        ),
                        ("created_at", models.DateTimeField(auto_now_add=True)),
                        ("fingerprint", models.CharField(max_length=128)),
                        ("level", models.CharField(max_length=8)),
                        ("spent", models.FloatField()),
                        ("budget", models.FloatField()),
                        ("judgments", models.PositiveIntegerField()),
                        (
                            "draws",
                            models.PositiveIntegerField(
                                help_text="draws counted (their topic or item fully judged)"
                            ),
                        ),
                        ("data", models.JSONField(help_text="{systems: [...], difference: {...} or null}")),
                        (
                            "campaign",
                            models.ForeignKey(
                                on_delete=django.db.models.deletion.CASCADE,
                                related_name="snapshots",
                                to="labeling.campaign",
                            ),
                        ),
                    ],
                    options={
                        "db_table": "labeling_estimatesnapshot",
                        "ordering": ["campaign", "created_at", "id"],
                        "indexes": [
                            models.Index(fields=["campaign", "created_at"], name="snapshot_campaign_time")
                        ],
                    },
                ),
                migrations.AddConstraint(
                    model_name="judge",
                    constraint=models.UniqueConstraint(fields=("campaign", "name"), name="judge_name_unique"),
                ),
                migrations.AddConstraint(
                    model_name="judgecalibration",
                    constraint=models.UniqueConstraint(
                        fields=("campaign", "sampling_version"), name="judge_calibration_unique"
                    ),
                ),
                migrations.AddIndex(
                    model_name="judgelabel",
                    index=models.Index(
                        fields=["judge", "human_grade"], name="labeling_ju_judge_i_972c9b_idx"
                    ),
                ),
                migrations.AddConstraint(
                    model_name="judgelabel",
                    constraint=models.UniqueConstraint(
                        condition=models.Q(("human_grade__isnull", True)),
                        fields=("judge", "qid", "docno"),
                        name="judge_label_unique",
                    ),
                ),
                migrations.AddConstraint(
                    model_name="judgelabel",
                    constraint=models.UniqueConstraint(
                        condition=models.Q(("human_grade__isnull", False)),
                        fields=("judge", "qid", "docno"),
                        name="judge_calibration_label_unique",
                    ),
                ),
                migrations.AddConstraint(
                    model_name="judgecall",
                    constraint=models.UniqueConstraint(
                        fields=("judge", "version", "qid", "docno"), name="judge_call_unique"
                    ),
                ),
                migrations.AddConstraint(
                    model_name="judgeversion",
                    constraint=models.UniqueConstraint(
                        fields=("judge", "number"), name="judge_version_unique"
                    ),
                ),
            ],
            database_operations=[],
        ),
        migrations.RunPython(_content_types_move, _content_types_back),
    ]
