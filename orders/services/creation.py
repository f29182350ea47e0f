"""Order creation from a quote (docs/partners/orders.md "Orders"): the checks, then one write.

The quote and its event are read in one query, quotes' own (``quotes.selectors.quote_for_order``, plain SQL in
``quotes.queries``). A quote named by a self-contained id (quotes/codec.py) may not have its row yet (it is kept
in Redis first, for the batched writer): the query then reads the event through the quote's row in the
catalog, the quote comes from Redis's copy (or is rebuilt from its id if Redis lost it), and the write below
inserts it. The checks then run on that copy in the documented order, the order, its history row and its
``order.created`` notification are built and rendered in memory, and everything is written at once, in **one
statement**, a data-modifying ``WITH`` run as its own transaction (under a savepoint when the caller holds one
open):
  1. ``q`` consumes the quote (quotes' statement, ``quotes.services.quote_consume_sql``): ``UPDATE … SET
     consumed_at WHERE consumed_at IS NULL``; for a quote whose row was not written yet, ``INSERT … ON CONFLICT
     (id) DO UPDATE SET consumed_at … WHERE consumed_at IS NULL`` (the writer may have written it meanwhile);
  2. ``r`` takes the quantity off the row, only if ``q`` did (the catalog's conditional decrement,
     ``catalog.services.row_take_sql``); a test-mode order only checks that the row could take it
     (``row_can_take_sql``);
  3. ``o`` inserts the order, only if ``q`` did, with the row id that ``r`` returned; ``h`` and ``n`` insert
     the history row and the notification of the order ``o`` returned.
  A quote already consumed leaves ``q`` empty and nothing is written. A row with fewer tickets left than the
  quote leaves ``r`` empty: the order's row id is then NULL, its NOT NULL constraint fails the statement, and
  nothing of it stays (the quote is not consumed, nor written). So an order costs two statements, the read
  and the write.

Races: N requests with one quote: the first ``UPDATE`` (or insert) of the quote holds its row (or its key)
until its transaction ends; the others wait for it, then find the quote consumed (exactly one order). Orders
for different quotes on one row: the conditional decrement is re-checked under the row's lock and never
oversells. The quote's one-to-one unique index stays the last line of defence.
"""

from contextlib import nullcontext
from datetime import date, timedelta

from django.core.files import File
from django.db import IntegrityError, connections, transaction
from django.utils import timezone

from catalog.models import Row
from catalog.services import row_can_take_sql, row_quantity_taken, row_take_sql
from config.api.envelope import utc_iso
from config.core import metrics, rawsql
from quotes.models import Quote
from quotes.selectors import quote_for_order
from quotes.services import quote_consume_sql

from .. import dispatch, errors, outbox
from ..models import Notification, Order, OrderStatusHistory
from ..output import order_detail_output
from ..uploads import ticket_pdf_delete, ticket_pdf_store

S = Order.Status
IN_HAND_MIN_DAYS_BEFORE_EVENT = 2


def latest_in_hand_date(event_date: date) -> date:
    return event_date - timedelta(days=IN_HAND_MIN_DAYS_BEFORE_EVENT)


