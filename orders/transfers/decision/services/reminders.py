"""The seller's reminders and the sweeps of transfer detection (docs/operations/receiving-mail.md "Transfer detection").

- ``partial_reminder``: an hour after a partial transfer, the seller is told what is still missing, if
  the order is still partial then.
- ``seller_transfer_reminder``: the order waits for the tickets again (a recall): the transfer address again.
- ``partial_overdue_sweep``: a ``partial_overdue`` case 24 h before the order's deadline, that is from the start
  of the in-hand date in venue time (the order expires once that date has passed), once per order.
- ``messages_process_due``: the messages whose next attempt is due (a deferral, or a run's lease that ran out),
  and the received ones older than 2 min whose processing message was lost on the way to the broker.
"""

from __future__ import annotations

import logging
from datetime import datetime, time, timedelta

from django.db import transaction
from django.db.models import Q
from django.db.models.functions import Coalesce
from django.utils import timezone

from orders.models import Order
from orders.seller_mail import seller_recipient, send_transfer_partial, send_transfer_reminder
from orders.transfers.decision import state
from orders.transfers.decision.services.decide import offers_detected
from orders.transfers.models import InboundMessage, TransferCase

logger = logging.getLogger(__name__)
S, TS = Order.Status, Order.TransferState
RECEIVED_GRACE = timedelta(minutes=2)
PARTIAL_GRACE = timedelta(hours=1)
BATCH = 200


def _latest_partial(order: Order) -> InboundMessage | None:
    return (
        InboundMessage.objects.filter(order=order, outcome=InboundMessage.Outcome.PARTIAL)
        .order_by("-processed_at", "-id")
        .first()
    )


def partial_reminder(order_pk: int, *, now: datetime | None = None) -> bool:
    """E-mail the seller what is missing if the order is still partial an hour after its latest partial
    transfer e-mail, once per such e-mail (marked ``reminded_at`` in its decision); whether a message went out.

    Too early (a task run before its countdown, as the tests run it) → nothing: the sweep
    ``partial_reminders_due`` sends it when due."""
    now = now or timezone.now()
    with transaction.atomic():
        # Race: the delayed task and the sweep reminding the same order at once: one marks the e-mail reminded,
        # under the order's lock, and sends it once the lock is released (never across SMTP).
        order = (
            Order.objects.select_for_update(of=("self",))
            .select_related("event__venue", "partner", "quote", "transfer_progress")
            .filter(pk=order_pk)
            .first()
        )
        if (
            order is None
            or order.transfer.state != TS.PARTIAL
            or order.status not in (S.ACCEPTED, S.AWAITING_TRANSFER)
        ):
            return False
        latest = _latest_partial(order)
        if latest is None or latest.verdicts.get("decision", {}).get("reminded_at"):
            return False
        if latest.processed_at is None or latest.processed_at > now - PARTIAL_GRACE:
            return False
        to = seller_recipient(order)
        if not to:
            return False
        detected, seats = offers_detected(order)
        latest.verdicts.setdefault("decision", {})["reminded_at"] = now.isoformat()
        latest.save(update_fields=["verdicts"])
    try:
        send_transfer_partial(order=order, to=to, detected=min(detected, order.quantity), seats=seats)
    except Exception:
        # Not sent: the mark is taken back so that the task's retry (or the sweep) sends it.
        latest.verdicts["decision"].pop("reminded_at", None)
        latest.save(update_fields=["verdicts"])
        raise
    return True


def partial_reminders_due(*, now: datetime | None = None) -> int:
    """Send the partial reminders now due (the delayed task's message lost, or run at once); how many."""
    now = now or timezone.now()
    orders = (
        Order.objects.filter(
            transfer_progress__state=TS.PARTIAL,
            status__in=(S.ACCEPTED, S.AWAITING_TRANSFER),
            inbound_messages__outcome=InboundMessage.Outcome.PARTIAL,
            inbound_messages__processed_at__lte=now - PARTIAL_GRACE,
        )
        .values_list("pk", flat=True)
        .distinct()
        .order_by("pk")
    )
    return sum(partial_reminder(pk, now=now) for pk in list(orders[:BATCH]))


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
            status=S.AWAITING_TRANSFER, transfer_progress__state=TS.PARTIAL, in_hand_date__isnull=False
        )
        .filter(in_hand_date__lte=(now + timedelta(days=1)).date())
        .exclude(transfer_cases__kind=TransferCase.Kind.PARTIAL_OVERDUE)
        .select_related("event", "transfer_progress")
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
            summary=f"Only {order.transfer.quantity_detected} of {order.quantity} tickets transferred and the "
            f"in-hand date {order.in_hand_date.isoformat()} has begun.",
        )
        opened.append(order.order_id)
    return opened


def messages_process_due(*, now: datetime | None = None) -> list[int]:
    """The messages to publish again: deferred and due, or received over 2 min ago and never processed."""
    now = now or timezone.now()
    # By next attempt: a message is due once its deferral or its run's lease ended (a message never run is
    # due from its arrival plus the grace), so messages being processed are left alone and a crowd of old
    # ones never keeps a new one out of the batch. A message that keeps failing is closed after MAX_RUNS runs.
    stage = InboundMessage.Stage
    due = (
        InboundMessage.objects.filter(stage__in=(stage.RECEIVED, stage.DEFERRED))
        .filter(
            Q(next_attempt_at__lte=now)
            | Q(stage=stage.RECEIVED, next_attempt_at__isnull=True, received_at__lte=now - RECEIVED_GRACE)
        )
        .order_by(Coalesce("next_attempt_at", "received_at"), "id")
    )
    return list(due.values_list("pk", flat=True)[:BATCH])
