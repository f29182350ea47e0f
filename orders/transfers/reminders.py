"""The seller's reminders and the sweeps of transfer detection (docs/operations.md "Transfer detection").

- ``partial_reminder``: an hour after a partial transfer, the seller is told what is still missing, if
  the order is still partial then.
- ``seller_transfer_reminder``: the order waits for the tickets again (a recall): the transfer address again.
- ``partial_overdue_sweep``: a ``partial_overdue`` case 24 h before the order's deadline, that is from the start
  of the in-hand date in venue time (the order expires once that date has passed), once per order.
- ``messages_process_due``: the deferred messages whose next attempt is due, and the received ones older than 2 min
  whose processing message was lost on the way to the broker.
"""

from __future__ import annotations

import logging
from datetime import datetime, time, timedelta

from django.db.models import Q
from django.utils import timezone

from ..models import Order
from ..seller_mail import seller_recipient, send_transfer_partial, send_transfer_reminder
from . import state
from .decision import offers_detected
from .models import InboundMessage, TransferCase

logger = logging.getLogger(__name__)
S, TS = Order.Status, Order.TransferState
RECEIVED_GRACE = timedelta(minutes=2)
BATCH = 200


def partial_reminder(order_pk: int) -> bool:
    """E-mail the seller what is missing if the order is still partial; whether a message went out."""
    order = Order.objects.select_related("event__venue", "partner", "quote").filter(pk=order_pk).first()
    if (
        order is None
        or order.transfer_state != TS.PARTIAL
        or order.status not in (S.ACCEPTED, S.AWAITING_TRANSFER)
    ):
        return False
    to = seller_recipient(order)
    if not to:
        return False
    detected, seats = offers_detected(order)
    send_transfer_partial(order=order, to=to, detected=min(detected, order.quantity), seats=seats)
    return True


def seller_transfer_reminder(order_pk: int, why: str) -> bool:
    """E-mail the seller the transfer address again while the order awaits its tickets."""
    order = Order.objects.select_related("event__venue", "partner", "quote").filter(pk=order_pk).first()
    if order is None or order.status != S.AWAITING_TRANSFER:
        return False
    to = seller_recipient(order)
    if not to:
        return False
    send_transfer_reminder(order=order, to=to, why=why)
    return True


def partial_overdue_sweep(*, now: datetime | None = None) -> list[str]:
    """Open ``partial_overdue`` for partial orders whose in-hand date has begun in venue time; the order ids."""
    now = now or timezone.now()
    candidates = (
        Order.objects.filter(
            status=S.AWAITING_TRANSFER, transfer_state=TS.PARTIAL, in_hand_date__isnull=False
        )
        .filter(in_hand_date__lte=(now + timedelta(days=1)).date())
        .exclude(transfer_cases__kind=TransferCase.Kind.PARTIAL_OVERDUE)
        .select_related("event")
        .order_by("pk")
    )
    opened = []
    for order in candidates[:BATCH]:
        deadline = datetime.combine(order.in_hand_date + timedelta(days=1), time.min, tzinfo=order.event.zone)
        if now < deadline - timedelta(hours=24):
            continue
        state.case_open(
            order=order,
            kind=TransferCase.Kind.PARTIAL_OVERDUE,
            summary=f"Only {order.transfer_quantity_detected} of {order.quantity} tickets transferred and the "
            f"in-hand date {order.in_hand_date.isoformat()} has begun.",
        )
        opened.append(order.order_id)
    return opened


def messages_process_due(*, now: datetime | None = None) -> list[int]:
    """The messages to publish again: deferred and due, or received over 2 min ago and never processed."""
    now = now or timezone.now()
    due = InboundMessage.objects.filter(
        Q(stage=InboundMessage.Stage.DEFERRED, next_attempt_at__lte=now)
        | Q(stage=InboundMessage.Stage.RECEIVED, received_at__lte=now - RECEIVED_GRACE)
    ).order_by("received_at", "id")
    return list(due.values_list("pk", flat=True)[:BATCH])