def order_create(
    *,
    partner_pk: int,
    actor: str,
    quote_id: str,
    delivery_type: str,
    is_ready_to_deliver: bool,
    in_hand_date: date | None = None,
    file: File | None = None,
    seller_email: str = "",
    seller_name: str = "",
    partner_reference: str = "",
    livemode: bool = True,
) -> Order:
    """Turn the partner's quote into an order, once (check order of docs/partners/orders.md "Orders").

    Consuming the quote, taking the quantity off the row and inserting the order, its history and its
    notification are one transaction, each decided by the database, so concurrent requests can neither reuse a
    quote nor oversell a row. The order has the mode of the token (``livemode``); a quote of the other mode is
    QUOTE_NOT_FOUND, and a test-mode order takes no quantity off the row (docs/partners/test-mode.md "Test
    mode"). The order comes back with ``detail_output``: the order as ``GET /v1/orders/{order_id}`` shows it,
    rendered once for its notification and its 201.
    """
    quote = quote_for_order(quote_id=quote_id, partner_pk=partner_pk, livemode=livemode)
    now = timezone.now()
    # docs/partners/orders.md "Contract choices": a consumed quote answers QUOTE_ALREADY_CONSUMED even once its
    # TTL is over.
    if quote.consumed_at is not None:
        raise errors.QuoteAlreadyConsumed(details={"quote_id": quote_id})
    if quote.expires_at <= now:
        raise errors.QuoteExpired(details={"quote_id": quote_id, "expired_at": utc_iso(quote.expires_at)})
    event = quote.event
    if in_hand_date is not None and in_hand_date > latest_in_hand_date(event.event_date):
        raise errors.InvalidDeliveryDeadline(
            "in_hand_date is after the event date."
            if in_hand_date > event.event_date
            else "in_hand_date must be at least 2 days before the event date.",
            details={
                "field": "in_hand_date",
                "in_hand_date": in_hand_date.isoformat(),
                "event_date": event.event_date.isoformat(),
                "latest_in_hand_date": latest_in_hand_date(event.event_date).isoformat(),
            },
        )
    if event.is_canceled or event.starts_at <= now:
        raise errors.EventExpired(details={"event_id": event.event_id})

    order = Order(
        partner_id=partner_pk,
        livemode=livemode,
        quote_id=quote.pk,
        event=event,
        row_id=quote.row_pk,
        status=S.ACCEPTED,
        status_changed_at=now,
        quote_token=quote_id,
        quote_expires_at=quote.expires_at,
        **quote.snapshot,
        delivery_type=delivery_type,
        is_ready_to_deliver=is_ready_to_deliver,
        in_hand_date=in_hand_date,
        seller_email=seller_email,
        seller_name=seller_name,
        partner_reference=partner_reference,
        created_at=now,
    )
    # The upload goes to storage before the write, so no row lock is held while it streams out; a request
    # that then loses the race deletes it again.
    stored_name = ticket_pdf_store(order_id=order.order_id, upload=file) if file is not None else ""
    order.ticket_file.name = stored_name
    try:
        _order_write(order=order, now=now, actor=actor, unwritten=quote.unwritten)
    except BaseException:
        if stored_name:
            ticket_pdf_delete(stored_name)
        raise
    return order


def _order_write(*, order: Order, now, actor: str, unwritten: Quote | None) -> None:
    history = OrderStatusHistory(
        order=order, from_status="", to_status=S.ACCEPTED, at=now, actor=actor, reason="Order created"
    )
    # The order, its history and its event are all in memory as they will be inserted: the notification
    # and the 201 render them once, without reading back.
    order.history_rows = [history]
    order.detail_output = order_detail_output(order)
    notification = outbox.order_notification_build(
        order=order,
        type=Notification.Type.ORDER_CREATED,
        previous_status=None,
        reason=None,
        at=now,
        rendered=order.detail_output,
    )
    try:
        written = _write_in_one_statement(
            order=order, history=history, notification=notification, unwritten=unwritten
        )
    except IntegrityError as exc:
        # The quote's one-to-one unique index is the last line of defence behind the conditional UPDATE.
        if "quote" in str(exc):
            raise errors.QuoteAlreadyConsumed(details={"quote_id": order.quote_token}) from exc
        raise
    if not written:
        raise errors.QuoteAlreadyConsumed(details={"quote_id": order.quote_token})
    dispatch.notification_dispatch_after_commit(notification=notification)
    metrics.order_created_count(livemode=order.livemode)


def _insufficient(order: Order) -> errors.InsufficientQuantity:
    available = Row.objects.filter(pk=order.row_id).values_list("available_quantity", flat=True).first()
    return errors.InsufficientQuantity(
        "The row no longer has the quoted quantity available.",
        details={"requested": order.quantity, "available": available or 0},
    )


# --- PostgreSQL: one statement ----------------------------------------------------------------------------
_statements: dict[tuple[bool, bool], str] = {}


