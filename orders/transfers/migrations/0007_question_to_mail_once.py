"""The seller's question moves to the e-mails sent at most once (``core.MailOnce``, purpose
``transfer_question``, keyed by the case's pk): the sweep's index no longer names the sent stamp (built
concurrently, before the old one is dropped), the stamps are copied in batches of ids, and the columns go
in the next migration."""

from django.contrib.postgres.operations import AddIndexConcurrently, RemoveIndexConcurrently
from django.db import migrations, models

from config.core.mail_once import stamps_copy


def copy_stamps(apps, schema_editor):
    stamps_copy(
        schema_editor.connection,
        purpose="transfer_question",
        table="transfers_transfercase",
        values_sql="r.question_to, r.question_claimed_at, NULL, r.question_sent_at, false",
        where_sql="r.question_claimed_at IS NOT NULL OR r.question_sent_at IS NOT NULL",
    )


class Migration(migrations.Migration):
    atomic = False  # the indexes are built concurrently; each batch commits on its own

    dependencies = [
        ("transfers", "0006_template_approval_registry"),
        ("core", "0002_mailonce"),
    ]

    operations = [
        AddIndexConcurrently(
            model_name="transfercase",
            index=models.Index(
                condition=models.Q(("question__gt", "")),
                fields=["resolved_at"],
                name="transfer_case_question_asked",
            ),
        ),
        RemoveIndexConcurrently(model_name="transfercase", name="transfer_case_question_due"),
        migrations.RunPython(copy_stamps, migrations.RunPython.noop, elidable=True),
    ]
