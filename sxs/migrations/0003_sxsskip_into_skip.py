"""A side-by-side skip was written twice: as the mode's SxsSkip and as the core's Skip of kind
"sxs" (skips made before the core's Skip existed are in SxsSkip only). Every SxsSkip without its
Skip is copied into Skip, then SxsSkip goes. Backwards, the table comes back with a row per
side-by-side Skip, which the older code reads to keep a skipped task from its assessor."""

from django.db import migrations

# Skip.Reason as it stands here (a migration keeps its own copy): value -> label. SxsSkip stored
# "label" or "label: note".
REASON_LABELS = {
    "cannot_judge": "Cannot judge",
    "not_sure": "Not sure",
    "broken": "Document broken",
    "other": "Other",
}


def reason_and_note(text: str) -> tuple[str, str]:
    for value, label in REASON_LABELS.items():
        if text == label:
            return value, ""
        if text.startswith(label + ": "):
            return value, text[len(label) + 2 :]
    return "other", text


def copy_legacy_skips(apps, schema_editor):  # type: ignore[no-untyped-def]
    legacy = apps.get_model("sxs", "SxsSkip")
    skip = apps.get_model("labeling", "Skip")
    for old in legacy.objects.select_related("task").order_by("id").iterator():
        recorded = skip.objects.filter(
            campaign_id=old.campaign_id, assessor_id=old.assessor_id, kind="sxs", unit=old.task_id
        )
        if recorded.exists():
            continue
        reason, note = reason_and_note(old.reason)
        created = skip.objects.create(
            campaign_id=old.campaign_id,
            assessor_id=old.assessor_id,
            kind="sxs",
            unit=old.task_id,
            topic_id=old.task.topic_id,
            reason=reason,
            note=note,
        )
        skip.objects.filter(pk=created.pk).update(created_at=old.created_at)


def restore_legacy_skips(apps, schema_editor):  # type: ignore[no-untyped-def]
    legacy = apps.get_model("sxs", "SxsSkip")
    skip = apps.get_model("labeling", "Skip")
    task = apps.get_model("sxs", "SxsTask")
    tasks = set(task.objects.values_list("pk", flat=True))
    for row in skip.objects.filter(kind="sxs").order_by("id").iterator():
        if row.unit not in tasks:
            continue
        label = REASON_LABELS.get(row.reason, "Other")
        legacy.objects.create(
            campaign_id=row.campaign_id,
            task_id=row.unit,
            assessor_id=row.assessor_id,
            reason=(f"{label}: {row.note}" if row.note else label)[:500],
        )


class Migration(migrations.Migration):
    dependencies = [
        ("sxs", "0002_fit_settings"),
        ("labeling", "0022_judge_calls_not_sent"),
    ]

    operations = [
        migrations.RunPython(copy_legacy_skips, restore_legacy_skips),
        migrations.DeleteModel(name="SxsSkip"),
    ]
