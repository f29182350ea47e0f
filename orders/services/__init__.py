"""Every write on orders: creation from a quote, the life cycle, expiry (the confirmation's steps are in
``orders.services.confirmation_state``).

``order_transition`` is the only code that changes ``Order.status``; the API, the admin, the tasks and the
apps that react to order events all go through it (docs/partners/orders.md "Life cycle"). Creation and every
transition write their notification (``orders.outbox``) in the same transaction.
"""

import logging
from datetime import date, timedelta

from django.core.files import File
from django.db import IntegrityError, transaction
from django.db.models import Q
from django.utils import timezone

from catalog.models import Event, Row
from catalog.services import row_quantity_release, row_quantity_take
from config.api.envelope import utc_iso
from config.core import metrics, rawsql
from config.core.publish import publish_on_commit
from config.core.statemachine import StateMachine
from quotes.codec import decode_quote_id
from quotes.models import Quote

from .. import errors, outbox
from ..models import Notification, Order, OrderStatusHistory
from ..uploads import ticket_pdf_delete, ticket_pdf_store

logger = logging.getLogger(__name__)

S = Order.Status

# docs/partners/orders.md "Life cycle": every legal move. Anything else is refused.
LEGAL_TRANSITIONS: dict[str, frozenset[str]] = {
    S.ACCEPTED: frozenset({S.AWAITING_TRANSFER, S.CANCELED}),
    S.AWAITING_TRANSFER: frozenset({S.TICKET_RECEIVED, S.CANCELED, S.EXPIRED}),
    # Back to awaiting the tickets only when the seller recalled the transfer before the payout started
    # (reason ``transfer_recalled``, orders.transfers.state.order_recall).
    S.TICKET_RECEIVED: frozenset({S.PAYOUT_IN_PROCESS, S.AWAITING_TRANSFER}),
    S.PAYOUT_IN_PROCESS: frozenset({S.SCHEDULED}),
    S.SCHEDULED: frozenset({S.PAID}),
    S.PAID: frozenset(),
    S.EXPIRED: frozenset(),
    S.CANCELED: frozenset(),
}
# The service no longer buys these tickets: the row's buy-back capacity comes back.
RELEASES_QUANTITY = frozenset({S.CANCELED, S.EXPIRED})
CANCELABLE = frozenset(s for s, targets in LEGAL_TRANSITIONS.items() if S.CANCELED in targets)

ORDER_MACHINE = StateMachine(
    name="order",
    field="status",
    moves=LEGAL_TRANSITIONS,
    history=OrderStatusHistory,
    history_fk="order",
    refuse=lambda order, from_status, to_status: errors.IllegalTransition(
        order_id=order.order_id, from_status=from_status, to_status=to_status
    ),
)

IN_HAND_MIN_DAYS_BEFORE_EVENT = 2


