from django.db import migrations


class Migration(migrations.Migration):
    # Dropping a column only marks it dropped: no rewrite of the table.

    dependencies = [
        ("orders", "0009_confirmation_email_to_mail_once"),
    ]

    operations = [
        migrations.RemoveField(model_name="order", name="confirmation_email_claimed_at"),
        migrations.RemoveField(model_name="order", name="confirmation_email_handed_over_at"),
        migrations.RemoveField(model_name="order", name="confirmation_email_sent_at"),
        migrations.RemoveField(model_name="order", name="confirmation_email_unconfirmed"),
        migrations.RemoveField(model_name="order", name="confirmation_email_to"),
    ]
