"""What a ticket file proved about an order (docs/architecture/transfers.md "Transfer detection"): the barcodes kept as
HMACs, the other live orders holding the same barcodes or the identical file, the problems found in their
order of gravity, and the staff-facing details (barcodes masked to their last 4 characters, the page text
with every barcode redacted).
"""

from __future__ import annotations

import hashlib
import hmac
from dataclasses import dataclass

from django.conf import settings

from config.core.keys import derive_key, service_keys
from orders.models import Order
from orders.transfers.models import TicketBarcode, TicketFileCheck, TransferCase
from orders.transfers.reading.barcodes import FileReading, ReadBarcode, ticket_file_read_isolated

S = Order.Status
K = TransferCase.Kind
BARCODE_KEY_PURPOSE = "transfers.ticket-barcode"
ACTOR = "system:transfers"
NOT_LIVE = (S.CANCELED, S.EXPIRED)
# One lock for the short write of every check: two files carrying the same barcode, checked at once for
# two orders, must see each other (PostgreSQL).
CHECK_LOCK_KEY = 0x7472_6673  # "trfs"
TEXT_EXCERPT_CHARS = 1000

# TicketFileCheck.verdict: "verified", a reading failure (barcodes.READ_FAILURES), or one of these.
VERIFIED = "verified"
NO_BARCODE = "no_barcode"
COUNT_MISMATCH = "count_mismatch"
REPEATED_IN_FILE = "repeated_in_file"
HELD_BY_OTHER_ORDER = "held_by_other_order"
REPLAYED_FILE = "replayed_file"
TOO_MANY_ATTACHMENTS = "too_many_attachments"
NOT_READ = "not_read"


@dataclass(frozen=True)
class TicketFile:
    name: str
    data: bytes
    sha256: str
    reading: FileReading


def barcode_digest(text: str, *, secret: str | None = None) -> str:
    """HMAC-SHA256 of a barcode's text under the service's barcode key (``SECRET_KEY`` unless given)."""
    key = derive_key(secret or settings.SECRET_KEY, BARCODE_KEY_PURPOSE)
    return hmac.new(key, text.encode("utf-8", "surrogateescape"), hashlib.sha256).hexdigest()


def barcode_digests(text: str) -> list[str]:
    """The digest under ``SECRET_KEY`` and under each fallback key (lookups across a key rotation)."""
    return list(dict.fromkeys(barcode_digest(text, secret=key) for key in service_keys()))


def bundle_sha256(files: list[TicketFile]) -> str:
    if len(files) == 1:
        return files[0].sha256
    return hashlib.sha256("\n".join(sorted(f.sha256 for f in files)).encode()).hexdigest()


def live_others(order: Order):
    return Order.objects.exclude(pk=order.pk).exclude(status__in=NOT_LIVE)


def replayed_by(*, order: Order, files: list[TicketFile]) -> list[int]:
    """Other live orders that gave one of these very files (with barcodes) before."""
    shas = [f.sha256 for f in files]
    if not shas:
        return []
    others = live_others(order)
    by_check = TicketFileCheck.objects.filter(file_sha256__in=shas, order__in=others, barcodes__gt=0)
    by_barcode = TicketBarcode.objects.filter(file_sha256__in=shas, order__in=others)
    pks = set(by_check.values_list("order_id", flat=True)) | set(
        by_barcode.values_list("order_id", flat=True)
    )
    return sorted(pks)


def held_by_others(*, order: Order, digests: dict[str, list[str]], exclude: set[int]) -> dict[int, list[str]]:
    """{other live order pk: [the texts of ours it holds]} (texts stay in memory only)."""
    text_of = {digest: text for text, candidates in digests.items() for digest in candidates}
    if not text_of:
        return {}
    held: dict[int, list[str]] = {}
    rows = TicketBarcode.objects.filter(digest__in=list(text_of), order__in=live_others(order)).exclude(
        order_id__in=exclude
    )
    for order_pk, digest in rows.values_list("order_id", "digest"):
        held.setdefault(order_pk, [])
        if text_of[digest] not in held[order_pk]:
            held[order_pk].append(text_of[digest])
    return held


