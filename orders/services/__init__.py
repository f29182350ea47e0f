"""Every write on orders: creation from a quote (``orders.services.creation``), the life cycle, expiry (the
confirmation, which charges, moves and e-mails, is driven from the app above through these).

``orders_transition`` (``order_transition`` for one order) is the only code that changes ``Order.status``; the API, the admin, the tasks and the
apps that react to order events all go through it (docs/partners/orders.md "Life cycle"). Creation and every
transition write their notification (``orders.outbox``) in the same transaction.
"""

import logging
from collections.abc import Mapping
from datetime import timedelta
from typing import Any

from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from catalog.models import Event
from catalog.services import row_quantity_release
from config.core import mail_once, metrics
from config.core.publish import publish_on_commit
from config.core.statemachine import StateMachine

from .. import errors, outbox, seller_mail
from ..models import Order, OrderStatusHistory

logger = logging.getLogger(__name__)

S = Order.Status

# docs/partners/orders.md "Life cycle": every legal move. Anything else is refused.
LEGAL_TRANSITIONS: dict[str, frozenset[str]] = {
    S.ACCEPTED: frozenset({S.AWAITING_TRANSFER, S.CANCELED}),
    S.AWAITING_TRANSFER: frozenset({S.TICKET_RECEIVED, S.CANCELED, S.EXPIRED}),
    # Back to awaiting the tickets only when the seller recalled the transfer before the payout started
    # (reason ``transfer_recalled``, orders.transfers.decision.state.order_recall).
    S.TICKET_RECEIVED: frozenset({S.PAYOUT_IN_PROCESS, S.AWAITING_TRANSFER}),
    S.PAYOUT_IN_PROCESS: frozenset({S.SCHEDULED}),
    S.SCHEDULED: frozenset({S.PAID}),
    # Back to the payout only when the payment platform fails a payout it had reported paid (reason
    # ``payout_failed``): the order waits there for the payout to be made again.
    S.PAID: frozenset({S.PAYOUT_IN_PROCESS}),
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


# --- life cycle -------------------------------------------------------------------------------------------
def order_transition(
    *, order: Order, to: str, actor: str, reason: str = "", reason_code: str | None = None
) -> Order:
    """Move ``order`` to ``to`` if the life cycle allows it (a batch of one, ``orders_transition``); return the
    fresh order."""
    [moved] = orders_transition(orders=[order], to=to, actor=actor, reason=reason, reason_code=reason_code)
    return moved


def orders_transition(
    *,
    orders: list[Order],
    to: str,
    actor: str,
    reason: str = "",
    reason_code: str | None = None,
    locked: bool = False,
    also: Mapping[str, Any] | None = None,
) -> list[Order]:
    """Move ``orders`` to ``to`` if the life cycle allows it, in a fixed number of statements however many they
    are: the orders' status under their row locks, their history rows and their ``order.status_changed``
    notifications; return the fresh orders. All move or none.

    ``reason`` is the human reason kept in the history; ``reason_code`` the machine one partners get as the
    notification's ``data.reason`` (``orders.outbox.REASON_CODES``). Raises ``orders.errors.IllegalTransition``
    for the first move the life cycle does not have (including a move to the status the order already has).
    Canceling or expiring gives the quantity back to the row in the same transaction; whatever reacts to the
    change (e-mails, refunds, webhooks) leaves after commit. ``locked``: the caller holds the orders' row locks
    in its transaction and has them with their event (a confirmation batch's claim). ``also``: other fields
    written by the move's ``UPDATE``, the same values on every order (a confirmation's start).
    """
    if not orders:
        return []
    with transaction.atomic():
        now = timezone.now()
        moves = ORDER_MACHINE.move_many(
            objs=orders,
            to=to,
            actor=actor,
            reason=reason,
            changes={"status_changed_at": now, **(also or {})},
            at=now,
            locked=locked,
        )
        for order, _ in moves:
            if to in RELEASES_QUANTITY and order.livemode:  # a test order never took any
                row_quantity_release(row_pk=order.row_id, quantity=order.quantity)
            metrics.order_transition_count(livemode=order.livemode, to_status=to, reason=reason_code)
        outbox.order_notifications_record(moves=moves, reason=reason_code, at=now)
        if to == S.CANCELED:
            _canceled_emails_publish([order.pk for order, _ in moves])
    return [order for order, _ in moves]


def _canceled_emails_publish(order_pks: list[int]) -> None:
    """A seller who was sent the confirmation is told the order is off, once the cancel commits."""
    for key, recipient in mail_once.sent(purpose=seller_mail.CONFIRMATION_MAIL, keys=order_pks).items():
        if recipient:
            publish_on_commit("orders.tasks.order_canceled_email", int(key))


def order_canceled_email(*, order_pk: int) -> None:
    """Tell the seller of a canceled order, to the address its confirmation went to."""
    order = Order.objects.select_related("partner", "event__venue", "quote").filter(pk=order_pk).first()
    if order is None or order.status != S.CANCELED:
        return
    to = mail_once.sent(purpose=seller_mail.CONFIRMATION_MAIL, keys=[order_pk]).get(str(order_pk))
    if to:
        seller_mail.send_order_canceled(order=order, to=to)


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
        .select_related("event", "transfer_progress")
        .order_by("pk")
    )
    expired = []
    for order in candidates.iterator(chunk_size=200):
        if order.in_hand_date is not None:
            local_today = now.astimezone(order.event.zone).date()
            if local_today <= order.in_hand_date:
                continue
            held = order.transfer.case_open and all(check(order) for check in _expiry_holds)
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


from .creation import (  # noqa: E402, F401  (part of this module's interface)
    IN_HAND_MIN_DAYS_BEFORE_EVENT,
    latest_in_hand_date,
    order_create,
)
