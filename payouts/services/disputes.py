"""Card disputes: the partner disputed the card charge of an order with its bank (a chargeback). Each opens a
staff case (``Dispute``, on the staff dashboard's "Open disputes" queue) and e-mails the partner, once; the
platform's verdict closes it. The platform's events may arrive in any order (a close before the opening it
follows, when the opening's first delivery failed): each carries the whole dispute, so the first one makes the
case and a close always wins. The evidence itself is submitted in the platform's dashboard.

``DISPUTE_MACHINE`` is the only writer of ``Dispute.status`` (open → closed), every move recorded in
``DisputeStatusHistory``.
"""

from __future__ import annotations

import logging

from django.db import IntegrityError, transaction
from django.utils import timezone

from config.core.statemachine import StateMachine

from ..models import Charge, Dispute, DisputeStatusHistory
from ..platform.base import DisputeInfo
from .alerts import CHARGE_DISPUTED, payment_alert_enqueue

logger = logging.getLogger(__name__)

D = Dispute.Status
DISPUTES_ACTOR = "system:disputes"

DISPUTE_MACHINE = StateMachine(
    name="dispute",
    field="status",
    moves={D.OPEN: frozenset({D.CLOSED}), D.CLOSED: frozenset()},
    history=DisputeStatusHistory,
    history_fk="dispute",
)


# Stripe's statuses of a dispute that is over: the bank's verdict is in (or the inquiry closed).
CLOSED_PLATFORM_STATUSES = frozenset({"won", "lost", "warning_closed"})


def dispute_follow_platform(*, platform: str, info: DisputeInfo, closed: bool) -> Dispute | None:
    """Bring the staff case of the dispute ``info`` describes to the state the platform reports, whatever the
    order its events arrive in: the case is made from whichever event comes first (each carries the whole
    dispute), and it is closed once an event says the dispute is over (``closed``: a ``charge.dispute.closed``,
    or a closed status in the event's object). An open case never comes back from closed, so any order of
    arrival of the same events ends in the same case. The partner is alerted once, while the case is open.
    ``None``: no charge of ours has that PaymentIntent."""
    charge = (
        Charge.objects.select_related("order")
        .filter(platform=platform, platform_charge_id=info.charge_id)
        .first()
    )
    if charge is None or not info.charge_id:
        return None
    over = closed or info.status in CLOSED_PLATFORM_STATUSES
    with transaction.atomic():
        dispute = _case(charge, info, alert=not over)
        if over and dispute.status == D.OPEN:
            dispute, _ = DISPUTE_MACHINE.move(
                obj=dispute,
                to=D.CLOSED,
                actor=DISPUTES_ACTOR,
                reason=f"The platform closed the dispute: {info.status.replace('_', ' ')}",
                changes={"platform_status": info.status[:32], "closed_at": timezone.now()},
            )
    return dispute


def _case(charge: Charge, info: DisputeInfo, *, alert: bool) -> Dispute:
    """The dispute's case, locked: made now (with its history row, and the partner's alert when ``alert``) or
    found. The caller holds a transaction."""
    try:
        with transaction.atomic():
            # Race: two events of one dispute delivered at once (its opening and its close, or one twice) — the
            # unique platform id lets one insert win; the other waits for it below and works on that case.
            dispute = Dispute.objects.create(
                charge=charge,
                order=charge.order,
                partner_id=charge.partner_id,
                platform_dispute_id=info.dispute_id,
                amount=info.amount,
                currency=info.currency,
                reason=info.reason[:64],
                platform_status=info.status[:32],
                evidence_due_by=info.evidence_due_by,
            )
            reason = info.reason.replace("_", " ") or "no reason given"
            DISPUTE_MACHINE.record(
                obj=dispute,
                from_state="",
                to_state=D.OPEN,
                actor=DISPUTES_ACTOR,
                reason=f"The card's bank disputes the charge of order {charge.order.order_id} ({reason})",
            )
    except IntegrityError:
        return Dispute.objects.select_for_update().get(platform_dispute_id=info.dispute_id)
    if alert:
        payment_alert_enqueue(kind=CHARGE_DISPUTED, pk=dispute.pk)  # published once the case commits
    logger.warning(
        "card charge disputed",
        extra={"order_id": charge.order.order_id, "dispute": info.dispute_id, "reason": info.reason},
    )
    return dispute
