"""Quote creation, the batched writer of quotes kept in Redis first, and the purge of long-expired quotes.

A quote is named by a self-contained id (``quotes.codec``) and needs no database write when it is made: it is
kept in Redis (``quotes.quote_cache``) and the writer copies it to PostgreSQL within
``QUOTE_FLUSH_SECONDS``; order creation writes it first if the order comes sooner. While Redis does not
answer, its row is written at once."""

import logging
from datetime import datetime, timedelta
from decimal import Decimal
from typing import Any

from django.conf import settings
from django.core.exceptions import FieldDoesNotExist
from django.db import connection
from django.db.models import Q
from django.db.models.base import ModelState
from django.db.models.signals import post_init, pre_init
from django.utils import timezone

from catalog.models import Event, Row, Section
from catalog.queries import CatalogRow, row_best, row_by_pk, row_held, row_quoted
from config.core import rawsql
from config.core.pending import drain_all
from config.core.publish import publish
from config.core.purge import delete_in_batches

from . import errors, quote_cache
from .codec import QuoteClaims, new_quote_pk, quote_instant
from .models import Quote

logger = logging.getLogger(__name__)


def _expired_reason(*, status: str, starts_at: datetime) -> str | None:
    if status == Event.Status.CANCELED:
        return "canceled"
    if starts_at <= timezone.now():
        return "started"
    return None


def quote_create(
    *,
    partner_pk: int,
    event_id: str,
    section_name: str,
    quantity: int,
    row_name: str | None = None,
    user_metadata: dict[str, Any] | None = None,
    livemode: bool = True,
    found: dict | None = None,
) -> Quote:
    """Lock the row's current offer price for ``QUOTE_TTL_SECONDS``; the quote has the mode of the token
    (``livemode``) and can be ordered only in that mode.

    Checks, in order: EVENT_NOT_FOUND, EVENT_EXPIRED (started or canceled), SECTION_NOT_FOUND,
    ROW_NOT_FOUND, INSUFFICIENT_QUANTITY. The row is chosen among the section's rows
    (``catalog.queries.row_quoted``): those this process read under the catalog's and the event's versions in
    ``found`` (``catalog.queries.quote_read_keys``, read in the request's first round trip) while they are
    current, else (``None``: none read) read from the database now. Either way it is the database's row as of
    every change answered before this request. No quantity is reserved: the order takes it, under a row lock.
    """
    quoted = row_quoted(
        event_id=event_id, section_name=section_name, row_name=row_name, quantity=quantity, found=found
    )
    if quoted is None:
        # Something is missing: find out what, step by step, in the order of the checks.
        quoted = _row_step_by_step(
            event_id=event_id, section_name=section_name, row_name=row_name, quantity=quantity
        )
    else:
        # The usual case: the section's rows hold the row (and, for best-row, one that can take the
        # quantity); the checks keep their order.
        reason = _expired_reason(status=quoted.event_status, starts_at=quoted.starts_at)
        if reason:
            raise errors.EventExpired(details={"event_id": event_id, "reason": reason})
    if quantity > quoted.available_quantity:
        raise errors.InsufficientQuantity(
            details={"requested": quantity, "available": quoted.available_quantity}
        )
    return _quote_insert(
        partner_pk=partner_pk,
        quoted=quoted,
        quantity=quantity,
        user_metadata=user_metadata,
        livemode=livemode,
    )


def _row_step_by_step(*, event_id: str, section_name: str, row_name: str | None, quantity: int) -> CatalogRow:
    """The quoted row, found one model at a time, raising the first check's error that fails."""
    event = Event.objects.filter(event_id=event_id).first()
    if event is None:
        raise errors.EventNotFound(details={"event_id": event_id})
    reason = _expired_reason(status=event.status, starts_at=event.starts_at)
    if reason:
        raise errors.EventExpired(details={"event_id": event_id, "reason": reason})
    section = Section.objects.filter(event=event, name=section_name).first()
    if section is None:
        raise errors.SectionNotFound(details={"event_id": event_id, "section_name": section_name})
    if row_name is None:
        # The usual case's query again: no row can take the quantity (unless one just became able to).
        quoted = row_best(event_id=event_id, section_name=section_name, quantity=quantity)
        if quoted is None:
            left = Row.objects.filter(section=section).values_list("available_quantity", flat=True)
            raise errors.InsufficientQuantity(
                details={"requested": quantity, "available": max(left, default=0)}
            )
        return quoted
    row = Row.objects.filter(section=section, name=row_name).first()
    if row is None:
        raise errors.RowNotFound(details={"section_name": section_name, "row_name": row_name})
    return CatalogRow.of(event=event, section=section, row=row)