def _quote_name(name: str) -> str:
    return connections["default"].ops.quote_name(name)


def _inserted(model, *, source: str, replaced: dict[str, str]) -> str:
    """``INSERT INTO <model> (…) SELECT … FROM <source>, jsonb_populate_record(…) RETURNING pk``: one row whose
    values come in one JSON parameter (``rawsql.json_row``), except the columns named in ``replaced``, taken
    from the statement itself."""
    table, names, fields, pk = rawsql.columns(model)
    select = ", ".join(replaced.get(f.attname, f"x.{_quote_name(f.column)}") for f in fields)
    return (
        f"INSERT INTO {table} ({names}) SELECT {select}"  # noqa: S608 - names from the models
        f" FROM {source}, jsonb_populate_record(NULL::{table}, %s::jsonb) AS x RETURNING {pk}"
    )


def _one_statement(livemode: bool, unwritten: bool) -> str:
    # The quote's single use (quotes' statement; the race is decided there).
    consume = quote_consume_sql(unwritten=unwritten)
    # The quantity off the row, only if the quote was consumed; a test order never changes a real row: it only
    # checks the row could take it.
    take = (row_take_sql if livemode else row_can_take_sql)(only_if="EXISTS (SELECT 1 FROM q)")
    # The row id from the decrement: NULL (and the statement fails on NOT NULL) when the row had too few.
    order_sql = _inserted(Order, source="q", replaced={"row_id": "(SELECT id FROM r)"})
    history_sql = _inserted(OrderStatusHistory, source="o", replaced={"order_id": "o.id"})
    notification_sql = _inserted(Notification, source="o", replaced={"order_id": "o.id"})
    return (
        f"WITH q AS ({consume}), r AS ({take}), o AS ({order_sql}), h AS ({history_sql}),"  # noqa: S608
        f" n AS ({notification_sql})"
        " SELECT (SELECT id FROM q), (SELECT id FROM o), (SELECT id FROM h), (SELECT id FROM n)"
    )


def _json(obj) -> str:
    row = rawsql.json_row(obj)
    if row is None:
        raise TypeError(f"{type(obj).__name__} holds an expression: it cannot be written in one statement")
    return row


def _write_in_one_statement(
    *, order: Order, history: OrderStatusHistory, notification: Notification, unwritten: Quote | None
) -> bool:
    """The one statement (module docstring); False when the quote was consumed meanwhile."""
    key = (order.livemode, unwritten is not None)
    sql = _statements.get(key)
    if sql is None:
        sql = _statements[key] = _one_statement(*key)
    take = (
        [order.quantity, order.row_id, order.quantity] if order.livemode else [order.row_id, order.quantity]
    )
    if unwritten is None:
        consume = [order.created_at, order.quote_id]
    else:
        unwritten.consumed_at = order.created_at
        consume = [rawsql.json_row(unwritten, with_pk=True)]
    params = [*consume, *take, _json(order), _json(history), _json(notification)]
    connection = connections["default"]
    try:
        # Its own transaction; inside a caller's, a savepoint keeps a refused statement from aborting it.
        with (
            transaction.atomic() if connection.in_atomic_block else nullcontext(),
            connection.cursor() as cursor,
        ):
            cursor.execute(sql, params)
            quote_pk, order_pk, history_pk, notification_pk = cursor.fetchone()
    except IntegrityError as exc:
        if _row_id_missing(exc):
            raise _insufficient(order) from exc
        raise
    if quote_pk is None:
        return False
    if order.livemode:
        row_quantity_taken(event_id=order.event.event_id)
    rawsql.saved(order, order_pk)
    history.order_id = order_pk
    rawsql.saved(history, history_pk)
    notification.order_id = order_pk
    rawsql.saved(notification, notification_pk)
    return True


def _row_id_missing(exc: IntegrityError) -> bool:
    diag = getattr(exc.__cause__, "diag", None)
    return (
        diag is not None
        and getattr(diag, "column_name", None) == "row_id"
        and getattr(diag, "table_name", None) == Order._meta.db_table
    )
