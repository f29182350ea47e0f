"""The seller's question moves to the e-mails sent at most once (``core.MailOnce``, purpose
``transfer_question``, keyed by the case's pk): the sweep's index no longer names the sent stamp (built
concurrently, before the old one is dropped), the stamps are copied in batches of ids, each its own short
transaction, and the columns go in the next migration."""

from django.contrib.postgres.operations import AddIndexConcurrently, RemoveIndexConcurrently
from django.db import migrations, models

BATCH = 5000

COPY = """
INSERT INTO core_mailonce (purpose, key, recipient, claimed_at, sent_at, unconfirmed)
SELECT 'transfer_question', c.id::text, c.question_to, c.question_claimed_at, c.question_sent_at, false
FROM transfers_transfercase c
WHERE c.id >= %s AND c.id < %s AND (c.question_claimed_at IS NOT NULL OR c.question_sent_at IS NOT NULL)
ON CONFLICT (purpose, key) DO NOTHING
"""


def copy_stamps(apps, schema_editor):
    with schema_editor.connection.cursor() as cursor:
        cursor.execute("SELECT min(id), max(id) FROM transfers_transfercase")
        low, high = cursor.fetchone()
        if low is None:
            return
        for start in range(low, high + 1, BATCH):
            cursor.execute(COPY, [start, start + BATCH])


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
