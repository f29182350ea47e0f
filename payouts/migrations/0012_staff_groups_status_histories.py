"""The staff groups see the status histories that charges and webhook endpoints gained (shown inline on their
admin pages): "Support (read only)" and "Operations" get their view permission. Like the groups' first
migration, running it again adds what is missing and removes nothing."""

from django.apps import apps as global_apps
from django.contrib.auth.management import create_permissions
from django.db import migrations

SHOWN = (
    ("payouts", "chargestatushistory"),
    ("webhooks", "webhookendpointstatushistory"),
)


def add_history_views(apps, schema_editor):
    for label in sorted({app for app, _ in SHOWN}):
        create_permissions(
            global_apps.get_app_config(label), apps=apps, verbosity=0, using=schema_editor.connection.alias
        )
    Group = apps.get_model("auth", "Group")
    Permission = apps.get_model("auth", "Permission")
    view = [
        Permission.objects.get(content_type__app_label=app, codename=f"view_{model}") for app, model in SHOWN
    ]
    for name in ("Support (read only)", "Operations"):
        group, _ = Group.objects.get_or_create(name=name)
        group.permissions.add(*view)


class Migration(migrations.Migration):
    dependencies = [
        ("payouts", "0011_charge_status_history"),
        ("webhooks", "0003_endpoint_status_history"),
        ("payouts", "0010_staff_groups"),
    ]

    operations = [migrations.RunPython(add_history_views, migrations.RunPython.noop)]
