"""The staff groups and the platform templates: "Support (read only)" sees every template version and its
history; "Operations" also makes, tests and activates templates (``manage_platform_templates``) and approves a
change of a platform's sender domains or accept-link hosts made by someone else (``approve_platform_registry``).
Like the groups' first migration, running it again adds what is missing and removes nothing."""

from django.apps import apps as global_apps
from django.contrib.auth.management import create_permissions
from django.db import migrations

SUPPORT = "Support (read only)"
OPERATIONS = "Operations"
SHOWN = (("transfers", "platformtemplateversion"), ("transfers", "platformtemplatehistory"))
OPERATIONS_EXTRA = (
    ("transfers", "manage_platform_templates"),
    ("transfers", "approve_platform_registry"),
)


def add_platform_template_permissions(apps, schema_editor):
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
        ("payouts", "0015_staff_groups_disputes"),
        ("transfers", "0004_platform_template_versions"),
    ]

    operations = [migrations.RunPython(add_platform_template_permissions, migrations.RunPython.noop)]
