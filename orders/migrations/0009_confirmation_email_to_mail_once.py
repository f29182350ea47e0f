"""The seller's confirmation e-mail stamps move from the order to the e-mails sent at most once
(``core.MailOnce``, purpose ``order_confirmation``, keyed by the order's pk), in batches of order ids; the
columns go in the next migration."""

from django.db import migrations

from config.core.mail_once import stamps_copy


def copy_stamps(apps, schema_editor):
    stamps_copy(
        schema_editor.connection,
        purpose="order_confirmation",
        table="orders_order",
        values_sql=(
            "r.confirmation_email_to, r.confirmation_email_claimed_at, r.confirmation_email_handed_over_at, "
            "r.confirmation_email_sent_at, r.confirmation_email_unconfirmed"
        ),
        where_sql=(
            "r.confirmation_email_claimed_at IS NOT NULL OR r.confirmation_email_handed_over_at IS NOT NULL "
            "OR r.confirmation_email_sent_at IS NOT NULL"
        ),
    )


class Migration(migrations.Migration):
    atomic = False  # each batch commits on its own

    dependencies = [
        ("orders", "0008_notification_transition"),
        ("core", "0002_mailonce"),
    ]

    operations = [migrations.RunPython(copy_stamps, migrations.RunPython.noop, elidable=True)]
