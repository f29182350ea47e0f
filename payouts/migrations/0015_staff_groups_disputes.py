"""The staff groups see the card disputes (with their history) and the payment platform's events: "Support
(read only)" and "Operations" get their view permission. Like the groups' first migration, running it again
adds what is missing and removes nothing."""

from django.apps import apps as global_apps
from django.contrib.auth.management import create_permissions
from django.db import migrations

SHOWN = (
    ("payouts", "dispute"),
    ("payouts", "disputestatushistory"),
    ("payouts", "platformevent"),
)


def add_dispute_views(apps, schema_editor):
    create_permissions(
        global_apps.get_app_config("payouts"), apps=apps, verbosity=0, using=schema_editor.connection.alias
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
        ("payouts", "0014_platform_events_and_disputes"),
        ("payouts", "0013_staff_groups_transfers"),
    ]

    operations = [migrations.RunPython(add_dispute_views, migrations.RunPython.noop)]