def quote_ahead(
    *,
    partner_pk: int,
    event_id: str,
    section_name: str,
    quantity: int,
    row_name: str | None = None,
    user_metadata: dict[str, Any] | None = None,
    livemode: bool = True,
    found: dict,
) -> Quote | None:
    """The quote :func:`quote_create` would make if the catalog's and the event's versions are still those in
    ``found``, made from the section's rows this process holds under them: not stored yet (the caller stores
    it with :func:`quote_cache.quote_store_commands`, in the round trip that confirms the versions). ``None``
    when the rows are not held, or when the quote would be refused (the usual path then gives the error)."""
    quoted = row_held(
        event_id=event_id, section_name=section_name, row_name=row_name, quantity=quantity, found=found
    )
    if (
        quoted is None
        or _expired_reason(status=quoted.event_status, starts_at=quoted.starts_at)
        or quantity > quoted.available_quantity
    ):
        return None
    return _quote_new(
        partner_pk=partner_pk,
        quoted=quoted,
        quantity=quantity,
        user_metadata=user_metadata,
        livemode=livemode,
    )


def quote_pending_counted(pending: int) -> None:
    """A quote was appended to Redis's pending list, which now holds ``pending`` (made ahead and stored in its
    request's round trip, or stored by :func:`_quote_store`): a burst asks the writer for a flush at once rather
    than at the next beat."""
    if pending % FLUSH_AT_PENDING == 0:
        publish("quotes.tasks.quotes_flush")


def _quote_insert(
    *,
    partner_pk: int,
    quoted: CatalogRow,
    quantity: int,
    user_metadata: dict[str, Any] | None,
    livemode: bool,
) -> Quote:
    quote = _quote_new(
        partner_pk=partner_pk,
        quoted=quoted,
        quantity=quantity,
        user_metadata=user_metadata,
        livemode=livemode,
    )
    _quote_store(quote)
    return quote


def _quote_new(
    *,
    partner_pk: int,
    quoted: CatalogRow,
    quantity: int,
    user_metadata: dict[str, Any] | None,
    livemode: bool,
) -> Quote:
    now = quote_instant(timezone.now())
    return _quote_of(
        quoted,
        pk=new_quote_pk(),
        partner_pk=partner_pk,
        livemode=livemode,
        quantity=quantity,
        offer_price=quoted.offer_price,
        face_value=quoted.face_value,
        user_metadata=user_metadata or {},
        created_at=now,
        expires_at=now + timedelta(seconds=settings.QUOTE_TTL_SECONDS),
    )


def _quote_of(quoted: CatalogRow, *, offer_price: Decimal, quantity: int, **values: Any) -> Quote:
    """A quote of the row ``quoted``, with its snapshot of the catalog's names and restrictions."""
    return _quote_by_position(
        {
            "id": values["pk"],
            "partner_id": values["partner_pk"],
            "livemode": values["livemode"],
            "event_id": quoted.event_pk,
            "section_id": quoted.section_pk,
            "row_id": quoted.row_pk,
            "quantity": quantity,
            "offer_price": offer_price,
            "total_price": offer_price * quantity,
            "face_value": values["face_value"],
            "event_name": quoted.event_name,
            "section_name": quoted.section_name,
            "section_name_display": quoted.section_name_display,
            "row_name": quoted.row_name,
            "row_name_display": quoted.row_name_display,
            "general_admission": quoted.general_admission,
            "restrictions": list(quoted.restrictions or []),
            "restriction_detail": quoted.restriction_detail or None,
            "primary_site": quoted.primary_site,
            "user_metadata": values["user_metadata"],
            "created_at": values["created_at"],
            "expires_at": values["expires_at"],
            "consumed_at": None,
        }
    )


_ATTNAMES = tuple(field.attname for field in Quote._meta.concrete_fields)


def _quote_by_position(values: dict[str, Any]) -> Quote:
    """``Quote(**values)``, every concrete column named: the instance Django's ``Model.__init__`` makes, with its
    columns set as that method sets them on a new instance (each in the instance's ``__dict__``: a new instance
    holds no related object a key's descriptor would drop), without the method's per-field loop (a quote is
    made on every request; the loop was 8 µs of it). While any receiver of ``pre_init`` or ``post_init`` is
    connected, the model's own constructor runs, which sends them. A column missing raises ``KeyError``."""
    columns = [values[name] for name in _ATTNAMES]
    if pre_init.receivers or post_init.receivers:
        return Quote(*columns)
    quote = Quote.__new__(Quote)
    quote._state = ModelState()
    quote.__dict__.update(zip(_ATTNAMES, columns, strict=True))
    return quote


# A burst that fills this many pending quotes asks for a flush at once rather than at the next beat.
FLUSH_AT_PENDING = 1000
FLUSH_BATCH = 5000  # quotes a run of the writer copies in one transaction


def _quote_store(quote: Quote) -> None:
    """Keep the new quote: in Redis, for the batched writer to copy to the database within
    ``QUOTE_FLUSH_SECONDS``; in the database at once when Redis does not answer."""
    try:
        pending = quote_cache.quote_pending_add(quote)
    except Exception:
        logger.warning("quote cache unreachable; quote written to the database")
    else:
        quote_pending_counted(pending)
        return
    rawsql.insert(quote, with_pk=True)


