"""The staff groups and transfer detection's pages: "Support (read only)" and "Operations" see the transfer
cases (with their history), the inbound messages and the evidence; "Operations" also takes the cases' named
actions (resolve, ask the seller, record accepted on the platform, mark recalled). Like the groups' first
migration, running it again adds what is missing and removes nothing."""

from django.apps import apps as global_apps
from django.contrib.auth.management import create_permissions
from django.db import migrations

SUPPORT = "Support (read only)"
OPERATIONS = "Operations"
SHOWN = (
    ("transfers", "transfercase"),
    ("transfers", "transfercasehistory"),
    ("transfers", "inboundmessage"),
    ("transfers", "transferevidence"),
)
OPERATIONS_EXTRA = (
    ("transfers", "resolve_transfer_case"),
    ("transfers", "ask_seller"),
    ("transfers", "mark_accepted_on_platform"),
    ("transfers", "mark_recalled"),
)


def add_transfer_permissions(apps, schema_editor):
    create_permissions(
        global_apps.get_app_config("transfers"), apps=apps, verbosity=0, using=schema_editor.connection.alias
    )
    Group = apps.get_model("auth", "Group")
    Permission = apps.get_model("auth", "Permission")

    def found(pairs):
        return [
            Permission.objects.get(content_type__app_label=app, codename=codename) for app, codename in pairs
        ]

    view = found((app, f"view_{model}") for app, model in SHOWN)
    support, _ = Group.objects.get_or_create(name=SUPPORT)
    support.permissions.add(*view)
    operations, _ = Group.objects.get_or_create(name=OPERATIONS)
    operations.permissions.add(*view, *found(OPERATIONS_EXTRA))


class Migration(migrations.Migration):
    dependencies = [
        ("payouts", "0012_staff_groups_status_histories"),
        ("transfers", "0001_initial"),
    ]

    operations = [migrations.RunPython(add_transfer_permissions, migrations.RunPython.noop)]
