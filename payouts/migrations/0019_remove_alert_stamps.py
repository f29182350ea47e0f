from django.db import migrations


class Migration(migrations.Migration):
    # Dropping a column only marks it dropped: no rewrite of the table.

    dependencies = [
        ("payouts", "0018_alerts_to_mail_once"),
    ]

    operations = [
        migrations.RemoveField(model_name="charge", name="decline_alerted_at"),
        migrations.RemoveField(model_name="charge", name="refund_failure_alerted_at"),
        migrations.RemoveField(model_name="payout", name="failure_alerted_at"),
        migrations.RemoveField(model_name="dispute", name="partner_alerted_at"),
    ]
