"""The ticket-file stage's entry points that write (docs/architecture/transfers.md "Transfer detection"): ticket files
as evidence, a ``pdf`` order's own PDF, checked when the order is confirmed, and the PDFs and images attached
to mail sent to a ``mobile_qr`` order's transfer address. ``records`` holds what a file proved.

A file is verified when it was read whole, its distinct barcodes number exactly the order's quantity
(general admission too), none repeats inside it, none is held by another live order (any status but
canceled and expired), and no other live order gave the very same file. A verified file moves an order
awaiting its transfer to ``ticket_received`` (reason ``file_verified``, ``transfer.source`` ``file``);
anything else opens a staff case and leaves the order where it is:

- ``unparsed``: nothing could be read (encrypted, damaged, over the limits, too slow) or no barcode found;
- ``mismatch``: the count of distinct barcodes is not the quantity (``transfer.state`` becomes ``mismatch``);
- ``duplicate_barcode``: a barcode repeats inside the file, or another live order holds it through a
  different file: a case on both orders, since a ticket sold twice makes both suspect;
- ``replay_suspected``: another live order gave the identical file (same sha256, with barcodes): a case on
  both, instead of ``duplicate_barcode`` (the shared barcodes are explained by the shared file).

A barcode is kept only as an HMAC-SHA256 under a key derived from ``SECRET_KEY`` plus its last 4
characters (``TicketBarcode``); lookups try the keys of ``SECRET_KEY_FALLBACKS`` too, so a key rotation
keeps finding the barcodes of earlier files. The same file checked again for the same order returns the
earlier ``TicketFileCheck``: a notification delivered twice, or the same mail processed twice, checks once.
"""

from __future__ import annotations

import logging
import time
from email import policy
from email.parser import BytesParser

from django.conf import settings
from django.core.files.storage import default_storage
from django.db import connection, transaction

from orders import outbox
from orders.models import Order
from orders.signals import Transition
from orders.transfers.decision import state
from orders.transfers.files import records
from orders.transfers.files.records import ACTOR, CHECK_LOCK_KEY, TOO_MANY_ATTACHMENTS, VERIFIED, TicketFile
from orders.transfers.models import InboundMessage, TicketFileCheck, TransferCase
from orders.transfers.reading.barcodes import file_kind

logger = logging.getLogger(__name__)

S = Order.Status
K = TransferCase.Kind
MAX_ATTACHMENTS = 20
# The parts of a mail read as ticket files: PDFs and images, attached or inline (a QR code pasted in the body).
ATTACHMENT_TYPES = ("application/pdf", "image/png", "image/jpeg", "image/gif", "image/webp")
ATTACHMENT_SUFFIXES = (".pdf", ".png", ".jpg", ".jpeg", ".gif", ".webp")


def ticket_file_check(
    *, order: Order, data: bytes, message: InboundMessage | None = None, source: str = "pdf"
):
    """Read ``data`` (a PDF or an image), record what it proved about ``order`` and act on it: the order
    received when the file is verified and the order awaits its transfer, a staff case otherwise. Returns
    the ``TicketFileCheck`` (the earlier one when this order's same file was checked already)."""
    return files_check(
        order=order,
        files=[records.ticket_file_named(f"{order.order_id}.pdf", data)],
        message=message,
        source=source,
    )


