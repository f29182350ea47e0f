"""Quote creation and the purge of long-expired quotes."""

import logging
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.core.exceptions import FieldDoesNotExist
from django.db.models import Q
from django.utils import timezone

from catalog.models import Event, Row, Section
from config.core import rawsql
from config.core.purge import delete_in_batches

from . import errors
from .models import Quote

logger = logging.getLogger(__name__)


def _best_row(*, section: Section, quantity: int) -> Row:
    """The row with the highest offer that can take ``quantity``; INSUFFICIENT_QUANTITY if none can."""
    rows = Row.objects.filter(section=section)
    row = rows.filter(available_quantity__gte=quantity).order_by("-offer_price", "name", "id").first()
    if row is None:
        available = max(rows.values_list("available_quantity", flat=True), default=0)
        raise errors.InsufficientQuantity(details={"requested": quantity, "available": available})
    return row


def quote_create(
    *,
    partner_pk: int,
    event_id: str,
    section_name: str,
    quantity: int,
    row_name: str | None = None,
    user_metadata: dict[str, Any] | None = None,
    livemode: bool = True,
) -> Quote:
    """Lock the row's current offer price for ``QUOTE_TTL_SECONDS``; the quote has the mode of the token
    (``livemode``) and can be ordered only in that mode.

    Checks, in order: EVENT_NOT_FOUND, EVENT_EXPIRED (started or canceled), SECTION_NOT_FOUND,
    ROW_NOT_FOUND, INSUFFICIENT_QUANTITY. Reads the database, never the catalog cache. No quantity is
    reserved: the order takes it, under a row lock.
    """
    row = _row_in_one_query(
        event_id=event_id, section_name=section_name, row_name=row_name, quantity=quantity
    )
    if row is not None:
        # The usual case: the row exists (and, for best-row, can take the quantity). One query found it;
        # the checks keep their order.
        section, event = row.section, row.section.event
        if event.is_canceled or event.has_started:
            reason = "canceled" if event.is_canceled else "started"
            raise errors.EventExpired(details={"event_id": event_id, "reason": reason})
        if quantity > row.available_quantity:
            raise errors.InsufficientQuantity(
                details={"requested": quantity, "available": row.available_quantity}
            )
        return _quote_insert(
            partner_pk=partner_pk,
            event=event,
            section=section,
            row=row,
            quantity=quantity,
            user_metadata=user_metadata,
            livemode=livemode,
        )
    # Something is missing: find out what, step by step, in the order of the checks.
    event = Event.objects.filter(event_id=event_id).first()
    if event is None:
        raise errors.EventNotFound(details={"event_id": event_id})
    if event.is_canceled or event.has_started:
        reason = "canceled" if event.is_canceled else "started"
        raise errors.EventExpired(details={"event_id": event_id, "reason": reason})
    section = Section.objects.filter(event=event, name=section_name).first()
    if section is None:
        raise errors.SectionNotFound(details={"event_id": event_id, "section_name": section_name})
    if row_name is None:
        row = _best_row(section=section, quantity=quantity)
    else:
        row = Row.objects.filter(section=section, name=row_name).first()
        if row is None:
            raise errors.RowNotFound(details={"section_name": section_name, "row_name": row_name})
        if quantity > row.available_quantity:
            raise errors.InsufficientQuantity(
                details={"requested": quantity, "available": row.available_quantity}
            )
    return _quote_insert(
        partner_pk=partner_pk,
        event=event,
        section=section,
        row=row,
        quantity=quantity,
        user_metadata=user_metadata,
        livemode=livemode,
    )


def _row_in_one_query(*, event_id: str, section_name: str, row_name: str | None, quantity: int) -> Row | None:
    """The quoted row with its section and event, in one query, or None when any of them is missing (or,
    for the best row, none can take ``quantity``).

    Plain SQL naming only the columns a quote uses: the ORM's version of this join (27 columns, and the
    four-column ORDER BY the models' default orderings add) spent more time compiling than the database
    spent answering, on every quote. ``rawsql.Select`` gives the values the ORM would (an aware
    ``starts_at``, ``Decimal`` prices, ``bool`` and decoded JSON) on PostgreSQL and SQLite alike."""
    best = row_name is None
    query = _BEST_ROW if best else _NAMED_ROW
    found = query.fetchone([event_id, section_name, quantity if best else row_name])
    if found is None:
        return None
    (row_pk, name, name_display, available, offer, face, restrictions, detail, section_pk, s_name,
     s_display, general, event_pk, e_name, site, status, starts_at) = found  # fmt: skip
    event = Event(
        id=event_pk, event_id=event_id, name=e_name, primary_site=site, status=status, starts_at=starts_at
    )
    section = Section(
        id=section_pk, event=event, name=s_name, name_display=s_display, general_admission=general
    )
    return Row(
        id=row_pk,
        section=section,
        name=name,
        name_display=name_display,
        available_quantity=available,
        offer_price=offer,
        face_value=face,
        restrictions=restrictions,
        restriction_detail=detail,
    )


_ROW_COLUMNS = [
    *(Row._meta.get_field(name) for name in ("id", "name", "name_display", "available_quantity")),
    *(
        Row._meta.get_field(name)
        for name in ("offer_price", "face_value", "restrictions", "restriction_detail")
    ),
    *(Section._meta.get_field(name) for name in ("id", "name", "name_display", "general_admission")),
    *(Event._meta.get_field(name) for name in ("id", "name", "primary_site", "status", "starts_at")),
]
_ROW_SQL = f"""
    SELECT r.id, r.name, r.name_display, r.available_quantity, r.offer_price, r.face_value, r.restrictions,
           r.restriction_detail, s.id, s.name, s.name_display, s.general_admission,
           e.id, e.name, e.primary_site, e.status, e.starts_at
      FROM {Row._meta.db_table} r
      JOIN {Section._meta.db_table} s ON s.id = r.section_id
      JOIN {Event._meta.db_table} e ON e.id = s.event_id
     WHERE e.event_id = %s AND s.name = %s
"""  # noqa: S608 - table names from the models, values as parameters
_NAMED_ROW = rawsql.Select(_ROW_SQL + " AND r.name = %s LIMIT 1", _ROW_COLUMNS)
_BEST_ROW = rawsql.Select(
    _ROW_SQL + " AND r.available_quantity >= %s ORDER BY r.offer_price DESC, r.name, r.id LIMIT 1",
    _ROW_COLUMNS,
)


def _quote_insert(
    *,
    partner_pk: int,
    event: Event,
    section: Section,
    row: Row,
    quantity: int,
    user_metadata: dict[str, Any] | None,
    livemode: bool,
) -> Quote:
    now = timezone.now()
    quote = Quote(
        partner_id=partner_pk,
        livemode=livemode,
        event=event,
        section=section,
        row=row,
        quantity=quantity,
        offer_price=row.offer_price,
        total_price=row.offer_price * quantity,
        face_value=row.face_value,
        event_name=event.name,
        section_name=section.name,
        section_name_display=section.name_display,
        row_name=row.name,
        row_name_display=row.name_display,
        general_admission=section.general_admission,
        restrictions=list(row.restrictions or []),
        restriction_detail=row.restriction_detail or None,
        primary_site=event.primary_site,
        user_metadata=user_metadata or {},
        created_at=now,
        expires_at=now + timedelta(seconds=settings.QUOTE_TTL_SECONDS),
    )
    return rawsql.insert(quote)


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
