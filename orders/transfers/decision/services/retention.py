"""Raw mail retention (docs/operations/receiving-mail.md "Retention and privacy"): the raw bytes of an inbound message are
kept ``INBOUND_RAW_RETENTION_DAYS`` (180), then deleted from storage.

The row stays, with its headers, verdicts and evidence, so staff still see what was decided and why; only
``raw`` is cleared and ``outcome`` becomes ``purged`` (the outcome it had is kept in
``verdicts["retention"]``); the mail's decoded text goes with it (the parse stage's text, the text in its
cases' details, the page text of its attachments' file checks). The raw file is content-addressed
(``inbound/xx/<sha256>.eml``) and may be named by several rows (one message to several transfer addresses):
it is deleted only once no row names it any more, so a row still within the retention keeps its copy.
"""

from __future__ import annotations

import logging
from datetime import datetime, timedelta

from django.conf import settings
from django.core.files.storage import default_storage
from django.db import transaction
from django.utils import timezone

from config.api.envelope import utc_iso
from orders.transfers.models import InboundMessage, TicketFileCheck, TransferCase

logger = logging.getLogger(__name__)

PURGE_BATCH = 500


def raw_purge(*, now: datetime | None = None, batch: int = PURGE_BATCH) -> int:
    """Beat: clear the raw mail of messages received before the retention, ``batch`` rows per transaction,
    and delete each stored file no row names any more. Returns the number of rows purged."""
    now = now or timezone.now()
    cutoff = now - timedelta(days=settings.INBOUND_RAW_RETENTION_DAYS)
    candidates = (
        InboundMessage.objects.filter(received_at__lt=cutoff).exclude(raw="").order_by("received_at", "id")
    )
    purged = 0
    while True:
        names: set[str] = set()
        with transaction.atomic():
            rows = list(candidates.select_for_update(skip_locked=True)[:batch])
            for message in rows:
                names.add(message.raw.name)
                message.verdicts = {
                    **_without_text(message.verdicts or {}),
                    "retention": {"raw_purged_at": utc_iso(now), "outcome": message.outcome},
                }
                message.raw.name = ""
                message.outcome = InboundMessage.Outcome.PURGED
            InboundMessage.objects.bulk_update(rows, ["raw", "verdicts", "outcome"])
            _decoded_text_purge([message.pk for message in rows])
        purged += len(rows)
        _files_delete(names)
        if len(rows) < batch:
            return purged


def _without_text(verdicts: dict) -> dict:
    """The verdicts without the mail's decoded text (the parse stage keeps it for staff)."""
    parse = verdicts.get("parse")
    if isinstance(parse, dict) and "text" in parse:
        return {**verdicts, "parse": {k: v for k, v in parse.items() if k != "text"}}
    return verdicts


def _decoded_text_purge(message_pks: list[int]) -> None:
    """The decoded text of these messages goes with their raw bytes: the mail's text in their cases' details,
    the page text of the ticket files their attachments were."""
    cases = [
        c for c in TransferCase.objects.filter(message_id__in=message_pks) if "text" in (c.details or {})
    ]
    for case in cases:
        case.details = {k: v for k, v in case.details.items() if k != "text"}
    TransferCase.objects.bulk_update(cases, ["details"])
    checks = [
        c
        for c in TicketFileCheck.objects.filter(message_id__in=message_pks)
        if "text_excerpt" in (c.details or {})
    ]
    for check in checks:
        check.details = {k: v for k, v in check.details.items() if k != "text_excerpt"}
    TicketFileCheck.objects.bulk_update(checks, ["details"])


def _files_delete(names: set[str]) -> None:
    """Delete each stored file that no row names any more (after the rows' commit)."""
    still_named = set(InboundMessage.objects.filter(raw__in=names).values_list("raw", flat=True).distinct())
    for name in sorted(names - still_named):
        try:
            default_storage.delete(name)
        except OSError:
            # No row names it any more, so no later run finds it: the operator has to.
            logger.exception("Could not delete the purged raw message %s from storage", name)