def files_check(
    *,
    order: Order,
    files: list[TicketFile],
    message: InboundMessage | None = None,
    source: str = "pdf",
    refused: str = "",
) -> TicketFileCheck:
    """Check ``files`` together as the evidence of one delivery (one upload, or one mail's attachments).
    ``refused``: a verdict decided before reading (too many attachments)."""
    started = time.perf_counter()
    bundle_sha = records.bundle_sha256(files)
    earlier = TicketFileCheck.objects.filter(order=order, file_sha256=bundle_sha).first()
    if earlier is not None:
        return earlier
    barcodes = [b for f in files for b in f.reading.barcodes]
    texts = [b.text for b in barcodes]
    distinct = list(dict.fromkeys(texts))
    digests = {text: records.barcode_digests(text) for text in distinct}
    failed = [f for f in files if not f.reading.ok]
    with transaction.atomic():
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_advisory_xact_lock(%s)", [CHECK_LOCK_KEY])
        locked = Order.objects.select_for_update().get(pk=order.pk)
        earlier = TicketFileCheck.objects.filter(order=order, file_sha256=bundle_sha).first()
        if earlier is not None:
            return earlier  # checked meanwhile by a concurrent delivery of the same file
        replayed = records.replayed_by(order=locked, files=[f for f in files if f.reading.barcodes])
        held = records.held_by_others(order=locked, digests=digests, exclude=set(replayed))
        repeated = sorted({t for t in texts if texts.count(t) > 1})
        problems = records.problems(
            refused=refused,
            failed=failed,
            distinct=distinct,
            quantity=locked.quantity,
            repeated=repeated,
            held=held,
            replayed=replayed,
        )
        verdict = problems[0][0] if problems else VERIFIED
        records.barcodes_keep(order=locked, files=files)
        reading_seconds = sum(f.reading.seconds for f in files)
        pages = sum(f.reading.pages for f in files)
        check = TicketFileCheck.objects.create(
            order=locked,
            message=message,
            file_sha256=bundle_sha,
            pages=min(pages, 32767),
            barcodes=min(len(distinct), 32767),
            verdict=verdict,
            seconds=reading_seconds,
            details=records.details(
                order=locked,
                files=files,
                source=source,
                barcodes=barcodes,
                distinct=distinct,
                problems=problems,
                held=held,
                replayed=replayed,
                repeated=repeated,
            ),
        )
        if problems:
            _cases_open(
                order=locked,
                check=check,
                message=message,
                problems=problems,
                held=held,
                replayed=replayed,
                distinct=len(distinct),
            )
        else:
            _received(order=locked, check=check, quantity=len(distinct))
        check.seconds = reading_seconds + time.perf_counter() - started
        check.details["reading_seconds"] = round(reading_seconds, 4)
        check.details["seconds_per_page"] = round(check.seconds / pages, 4) if pages else None
        check.save(update_fields=["seconds", "details"])
    logger.info(
        "Ticket file check of %s (%s): %s, %d files, %d pages, %d distinct barcodes, %.3f s",
        order.order_id,
        source,
        verdict,
        len(files),
        pages,
        len(distinct),
        check.seconds,
    )
    return check


def _verified_unapplied(order_pks):
    """The checks of these orders' files that were verified before their order awaited its transfer and are not
    applied yet."""
    return TicketFileCheck.objects.filter(order_id__in=order_pks, verdict=VERIFIED, details__applied=False)


def _checks_its_pdf(order: Order) -> bool:
    """A ``pdf`` order with its file: the subscriber checks that file once the order is confirmed."""
    return order.delivery_type == Order.DeliveryType.PDF and order.has_ticket_file


def pending_file_apply(*, order: Order) -> TicketFileCheck | None:
    """An order that reached ``awaiting_transfer`` after one of its files was verified (mail with the
    tickets arrived before the confirmation): apply that check now, unless a barcode case opened since."""
    check = _verified_unapplied([order.pk]).order_by("-created_at", "-id").first()
    if check is None:
        return None
    with transaction.atomic():
        locked = Order.objects.select_for_update().get(pk=order.pk)
        suspect = TransferCase.objects.filter(
            order=locked,
            kind__in=(K.DUPLICATE_BARCODE, K.REPLAY_SUSPECTED),
            state__in=TransferCase.OPEN_STATES,
        ).exists()
        if suspect or locked.status != S.AWAITING_TRANSFER:
            return None
        _received(order=locked, check=check, quantity=check.barcodes)
        check.save(update_fields=["details"])
    return check


