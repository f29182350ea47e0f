"""The seller's confirmation e-mail stamps move from the order to the e-mails sent at most once
(``core.MailOnce``, purpose ``order_confirmation``, keyed by the order's pk); the columns go in the next
migration. Copied in batches of order ids, each its own short transaction, so a large table is never locked
for long; a row already there (written by the new code meanwhile) is kept."""

from django.db import migrations

BATCH = 5000

COPY = """
INSERT INTO core_mailonce (purpose, key, recipient, claimed_at, handed_over_at, sent_at, unconfirmed)
SELECT 'order_confirmation', o.id::text, o.confirmation_email_to, o.confirmation_email_claimed_at,
       o.confirmation_email_handed_over_at, o.confirmation_email_sent_at, o.confirmation_email_unconfirmed
FROM orders_order o
WHERE o.id >= %s AND o.id < %s
  AND (o.confirmation_email_claimed_at IS NOT NULL OR o.confirmation_email_handed_over_at IS NOT NULL
       OR o.confirmation_email_sent_at IS NOT NULL)
ON CONFLICT (purpose, key) DO NOTHING
"""


def copy_stamps(apps, schema_editor):
    with schema_editor.connection.cursor() as cursor:
        cursor.execute("SELECT min(id), max(id) FROM orders_order")
        low, high = cursor.fetchone()
        if low is None:
            return
        for start in range(low, high + 1, BATCH):
            with schema_editor.connection.cursor() as batch:
                batch.execute(COPY, [start, start + BATCH])


class Migration(migrations.Migration):
    atomic = False  # each batch commits on its own

    dependencies = [
        ("orders", "0008_notification_transition"),
        ("core", "0002_mailonce"),
    ]

    operations = [migrations.RunPython(copy_stamps, migrations.RunPython.noop, elidable=True)]
