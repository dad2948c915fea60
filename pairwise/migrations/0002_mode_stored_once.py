"""The mode is stored once, as the campaign's judging_mode; k once, as PairwiseSettings.k.

Both copies were kept in step before; this copies the pairwise side's mode and the campaign's
top-k k across once more, then drops the duplicates (labeling 0005 drops Campaign.topk_k).
"""

from django.db import migrations


def _copy_to_one_place(apps, schema_editor):  # type: ignore[no-untyped-def]
    settings_model = apps.get_model("pairwise", "PairwiseSettings")
    campaign_model = apps.get_model("labeling", "Campaign")
    for row in settings_model.objects.select_related("campaign"):
        campaign_model.objects.filter(pk=row.campaign_id).update(judging_mode=row.mode)
        if row.campaign.topk_k:
            settings_model.objects.filter(pk=row.pk).update(k=row.campaign.topk_k)


class Migration(migrations.Migration):
    dependencies = [
        ("pairwise", "0001_initial"),
        ("labeling", "0004_pair_judging_modes"),
    ]
    run_before = [("labeling", "0005_mode_stored_once")]

    operations = [
        migrations.RunPython(_copy_to_one_place, migrations.RunPython.noop),
        migrations.RemoveField(model_name="pairwisesettings", name="mode"),
    ]