# --- creation ----------------------------------------------------------------------------------------------
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

    Consuming the quote, taking the quantity off the row and inserting the order are one transaction, each
    decided by the database, so concurrent requests can neither reuse a quote nor oversell a row. The order
    has the mode of the token (``livemode``); a quote of the other mode is QUOTE_NOT_FOUND, and a test-mode
    order takes no quantity off the row (docs/partners/test-mode.md "Test mode").
    """
    quote_pk = decode_quote_id(quote_id)
    # A slice without ORDER BY (the models' default orderings would add one) on the order's first query.
    quote = (
        next(
            iter(Quote.objects.select_related("event").filter(pk=quote_pk, livemode=livemode).order_by()[:1]),
            None,
        )
        if quote_pk is not None
        else None
    )
    if quote is None:
        raise errors.QuoteNotFound(details={"quote_id": quote_id})
    if quote.partner_id != partner_pk:
        raise errors.Forbidden("The quote belongs to another partner.", details={"quote_id": quote_id})
    now = timezone.now()
    # docs/partners/orders.md "Contract choices": a consumed quote answers QUOTE_ALREADY_CONSUMED even once its TTL is over.
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
        quote=quote,
        event=event,
        row_id=quote.row_id,
        status=S.ACCEPTED,
        status_changed_at=now,
        quote_token=quote_id,
        quote_expires_at=quote.expires_at,
        **quote.order_snapshot(),
        delivery_type=delivery_type,
        is_ready_to_deliver=is_ready_to_deliver,
        in_hand_date=in_hand_date,
        seller_email=seller_email,
        seller_name=seller_name,
        partner_reference=partner_reference,
        created_at=now,
    )
    # The upload goes to storage before the transaction, so no row lock is held while it streams out;
    # a request that then loses the race deletes it again.
    stored_name = ticket_pdf_store(order_id=order.order_id, upload=file) if file is not None else ""
    order.ticket_file.name = stored_name
    try:
        _order_insert(order=order, quote=quote, now=now, actor=actor)
    except BaseException:
        if stored_name:
            ticket_pdf_delete(stored_name)
        raise
    return order


def _order_insert(*, order: Order, quote: Quote, now, actor: str) -> None:
    try:
        with transaction.atomic():
            # Race: N requests with one quote — only the UPDATE that finds consumed_at still NULL wins.
            if not Quote.objects.filter(pk=quote.pk, consumed_at__isnull=True).update(consumed_at=now):
                raise errors.QuoteAlreadyConsumed(details={"quote_id": order.quote_token})
            # The catalog's conditional decrement never oversells and refreshes the catalog pages on commit. A
            # test order only checks that the row could take it: it never changes a real row's quantity.
            if order.livemode:
                taken = row_quantity_take(
                    row_pk=quote.row_id, quantity=quote.quantity, event_id=order.event.event_id
                )
            else:
                taken = Row.objects.filter(pk=quote.row_id, available_quantity__gte=quote.quantity).exists()
            if not taken:
                available = (
                    Row.objects.filter(pk=quote.row_id).values_list("available_quantity", flat=True).first()
                )
                raise errors.InsufficientQuantity(
                    "The row no longer has the quoted quantity available.",
                    details={"requested": quote.quantity, "available": available or 0},
                )
            rawsql.insert(order)
            created = rawsql.insert(
                OrderStatusHistory(
                    order=order,
                    from_status="",
                    to_status=S.ACCEPTED,
                    at=now,
                    actor=actor,
                    reason="Order created",
                )
            )
            # The confirmation (charge, e-mail) reacts to this notification after commit. The order and its
            # history are all in memory, as inserted: the notification renders them without reading back.
            metrics.order_created_count(livemode=order.livemode)
            outbox.order_notification_record(
                order=order,
                type=Notification.Type.ORDER_CREATED,
                previous_status=None,
                reason=None,
                at=now,
                history=[created],
            )
    except IntegrityError as exc:
        # The quote's one-to-one unique index is the last line of defence behind the conditional UPDATE.
        if "quote" in str(exc):
            raise errors.QuoteAlreadyConsumed(details={"quote_id": order.quote_token}) from exc
        raise


# --- life cycle -------------------------------------------------------------------------------------------
def order_transition(
    *, order: Order, to: str, actor: str, reason: str = "", reason_code: str | None = None
) -> Order:
    """Move ``order`` to ``to`` if the life cycle allows it; write the history row and the
    ``order.status_changed`` notification; return the fresh order.

    ``reason`` is the human reason kept in the history; ``reason_code`` the machine one partners get as the
    notification's ``data.reason`` (``orders.outbox.REASON_CODES``). Raises ``orders.errors.IllegalTransition``
    for any move the life cycle does not have (including a move to the status the order already has).
    Canceling or expiring gives the quantity back to the row in the same transaction; whatever reacts to the
    change (e-mails, refunds, webhooks) leaves after commit.
    """
    with transaction.atomic():
        now = timezone.now()
        locked, from_status = ORDER_MACHINE.move(
            obj=order, to=to, actor=actor, reason=reason, changes={"status_changed_at": now}, at=now
        )
        if to in RELEASES_QUANTITY and locked.livemode:  # a test order never took any
            row_quantity_release(row_pk=locked.row_id, quantity=locked.quantity)
        metrics.order_transition_count(livemode=locked.livemode, to_status=to, reason=reason_code)
        outbox.order_notification_record(
            order=locked,
            type=Notification.Type.ORDER_STATUS_CHANGED,
            previous_status=from_status,
            reason=reason_code,
            at=now,
        )
        if to == S.CANCELED and locked.confirmation_email_sent_at and locked.confirmation_email_to:
            publish_on_commit("orders.tasks.order_canceled_email", locked.pk)
    return locked


def order_cancel(
    *, order: Order, actor: str, reason: str = "", reason_code: str = outbox.REASON_CANCELED_BY_PARTNER
) -> Order:
    """Cancel from ``accepted`` or ``awaiting_transfer``; anything later is 409 ORDER_NOT_CANCELABLE."""
    try:
        return order_transition(
            order=order, to=S.CANCELED, actor=actor, reason=reason or "Canceled", reason_code=reason_code
        )
    except errors.IllegalTransition as exc:
        raise errors.OrderNotCancelable(
            f"An order in status {exc.from_status} can no longer be canceled.",
            details={"order_id": order.order_id, "status": exc.from_status},
        ) from exc


# --- expiry -----------------------------------------------------------------------------------------------
# Whether an order's open transfer case holds its in-hand expiry: transfer detection registers its rule (only a
# case that could still lead to a payout does); with none registered, any open case does.
_expiry_holds: list = []


def expiry_hold_register(check) -> None:
    """Register ``check(order) -> bool``, asked about an order with an open transfer case past its in-hand date."""
    if check not in _expiry_holds:
        _expiry_holds.append(check)


def orders_expire_overdue(*, now=None) -> list[str]:
    """``awaiting_transfer`` past its in-hand date (venue-local) or, when ready to deliver without one,
    past the event start → ``expired``. An open transfer case that could still lead to a payout defers the
    in-hand expiry until it is resolved or the event starts (docs/partners/orders.md "Transfer"). Returns
    the expired order ids."""
    now = now or timezone.now()
    # No venue's local "today" is later than UTC's tomorrow, so this bounds the candidates in SQL.
    horizon = (now + timedelta(days=1)).date()
    candidates = (
        Order.objects.filter(status=S.AWAITING_TRANSFER)
        .filter(Q(in_hand_date__lt=horizon) | Q(in_hand_date__isnull=True, event__starts_at__lte=now))
        .select_related("event")
        .order_by("pk")
    )
    expired = []
    for order in candidates.iterator(chunk_size=200):
        if order.in_hand_date is not None:
            local_today = now.astimezone(order.event.zone).date()
            if local_today <= order.in_hand_date:
                continue
            held = order.transfer_case_open and all(check(order) for check in _expiry_holds)
            if held and order.event.starts_at > now:
                continue  # staff are looking at what arrived: the deadline waits for them
            reason = f"In-hand date {order.in_hand_date.isoformat()} passed before the tickets arrived"
        else:
            reason = "The event started before the tickets arrived"
        try:
            order_transition(
                order=order,
                to=S.EXPIRED,
                actor="system:expiry",
                reason=reason,
                # The event start is the delivery deadline of a ready order without an in-hand date.
                reason_code=outbox.REASON_IN_HAND_DATE_PASSED,
            )
        except errors.IllegalTransition:
            continue  # moved on meanwhile (ticket received, canceled)
        expired.append(order.order_id)
    return expired


# --- canceled events --------------------------------------------------------------------------------------
EVENT_CANCELED_REASON = "The event was canceled"


def orders_cancel_for_canceled_events(*, event_pk: int | None = None) -> list[str]:
    """Cancel the open orders (``accepted``, ``awaiting_transfer``) of canceled events; returns their ids.

    Called right after staff cancel an event and by the periodic expiry run, which catches any event whose
    immediate run never reached the broker.
    """
    candidates = Order.objects.filter(status__in=CANCELABLE, event__status=Event.Status.CANCELED).order_by(
        "pk"
    )
    if event_pk is not None:
        candidates = candidates.filter(event_id=event_pk)
    canceled = []
    for order in candidates.iterator(chunk_size=200):
        try:
            order_transition(
                order=order,
                to=S.CANCELED,
                actor="system:catalog",
                reason=EVENT_CANCELED_REASON,
                reason_code=outbox.REASON_EVENT_CANCELED,
            )
        except errors.IllegalTransition:
            continue  # moved on meanwhile
        canceled.append(order.order_id)
    return canceled


from .confirmation_state import (  # noqa: E402, F401  (the confirmation's steps, part of this module's interface)
    EMAIL_CLAIM_LEASE,
    EMAIL_HANDOVER_LEASE,
    order_canceled_email,
    order_confirmation_email,
    order_confirmation_started,
    orders_requeue_unconfirmed,
)