def problems(*, refused, failed, distinct, quantity, repeated, held, replayed) -> list[tuple[str, str, str]]:
    """[(verdict, case kind, summary)], the most telling first."""
    found: list[tuple[str, str, str]] = []
    if refused:
        found.append(
            (
                refused,
                K.UNPARSED,
                f"The ticket files were not read: {refused.replace('_', ' ')} (at most 20).",
            )
        )
    for f in [] if refused else failed:
        found.append(
            (
                f.reading.verdict,
                K.UNPARSED,
                f"The ticket file {f.name} could not be read: {f.reading.problem}.",
            )
        )
    if replayed:
        found.append(
            (
                REPLAYED_FILE,
                K.REPLAY_SUSPECTED,
                f"The identical ticket file was given for {len(replayed)} other live order(s).",
            )
        )
    if held:
        found.append(
            (
                HELD_BY_OTHER_ORDER,
                K.DUPLICATE_BARCODE,
                f"{sum(len(v) for v in held.values())} barcode(s) of this file are held by "
                f"{len(held)} other live order(s).",
            )
        )
    if repeated:
        found.append(
            (
                REPEATED_IN_FILE,
                K.DUPLICATE_BARCODE,
                f"{len(repeated)} barcode(s) appear more than once in the ticket file.",
            )
        )
    if not refused and not failed and not distinct:
        found.append((NO_BARCODE, K.UNPARSED, "No barcode was found in the ticket file."))
    elif not refused and not failed and len(distinct) != quantity:
        found.append(
            (
                COUNT_MISMATCH,
                K.MISMATCH,
                f"The ticket file has {len(distinct)} distinct barcode(s); the order is for {quantity}.",
            )
        )
    return found


def barcodes_keep(*, order: Order, files: list[TicketFile]) -> None:
    rows = {}
    for f in files:
        for barcode in f.reading.barcodes:
            digest = barcode_digest(barcode.text)
            rows.setdefault(
                digest,
                TicketBarcode(
                    order=order,
                    digest=digest,
                    last4=barcode.last4,
                    symbology=barcode.symbology[:20],
                    file_sha256=f.sha256,
                    page=min(barcode.page, 32767),
                ),
            )
    if rows:
        TicketBarcode.objects.bulk_create(list(rows.values()), ignore_conflicts=True)


def masked(barcode: ReadBarcode) -> dict:
    return {"last4": barcode.last4, "symbology": barcode.symbology, "page": barcode.page}


def redacted(text: str, secrets: list[str]) -> str:
    for secret in sorted(secrets, key=len, reverse=True):
        text = text.replace(secret, f"…{secret[-4:]}")
    return text


def details(*, order, files, source, barcodes, distinct, problems, held, replayed, repeated) -> dict:
    texts = "\n".join(t for f in files for t in f.reading.text)
    excerpt = redacted(texts, distinct)[:TEXT_EXCERPT_CHARS]
    other_ids = dict(Order.objects.filter(pk__in=[*held, *replayed]).values_list("pk", "order_id"))
    return {
        "source": source,
        "quantity": order.quantity,
        "distinct": len(distinct),
        "files": [
            {
                "name": f.name[:200],
                "sha256": f.sha256,
                "size": len(f.data),
                "kind": f.reading.kind,
                "reading": f.reading.verdict,
                "pages": f.reading.pages,
                "page_count": f.reading.page_count,
                "barcodes": len(f.reading.barcodes),
                "seconds": round(f.reading.seconds, 4),
                "cpu_seconds": round(f.reading.cpu_seconds, 4),
            }
            for f in files
        ],
        "barcodes": [masked(b) for b in barcodes],
        "problems": [{"verdict": v, "case": k, "summary": s} for v, k, s in problems],
        "repeated_last4": [t[-4:] for t in repeated],
        "held_by": {other_ids.get(pk, str(pk)): [t[-4:] for t in texts_] for pk, texts_ in held.items()},
        "replayed_by": [other_ids.get(pk, str(pk)) for pk in replayed],
        "event_named": bool(order.event_id and order.event.name.lower() in texts.lower()),
        "text_excerpt": excerpt,
        "applied": False,
    }


def ticket_file_named(name: str, data: bytes) -> TicketFile:
    return TicketFile(
        name=name, data=data, sha256=hashlib.sha256(data).hexdigest(), reading=ticket_file_read_isolated(data)
    )


def ticket_file_unread(name: str, data: bytes) -> TicketFile:
    """A file not read at all (refused before reading): its sha256 only."""
    reading = FileReading(kind="unread", verdict=NOT_READ)
    return TicketFile(name=name, data=data, sha256=hashlib.sha256(data).hexdigest(), reading=reading)
