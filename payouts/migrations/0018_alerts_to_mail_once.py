"""The partner's payment alerts' stamps move to the e-mails sent at most once (``core.MailOnce``: the alert's
kind as the purpose, the record's pk as the key), in batches of ids; the columns go in the next migration."""

from django.db import migrations

from config.core.mail_once import stamps_copy

# (purpose, table, stamp column)
STAMPS = [
    ("charge_declined", "payouts_charge", "decline_alerted_at"),
    ("refund_failed", "payouts_charge", "refund_failure_alerted_at"),
    ("payout_failed", "payouts_payout", "failure_alerted_at"),
    ("charge_disputed", "payouts_dispute", "partner_alerted_at"),
]


def copy_stamps(apps, schema_editor):
    for purpose, table, column in STAMPS:
        stamps_copy(
            schema_editor.connection,
            purpose=purpose,
            table=table,
            values_sql=f"'', r.{column}, NULL, r.{column}, false",
            where_sql=f"r.{column} IS NOT NULL",
        )


class Migration(migrations.Migration):
    atomic = False  # each batch commits on its own

    dependencies = [
        ("payouts", "0017_scale_indexes"),
        ("core", "0002_mailonce"),
    ]

    operations = [migrations.RunPython(copy_stamps, migrations.RunPython.noop, elidable=True)]
