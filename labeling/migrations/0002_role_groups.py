"""Create the three role groups and give coordinators and admins their global permissions."""

from django.db import migrations


def create_role_groups(apps, schema_editor):  # type: ignore[no-untyped-def]
    from django.contrib.auth.management import create_permissions

    # Permissions are normally created after all migrations; make them exist now.
    for app_config in apps.get_app_configs():
        app_config.models_module = True
        create_permissions(app_config, apps=apps, verbosity=0)
        app_config.models_module = None
    group_model = apps.get_model("auth", "Group")
    permission_model = apps.get_model("auth", "Permission")
    labeling = permission_model.objects.filter(content_type__app_label="labeling")
    group_model.objects.get_or_create(name="assessor")
    coordinator, _ = group_model.objects.get_or_create(name="coordinator")
    coordinator.permissions.add(
        *labeling.filter(codename__in=["add_campaign", "change_campaign", "view_campaign"])
    )
    admin, _ = group_model.objects.get_or_create(name="admin")
    admin.permissions.add(*labeling)


class Migration(migrations.Migration):
    dependencies = [
        ("labeling", "0001_initial"),
        ("auth", "0012_alter_user_first_name_max_length"),
        ("contenttypes", "0002_remove_content_type_name"),
    ]

    operations = [migrations.RunPython(create_role_groups, migrations.RunPython.noop)]
