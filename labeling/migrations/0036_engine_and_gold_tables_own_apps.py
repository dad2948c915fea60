"""The sampling engine's tables (sampling state, estimate snapshots, the model judges' tables) and
the gold tables moved to the apps that own them (`sampling`, `graded`): the core forgets the
models, the tables stay under their names (those apps' first migrations take them over).
Nothing changes in the database."""

from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [
        ("labeling", "0035_webhooks_own_app"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.RemoveField(
                    model_name="goldanswer",
                    name="assessor",
                ),
                migrations.RemoveField(
                    model_name="goldanswer",
                    name="gold",
                ),
                migrations.RemoveField(
                    model_name="goldanswer",
                    name="task",
                ),
                migrations.RemoveField(
                    model_name="golditem",
                    name="campaign",
                ),
                migrations.RemoveField(
                    model_name="golditem",
                    name="document",
                ),
                migrations.RemoveField(
                    model_name="golditem",
                    name="topic",
                ),
                migrations.RemoveField(
                    model_name="goldsettings",
                    name="campaign",
                ),
                migrations.RemoveField(
                    model_name="judge",
                    name="campaign",
                ),
                migrations.RemoveField(
                    model_name="judge",
                    name="created_by",
                ),
                migrations.RemoveField(
                    model_name="judgeversion",
                    name="judge",
                ),
                migrations.RemoveField(
                    model_name="judgelabel",
                    name="judge",
                ),
                migrations.RemoveField(
                    model_name="judgecall",
                    name="judge",
                ),
                migrations.RemoveField(
                    model_name="judgecalibration",
                    name="judge",
                ),
                migrations.RemoveField(
                    model_name="judgerun",
                    name="judge",
                ),
                migrations.RemoveField(
                    model_name="judgecalibration",
                    name="campaign",
                ),
                migrations.RemoveField(
                    model_name="judgecall",
                    name="run",
                ),
                migrations.RemoveField(
                    model_name="judgerun",
                    name="created_by",
                ),
                migrations.RemoveField(
                    model_name="judgeversion",
                    name="created_by",
                ),
                migrations.RemoveField(
                    model_name="samplingstate",
                    name="campaign",
                ),
                migrations.DeleteModel(
                    name="EstimateSnapshot",
                ),
                migrations.DeleteModel(
                    name="GoldAnswer",
                ),
                migrations.DeleteModel(
                    name="GoldItem",
                ),
                migrations.DeleteModel(
                    name="GoldSettings",
                ),
                migrations.DeleteModel(
                    name="JudgeLabel",
                ),
                migrations.DeleteModel(
                    name="Judge",
                ),
                migrations.DeleteModel(
                    name="JudgeCalibration",
                ),
                migrations.DeleteModel(
                    name="JudgeCall",
                ),
                migrations.DeleteModel(
                    name="JudgeRun",
                ),
                migrations.DeleteModel(
                    name="JudgeVersion",
                ),
                migrations.DeleteModel(
                    name="SamplingState",
                ),
            ],
            database_operations=[],
        ),
    ]
