"""Card disputes: the partner disputed the card charge of an order with its bank (a chargeback). Each opens a
staff case (``Dispute``, on the staff dashboard's "Open disputes" queue) and e-mails the partner, once; the
platform's verdict closes it. The evidence itself is submitted in the platform's dashboard.

``DISPUTE_MACHINE`` is the only writer of ``Dispute.status`` (open → closed), every move recorded in
``DisputeStatusHistory``.
"""

from __future__ import annotations

import logging

from django.db import IntegrityError, transaction
from django.utils import timezone

from config.core.statemachine import IllegalStateMove, StateMachine

from ..models import Charge, Dispute, DisputeStatusHistory
from ..platform.stripe_events import DisputeInfo
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


def dispute_open(*, platform: str, info: DisputeInfo) -> Dispute | None:
    """Open the staff case of a dispute of the charge ``info`` names, once per platform dispute, and alert the
    partner once the case is committed. ``None``: no charge of ours has that PaymentIntent."""
    charge = (
        Charge.objects.select_related("order")
        .filter(platform=platform, platform_charge_id=info.payment_intent_id)
        .first()
    )
    if charge is None or not info.payment_intent_id:
        return None
    try:
        with transaction.atomic():
            # Race: two deliveries of the dispute at once — the unique platform id lets one insert win.
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
            payment_alert_enqueue(kind=CHARGE_DISPUTED, pk=dispute.pk)  # published once the case commits
    except IntegrityError:
        return Dispute.objects.get(platform_dispute_id=info.dispute_id)
    logger.warning(
        "card charge disputed",
        extra={"order_id": charge.order.order_id, "dispute": info.dispute_id, "reason": info.reason},
    )
    return dispute


def dispute_close(*, info: DisputeInfo) -> Dispute | None:
    """Close the case with the platform's verdict (won, lost, warning closed …). A repeat changes nothing."""
    dispute = Dispute.objects.filter(platform_dispute_id=info.dispute_id).first()
    if dispute is None:
        return None
    try:
        dispute, _ = DISPUTE_MACHINE.move(
            obj=dispute,
            to=D.CLOSED,
            actor=DISPUTES_ACTOR,
            reason=f"The platform closed the dispute: {info.status.replace('_', ' ')}",
            changes={"platform_status": info.status[:32], "closed_at": timezone.now()},
        )
    except IllegalStateMove:  # closed already (a second delivery)
        return dispute
    return dispute
