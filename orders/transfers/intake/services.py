"""The intake stage's writes, the one entry point of inbound mail: every channel (the SMTP receiver, the e-mail providers' inbound
webhooks, test mode's simulated transfers) hands the raw bytes here.

``message_receive`` stores the raw message through the storage API (content-addressed, so one copy serves
every recipient), writes one ``InboundMessage`` row per accepted recipient and commits, all before the caller
answers its sender; the processing is published after commit. A
sender's retry of the same bytes to the same recipient finds its row and changes nothing.
"""

from __future__ import annotations

import hashlib
import logging
from dataclasses import dataclass

from django.conf import settings
from django.core.files.base import ContentFile
from django.core.files.storage import default_storage
from django.db import IntegrityError, transaction

from config.core.publish import publish_on_commit
from orders.transfers.intake.selectors import normalise_address, recipient_order
from orders.transfers.models import InboundMessage

logger = logging.getLogger(__name__)

PROCESS_TASK = "orders.transfers.tasks.message_process"


class MessageTooLarge(Exception):
    pass


@dataclass(frozen=True)
class Received:
    message: InboundMessage
    created: bool  # False: the same bytes to the same recipient were already stored (a retry)


def raw_storage_name(sha256: str) -> str:
    return f"inbound/{sha256[:2]}/{sha256}.eml"


def raw_store(raw: bytes, sha256: str) -> str:
    name = raw_storage_name(sha256)
    if default_storage.exists(name):
        return name
    return default_storage.save(name, ContentFile(raw))


def message_receive(
    raw: bytes | None,
    *,
    recipients: list[str],
    channel: str,
    mail_from: str = "",
    peer: str = "",
    helo: str = "",
    verdicts: dict | None = None,
) -> list[Received]:
    """Store ``raw`` for each recipient that is a receiving transfer address, commit, and publish the processing.

    ``raw`` is ``None`` when a provider handed over no raw MIME: the row is stored (its sha256 taken over the
    provider's parsed payload in ``verdicts["provider"]``) and processing opens an ``unverifiable`` case.
    ``verdicts`` holds what the channel already knows (SPF on direct SMTP, a provider's spam and virus
    flags). Recipients that are not receiving transfer addresses are skipped (the SMTP receiver refused them
    at RCPT already). Raises ``MessageTooLarge`` above ``INBOUND_MAX_BYTES``.
    """
    if raw is not None and len(raw) > settings.INBOUND_MAX_BYTES:
        raise MessageTooLarge(f"{len(raw)} bytes is more than {settings.INBOUND_MAX_BYTES}")
    body = raw if raw is not None else repr(sorted((verdicts or {}).get("provider", {}).items())).encode()
    sha256 = hashlib.sha256(body).hexdigest()
    stored_name = raw_store(raw, sha256) if raw is not None else ""
    results: list[Received] = []
    for address in dict.fromkeys(normalise_address(r) for r in recipients):
        order = recipient_order(address)
        if order is None:
            continue
        message = InboundMessage(
            channel=channel,
            recipient=address,
            sha256=sha256,
            size=len(raw) if raw is not None else 0,
            mail_from=mail_from[:254],
            peer=peer[:100],
            helo=helo[:254],
            order=order,
            verdicts=dict(verdicts or {}),
        )
        message.raw.name = stored_name
        results.append(_row_once(message))
    return results


def _row_once(message: InboundMessage) -> Received:
    # Race: the sender's retry arriving while the first delivery is being stored — the unique
    # (sha256, recipient) index lets one insert win; the other finds its row.
    try:
        with transaction.atomic():
            message.save(force_insert=True)
            publish_on_commit(PROCESS_TASK, message.pk)
    except IntegrityError:
        existing = InboundMessage.objects.get(sha256=message.sha256, recipient=message.recipient)
        return Received(message=existing, created=False)
    return Received(message=message, created=True)
