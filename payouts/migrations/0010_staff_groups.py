"""Two staff groups ship with the service (docs/staff-guide.md "Staff permissions and groups"): "Support (read only)" sees every
record the admin shows and acts on none; "Operations" also edits partners and the catalog and may take every
staff action. Neither group sees staff accounts, groups or sign-in devices: superusers manage those.

Running it again adds what is missing and removes nothing (a permission an administrator added to a group
by hand stays).
"""

from django.apps import apps as global_apps
from django.contrib.auth.management import create_permissions
from django.db import migrations

SUPPORT = "Support (read only)"
OPERATIONS = "Operations"

# Every model the admin shows, with the models of the tables shown inside its pages (status histories,
# attempts, portal users), as (app_label, model_name).
SHOWN = (
    ("admin", "logentry"),
    ("partners", "partner"),
    ("partners", "portaluser"),
    ("partners", "tokensession"),
    ("catalog", "venue"),
    ("catalog", "performer"),
    ("catalog", "event"),
    ("catalog", "section"),
    ("catalog", "row"),
    ("catalog", "rowquantityadjustment"),
    ("quotes", "quote"),
    ("orders", "order"),
    ("orders", "orderstatushistory"),
    ("orders", "notification"),
    ("webhooks", "webhookendpoint"),
    ("webhooks", "webhookdelivery"),
    ("webhooks", "webhookattempt"),
    ("payouts", "payoutaccount"),
    ("payouts", "creditcard"),
    ("payouts", "charge"),
    ("payouts", "payout"),
    ("payouts", "payoutstatushistory"),
    ("payouts", "refundstatushistory"),
    ("sandbox", "sandboxaccount"),
    ("sandbox", "sandboxcard"),
    ("sandbox", "sandboxcharge"),
    ("sandbox", "sandboxrefund"),
    ("sandbox", "sandboxpayout"),
)

# Operations, on top of viewing everything: editing partners and the catalog, adding them, removing a portal
# user's access, enabling a webhook endpoint again, and every named staff action. No other delete: orders,
# money and history are never deleted by hand, and a catalog mistake is corrected (or the event canceled),
# not erased.
OPERATIONS_EXTRA = (
    ("partners", "add_partner"),
    ("partners", "change_partner"),
    ("partners", "delete_portaluser"),
    ("partners", "rotate_credentials"),
    ("partners", "suspend_partner"),
    *(
        (
            ("catalog", f"{verb}_{model}")
            for model in ("venue", "performer", "event", "section", "row")
            for verb in ("add", "change")
        )
    ),
    ("webhooks", "change_webhookendpoint"),  # only "Enable again": the endpoint's fields stay read-only
    ("catalog", "cancel_event"),
    ("catalog", "adjust_row_quantity"),
    ("orders", "cancel_order"),
    ("orders", "mark_received"),
    ("payouts", "retry_refund"),
    ("payouts", "retry_payout"),
)


def _permissions(apps, pairs):
    Permission = apps.get_model("auth", "Permission")
    found = []
    for app_label, codename in pairs:
        found.append(Permission.objects.get(content_type__app_label=app_label, codename=codename))
    return found


def create_staff_groups(apps, schema_editor):
    # Permissions are created after the last migration (post_migrate): make the ones used here now.
    for label in sorted({app for app, _ in SHOWN}):
        create_permissions(
            global_apps.get_app_config(label), apps=apps, verbosity=0, using=schema_editor.connection.alias
        )
    Group = apps.get_model("auth", "Group")
    view = _permissions(apps, [(app, f"view_{model}") for app, model in SHOWN])
    support, _ = Group.objects.get_or_create(name=SUPPORT)
    support.permissions.add(*view)
    operations, _ = Group.objects.get_or_create(name=OPERATIONS)
    operations.permissions.add(*view, *_permissions(apps, OPERATIONS_EXTRA))


class Migration(migrations.Migration):
    dependencies = [
        ("admin", "0003_logentry_add_action_flag_choices"),
        ("auth", "0012_alter_user_first_name_max_length"),
        ("contenttypes", "0002_remove_content_type_name"),
        ("partners", "0005_staff_action_permissions"),
        ("catalog", "0005_staff_action_permissions"),
        ("quotes", "0002_quote_livemode"),
        ("orders", "0005_staff_action_permissions"),
        ("webhooks", "0001_initial"),
        ("sandbox", "0001_initial"),
        ("payouts", "0009_staff_action_permissions"),
    ]

    operations = [migrations.RunPython(create_staff_groups, migrations.RunPython.noop)]