def _cases_open(*, order, check, message, problems, held, replayed, distinct) -> None:
    details = {"ticket_file_check": check.pk, "verdict": check.verdict, "file_sha256": check.file_sha256}
    for verdict, kind, summary in problems:
        state.case_open(
            order=order, kind=kind, summary=summary, message=message, details={**details, "problem": verdict}
        )
    for other in Order.objects.filter(pk__in=[*held, *replayed]):
        kind = K.REPLAY_SUSPECTED if other.pk in replayed else K.DUPLICATE_BARCODE
        what = (
            "the identical ticket file"
            if other.pk in replayed
            else (
                f"{len(held[other.pk])} barcode(s) of its ticket file (…"
                + ", …".join(t[-4:] for t in held[other.pk])
                + ")"
            )
        )
        state.case_open(
            order=other,
            kind=kind,
            summary=f"Order {order.order_id} was given {what}.",
            details={**details, "other_order": order.order_id},
        )
    # A count mismatch leaves the order awaiting its transfer with ``transfer.state`` ``mismatch``.
    mismatch = any(kind == K.MISMATCH for _, kind, _ in problems) and order.status == S.AWAITING_TRANSFER
    if mismatch and state.TRANSFER_MACHINE.allows(order.transfer.state, Order.TransferState.MISMATCH):
        state.transfer_transition(
            order=order,
            to=Order.TransferState.MISMATCH,
            actor=ACTOR,
            reason_code=outbox.REASON_TRANSFER_MISMATCH,
            reason=f"Ticket file: {distinct} distinct barcode(s) for {order.quantity} ticket(s)",
            quantity_detected=min(distinct, order.quantity),
            source=Order.TransferSource.FILE,
        )


def _received(*, order: Order, check: TicketFileCheck, quantity: int) -> None:
    """Move the order (locked by the caller) to ``ticket_received`` if it awaits its transfer."""
    if order.status != S.AWAITING_TRANSFER:
        check.details["applied"] = False
        check.details["order_status"] = order.status
        return
    state.order_receive(
        order=order,
        source=Order.TransferSource.FILE,
        actor=ACTOR,
        reason=f"Ticket file verified: {quantity} distinct barcode(s)",
        quantity=quantity,
    )
    check.details["applied"] = True


# --- mail attachments (mobile_qr) and the confirmation hook (pdf) -------------------------------------------
def message_attachments_check(message: InboundMessage, order: Order, raw: bytes) -> TicketFileCheck | None:
    """Check the ticket files attached to an authentic mail sent to ``order``'s transfer address.

    For the processing of inbound mail (``orders.transfers.pipeline.process``): call it once the message is proven
    authentic (``message.authentic``) and belongs to ``order``, with the message's raw bytes. Every PDF and
    image part is read; together they are one delivery (one image per ticket is fine): their distinct
    barcodes must number the order's quantity. An inline image with no barcode (a logo, a signature) is left
    out; an attached one counts. More than ``MAX_ATTACHMENTS`` (20) parts opens an ``unparsed`` case without
    reading any. Returns ``None`` when the mail carries no ticket file (nothing is recorded then), else the
    ``TicketFileCheck``: a verified check moves an order awaiting its transfer to ``ticket_received``
    (reason ``file_verified``), and one verified before the order reached ``awaiting_transfer`` is applied
    when it does; anything else opens its case. Processing the same message again returns the same check.
    """
    parts = attachment_parts(raw)
    if not parts:
        return None
    if len(parts) > MAX_ATTACHMENTS:
        files = [records.ticket_file_unread(name, data) for name, data, _ in parts]
        return files_check(
            order=order, files=files, message=message, source="attachment", refused=TOO_MANY_ATTACHMENTS
        )
    files = []
    for name, data, inline in parts:
        file = records.ticket_file_named(name, data)
        if inline and file.reading.kind == "image" and file.reading.ok and not file.reading.barcodes:
            continue  # decoration of the mail's HTML, not a ticket
        files.append(file)
    if not files:
        return None
    return files_check(order=order, files=files, message=message, source="attachment")


def attachment_parts(raw: bytes) -> list[tuple[str, bytes, bool]]:
    """[(file name, bytes, inline)] of every PDF or image part of the MIME message ``raw``."""
    parsed = BytesParser(policy=policy.compat32).parsebytes(raw)
    parts = []
    for index, part in enumerate(parsed.walk()):
        if part.is_multipart():
            continue
        content_type = part.get_content_type()
        name = str(part.get_filename() or "")
        if content_type not in ATTACHMENT_TYPES and not name.lower().endswith(ATTACHMENT_SUFFIXES):
            continue
        data = part.get_payload(decode=True) or b""
        if content_type.startswith("text/") or (file_kind(data) == "unknown" and not name):
            continue
        inline = part.get_content_disposition() != "attachment"
        parts.append((name or f"part-{index}", data, inline))
    return parts


