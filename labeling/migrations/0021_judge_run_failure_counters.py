"""Judge runs count failed requests in a row across steps and steps lost to a dead worker; costs
stored before prices were bounded are brought within a finite range (a sum of two costs near the
largest float is infinite, and PostgreSQL refuses to compute it)."""

from django.db import migrations, models
from django.db.models import Q

COST_CEILING = 1e12
"""No judge's cost comes near this under the price ceilings; larger stored costs are cut here."""


def costs_bounded(apps, schema_editor):  # type: ignore[no-untyped-def]
    for name in ("JudgeCall", "JudgeRun"):
        model = apps.get_model("labeling", name)
        model.objects.filter(Q(cost__gt=COST_CEILING) | Q(cost__lt=0)).update(cost=COST_CEILING)


class Migration(migrations.Migration):
    dependencies = [
        ("labeling", "0020_assessor_preferences"),
    ]

    operations = [
        migrations.AddField(
            model_name="judgerun",
            name="failures_in_a_row",
            field=models.PositiveIntegerField(
                default=0,
                help_text="requests that failed after their retries, one after another, across steps",
            ),
        ),
        migrations.AddField(
            model_name="judgerun",
            name="lost_steps",
            field=models.PositiveSmallIntegerField(
                default=0, help_text="steps in a row whose worker died before finishing them"
            ),
        ),
        migrations.RunPython(costs_bounded, migrations.RunPython.noop),
    ]
