from django.db import migrations


class Migration(migrations.Migration):
    # Dropping a column only marks it dropped: no rewrite of the table.

    dependencies = [
        ("transfers", "0007_question_to_mail_once"),
    ]

    operations = [
        migrations.RemoveField(model_name="transfercase", name="question_claimed_at"),
        migrations.RemoveField(model_name="transfercase", name="question_sent_at"),
        migrations.RemoveField(model_name="transfercase", name="question_to"),
    ]