def quotes_flush(*, limit: int = FLUSH_BATCH) -> int:
    """The batched writer: copy the oldest ``limit`` quotes of Redis's pending list to the database in one
    transaction, then take them off the list; returns how many it took off.

    At least once: a writer that dies before trimming leaves them for the next run, whose insert skips those
    already written (by it, or by an order that used the quote first). A quote whose partner or row was
    deleted meanwhile is dropped. Run by beat every ``QUOTE_FLUSH_SECONDS`` and on demand by the admin's
    pages."""
    return quote_cache.pending_list.drain(_quotes_write, limit=limit, as_stored=True)


def _quotes_write(entries: list[bytes]) -> None:
    """One statement: PostgreSQL reads the entries as Redis holds them (``quote_cache.pending_insert_sql``), so
    the writer makes no model instance of them."""
    with connection.cursor() as cursor:
        cursor.execute(quote_cache.pending_insert_sql(), [quote_cache.pending_as_json(entries)])


def quotes_flush_all(*, rounds: int = 20) -> int:
    """Batches of the writer one after another while they come full, so a burst is written by one run."""
    return drain_all(quotes_flush, batch=FLUSH_BATCH, rounds=rounds)


def quote_unwritten(claims: QuoteClaims, *, quoted: CatalogRow | None = None) -> Quote | None:
    """The quote a self-contained id names, when its row is not (yet) in the database: Redis's copy, else
    (Redis lost it before the writer ran) rebuilt from the id, which proves the partner, mode, row, quantity,
    prices and times, with the names and restrictions of the catalog as they are now and no seller contact.
    ``quoted``: the row as the caller already read it. None when the row is gone from the catalog."""
    copy = quote_cache.quote_copy(claims.pk)
    if copy is not None:
        return copy
    if quoted is None:
        quoted = row_by_pk(claims.row_pk)
        if quoted is None:
            return None
    logger.info("quote rebuilt from its id", extra={"quote_pk": claims.pk})
    return _quote_of(
        quoted,
        pk=claims.pk,
        partner_pk=claims.partner_pk,
        livemode=claims.livemode,
        quantity=claims.quantity,
        offer_price=claims.offer_price,
        face_value=claims.face_value,
        user_metadata={},
        created_at=claims.created_at,
        expires_at=claims.expires_at,
    )


def quote_consume_sql(*, unwritten: bool) -> str:
    """The quote's single use as SQL, for a caller that runs it inside one statement of its own (the order's
    creation: a data-modifying ``WITH``). It returns the quote's id when this statement consumed it, nothing
    when it was consumed already.

    Parameters: the instant and the quote's pk (``UPDATE … WHERE consumed_at IS NULL``); for a quote whose row
    is not written yet (``unwritten``), its row, consumed, as one JSON object (``rawsql.json_row`` with its pk):
    inserted, or, if the batched writer wrote it meanwhile, that row consumed if it was not.
    Race: N requests with one quote — the others wait for the first one's update (or insert), then find it
    consumed."""
    if not unwritten:
        return (
            f"UPDATE {Quote._meta.db_table} SET consumed_at = %s"  # noqa: S608 - names from the model
            " WHERE id = %s AND consumed_at IS NULL RETURNING id"
        )
    table, names, fields, pk = rawsql.columns(Quote)
    quote_name = connection.ops.quote_name
    select = ", ".join(f"x.{quote_name(f.column)}" for f in fields)
    consumed = quote_name(Quote._meta.get_field("consumed_at").column)
    return (
        f"INSERT INTO {table} ({pk}, {names}) SELECT x.{pk}, {select}"  # noqa: S608 - names from the model
        f" FROM jsonb_populate_record(NULL::{table}, %s::jsonb) AS x ON CONFLICT ({pk})"
        f" DO UPDATE SET {consumed} = EXCLUDED.{consumed} WHERE {table}.{consumed} IS NULL RETURNING {pk}"
    )


def _order_relation_name() -> str | None:
    """The reverse accessor of an order's link to its quote, once the orders app defines one."""
    try:
        field = Quote._meta.get_field("order")
    except FieldDoesNotExist:
        return None
    return field.name if field.is_relation else None


def quote_purge_expired(*, retention_days: int | None = None, batch_size: int = 1000) -> int:
    """Delete quotes that expired unused more than ``retention_days`` ago, ``batch_size`` at a time.

    A consumed quote is never deleted (its order keeps it, with PROTECT), nor one an order points to.
    Returns the number deleted.
    """
    days = settings.QUOTE_RETENTION_DAYS if retention_days is None else retention_days
    cutoff = timezone.now() - timedelta(days=days)
    candidates = Quote.objects.filter(consumed_at__isnull=True, expires_at__lt=cutoff)
    order_relation = _order_relation_name()
    if order_relation:
        candidates = candidates.filter(**{f"{order_relation}__isnull": True})
    # Re-checked in the DELETE itself: a quote consumed since the SELECT is kept.
    deleted = delete_in_batches(
        candidates.order_by("expires_at", "id"), batch_size=batch_size, recheck=Q(consumed_at__isnull=True)
    )
    if deleted:
        logger.info("purged %d expired quotes older than %d days", deleted, days)
    return deleted
