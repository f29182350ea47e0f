"""The partner's payment alerts' stamps move to the e-mails sent at most once (``core.MailOnce``: the alert's
kind as the purpose, the record's pk as the key); the columns go in the next migration. Copied in batches of
ids, each its own short transaction, so a large table is never locked for long; a row already there (written
by the new code meanwhile) is kept."""

from django.db import migrations

BATCH = 5000

# (purpose, table, stamp column)
STAMPS = [
    ("charge_declined", "payouts_charge", "decline_alerted_at"),
    ("refund_failed", "payouts_charge", "refund_failure_alerted_at"),
    ("payout_failed", "payouts_payout", "failure_alerted_at"),
    ("charge_disputed", "payouts_dispute", "partner_alerted_at"),
]


def copy_stamps(apps, schema_editor):
    connection = schema_editor.connection
    with connection.cursor() as cursor:
        for purpose, table, column in STAMPS:
            cursor.execute(f"SELECT min(id), max(id) FROM {table}")  # noqa: S608  (names from this file)
            low, high = cursor.fetchone()
            if low is None:
                continue
            for start in range(low, high + 1, BATCH):
                cursor.execute(
                    "INSERT INTO core_mailonce (purpose, key, recipient, claimed_at, sent_at, unconfirmed) "  # noqa: S608
                    f"SELECT %s, r.id::text, '', r.{column}, r.{column}, false FROM {table} r "
                    f"WHERE r.id >= %s AND r.id < %s AND r.{column} IS NOT NULL "
                    "ON CONFLICT (purpose, key) DO NOTHING",
                    [purpose, start, start + BATCH],
                )


class Migration(migrations.Migration):
    atomic = False  # each batch commits on its own

    dependencies = [
        ("payouts", "0017_scale_indexes"),
        ("core", "0002_mailonce"),
    ]

    operations = [migrations.RunPython(copy_stamps, migrations.RunPython.noop, elidable=True)]