def on_order_status_changed(transition: Transition) -> None:
    """Subscriber of the orders' moves: a ``pdf`` order that reached ``awaiting_transfer`` has its
    ticket PDF checked; any order reaching it with a file verified earlier (mail before confirmation) is
    received. A file that fails opens a case: the order's status never changes then."""
    if transition.to_status != S.AWAITING_TRANSFER:
        return
    order = Order.objects.filter(pk=transition.order_pk).first()
    if order is None or order.status != S.AWAITING_TRANSFER:
        return  # moved on meanwhile (test mode's advance, a cancel): nothing to check any more
    if _checks_its_pdf(order):
        ticket_file_check(order=order, data=ticket_pdf_read(order), source="pdf")
    pending_file_apply(order=order)


# The orders among a batch's moves that ``on_order_status_changed`` has work for: a ``pdf`` order with its file
# (``_checks_its_pdf``), or one with a verified file not applied yet (``_verified_unapplied``). In SQL whose text
# does not change with the batch (the pks as one array parameter): prepared once per connection, where the ORM
# compiled its two statements for every batch.
_WITH_FILE_WORK = (
    f'SELECT id FROM "{Order._meta.db_table}"'  # noqa: S608 - the models' tables
    " WHERE id = ANY(%(ids)s::bigint[]) AND delivery_type = %(pdf)s AND ticket_file <> ''"
    f' UNION SELECT order_id FROM "{TicketFileCheck._meta.db_table}"'
    " WHERE order_id = ANY(%(ids)s::bigint[]) AND verdict = %(verified)s AND (details -> 'applied') = 'false'::jsonb"
)


def orders_without_file_work(transitions: list[Transition]) -> set[int]:
    """``on_order_status_changed``'s ``idle`` (``orders.signals``): the pks of the orders among these moves that
    it would do nothing for: gone, neither a ``pdf`` order with its file nor one with a verified file waiting
    to be applied. One statement for a delivery batch."""
    ids = {t.order_pk for t in transitions}
    with connection.cursor() as cursor:
        cursor.execute(
            _WITH_FILE_WORK, {"ids": sorted(ids), "pdf": str(Order.DeliveryType.PDF), "verified": VERIFIED}
        )
        busy = {pk for (pk,) in cursor.fetchall()}
    return ids - busy


def ticket_files_sweep(*, now=None, grace_minutes: int = 10, limit: int = 50) -> int:
    """Periodic: check the PDF of every ``pdf`` order awaiting its transfer for more than ``grace_minutes``
    whose PDF was never checked (the subscriber failed for good, or a notification was purged). Returns how
    many it checked."""
    from datetime import timedelta

    from django.utils import timezone

    cutoff = (now or timezone.now()) - timedelta(minutes=grace_minutes)
    unchecked = (
        Order.objects.filter(
            status=S.AWAITING_TRANSFER, delivery_type=Order.DeliveryType.PDF, status_changed_at__lt=cutoff
        )
        .exclude(ticket_file="")
        .exclude(ticket_file_checks__details__source="pdf")
        .order_by("status_changed_at", "id")[:limit]
    )
    checked = 0
    for order in unchecked:
        ticket_file_check(order=order, data=ticket_pdf_read(order), source="pdf")
        checked += 1
    return checked


def ticket_pdf_read(order: Order) -> bytes:
    """The order's stored PDF (at most one byte past the upload limit: a larger file is refused as such);
    empty when the storage no longer has it (the check then opens an ``unparsed`` case)."""
    try:
        with default_storage.open(order.ticket_file.name, "rb") as handle:
            return handle.read(settings.ORDER_PDF_MAX_BYTES + 1)
    except FileNotFoundError:
        return b""
