"""The staff groups and the e-mails sent at most once: "Support (read only)" and "Operations" see them (the
admin's list of the messages handed to the mail server whose acceptance was never recorded). Like the groups'
first migration, running it again adds what is missing and removes nothing."""

from django.apps import apps as global_apps
from django.contrib.auth.management import create_permissions
from django.db import migrations

SUPPORT = "Support (read only)"
OPERATIONS = "Operations"


def add_mail_once_view(apps, schema_editor):
    create_permissions(
        global_apps.get_app_config("core"), apps=apps, verbosity=0, using=schema_editor.connection.alias
    )
    Group = apps.get_model("auth", "Group")
    Permission = apps.get_model("auth", "Permission")
    view = Permission.objects.get(content_type__app_label="core", codename="view_mailonce")
    for name in (SUPPORT, OPERATIONS):
        group, _ = Group.objects.get_or_create(name=name)
        group.permissions.add(view)


class Migration(migrations.Migration):
    dependencies = [
        ("payouts", "0019_remove_alert_stamps"),
        ("core", "0002_mailonce"),
    ]

    operations = [migrations.RunPython(add_mail_once_view, migrations.RunPython.noop)]
