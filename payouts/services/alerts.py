"""E-mail alerts to the partner's contact address when its money did not move: a declined card charge, a
failed payout, a failed refund; and when its bank disputes a card charge.

The failure's writer calls ``payment_alert_enqueue`` in the transaction that records the failure, so the
task is published only once that write is committed (and never for a write that rolled back). The task runs
``payment_alert_send``: each alert is sent once per failure, through the e-mails sent at most once
(``config.core.mail_once``, the alert's kind as the purpose, the record's pk as the key) — the claim commits
only together with a handed-over e-mail, so a second run (a redelivery, a retry) finds it claimed and sends
nothing, while a mail-server error leaves it unclaimed for the task's retry. A staff retry of a failed payout
or refund forgets the alert (``payment_alert_forget``): its next failure is a new event with its own alert.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.db import models, transaction
from django.urls import reverse

from config.core import mail_once
from config.core.mail import send_templated_mail
from config.core.publish import publish_on_commit

from ..models import Charge, Dispute, Payout

logger = logging.getLogger(__name__)

CHARGE_DECLINED = "charge_declined"
PAYOUT_FAILED = "payout_failed"
REFUND_FAILED = "refund_failed"
CHARGE_DISPUTED = "charge_disputed"


@dataclass(frozen=True)
class AlertKind:
    model: type[models.Model]
    still_failed: dict[str, str]  # the claim only holds while the record is still in its failed state
    template: str  # templates/emails/<template>.txt and .html
    subject: str  # formatted with the order id


KINDS: dict[str, AlertKind] = {
    CHARGE_DECLINED: AlertKind(
        model=Charge,
        still_failed={"status": Charge.Status.FAILED},
        template="alert_charge_declined",
        subject="Card charge declined for order {order_id}: update your card",
    ),
    PAYOUT_FAILED: AlertKind(
        model=Payout,
        still_failed={"status": Payout.Status.FAILED},
        template="alert_payout_failed",
        subject="Payout failed for order {order_id}: check your payout account",
    ),
    REFUND_FAILED: AlertKind(
        model=Charge,
        still_failed={"refund_status": Charge.RefundStatus.FAILED},
        template="alert_refund_failed",
        subject="Refund failed for order {order_id}: our team is on it",
    ),
    CHARGE_DISPUTED: AlertKind(
        model=Dispute,
        still_failed={"status": Dispute.Status.OPEN},
        template="alert_charge_disputed",
        subject="Card charge disputed for order {order_id}: our team is on it",
    ),
}


def payment_alert_enqueue(*, kind: str, pk: int) -> None:
    """Publish the alert once the caller's transaction (the one writing the failure) commits."""
    if kind not in KINDS:
        raise ValueError(f"unknown payment alert {kind!r}")
    # Lost with the broker: the failure stays on the portal dashboard's readiness summary all the same.
    publish_on_commit("payouts.tasks.payment_alert_send", kind, pk)


def payment_alert_forget(*, kind: str, pk: int) -> None:
    """The record's failure is over (a staff retry): its next failure is a new event with its own alert. In the
    caller's transaction, with the move that ends the failure."""
    mail_once.forget(purpose=kind, keys=[pk])


def payment_alert_sent_at(*, kind: str, pk: int):
    """When the partner was e-mailed about this record's failure (``None``: not yet)."""
    return mail_once.rows(kind, [pk]).values_list("sent_at", flat=True).first()


def _portal_url(name: str, *args: Any, fragment: str = "", query: str = "") -> str:
    url = f"{settings.PUBLIC_BASE_URL}{reverse(name, args=args)}"
    return url + (f"?{query}" if query else "") + (f"#{fragment}" if fragment else "")


def _context(kind: str, record: Any) -> dict[str, Any]:
    order = record.order
    context: dict[str, Any] = {
        "partner_name": record.partner.name,
        "order_id": order.order_id,
        "partner_reference": order.partner_reference,
        "amount": record.amount,
        "currency": record.currency,
        "order_url": _portal_url("portal:order-detail", order.order_id),
        "support_email": settings.DEFAULT_FROM_EMAIL,
    }
    if kind == CHARGE_DECLINED:
        context["reason"] = record.failure_reason or "The card was declined."
        context["card"] = f"{record.card_brand} ••••{record.card_last4}" if record.card_last4 else ""
        context["fix_url"] = _portal_url("portal:payment-methods", fragment="credit-card")
    elif kind == PAYOUT_FAILED:
        context["reason"] = record.failure_reason or "The platform reported the payout as failed."
        context["account"] = record.account_description
        context["fix_url"] = _portal_url("portal:payment-methods")
        context["payouts_url"] = _portal_url("portal:payouts", query="status=failed")
        # The move into this failure came from paid: the bank sent the money back.
        last_move = record.status_history.order_by("-pk").values_list("from_status", flat=True).first()
        context["after_paid"] = last_move == Payout.Status.PAID
    elif kind == CHARGE_DISPUTED:
        context["reason"] = record.reason.replace("_", " ") or "The bank gave no reason."
        context["evidence_due_by"] = record.evidence_due_by
        context["fix_url"] = context["order_url"]
    else:
        context["reason"] = record.refund_failure_reason or "The platform refused the refund."
        context["card"] = f"{record.card_brand} ••••{record.card_last4}" if record.card_last4 else ""
        context["fix_url"] = context["order_url"]
    return context


def payment_alert_send(*, kind: str, pk: int) -> bool:
    """E-mail the partner's contact address about one failure, once. Returns whether this call sent it.

    Nothing is sent (and nothing claimed) when the record is gone, no longer failed (a staff retry came
    first), already alerted, or the partner has no contact e-mail (logged: the dashboard still shows it).
    Mail-server errors propagate, with the claim rolled back, for the task to retry.
    """
    spec = KINDS[kind]
    record = spec.model.objects.select_related("partner", "order").filter(pk=pk, **spec.still_failed).first()
    if record is None or payment_alert_sent_at(kind=kind, pk=pk) is not None:
        return False
    if not record.partner.contact_email:
        logger.warning(
            "payment alert not sent: the partner has no contact e-mail",
            extra={"alert": kind, "partner_id": record.partner.public_id, "order_id": record.order.order_id},
        )
        return False
    context = _context(kind, record)
    with transaction.atomic():
        # Race: a staff retry ending the failure meanwhile — the record's row lock orders the two, and the alert
        # is claimed only while the record is still failed.
        if not spec.model.objects.select_for_update().filter(pk=pk, **spec.still_failed).exists():
            return False
        # Race: two workers sending the same alert (a redelivery, the task's retry) — only the insert of the
        # alert's row claims it; the other waits for this transaction and then finds it claimed.
        if not mail_once.claim_with_sending(purpose=kind, key=pk, recipient=record.partner.contact_email):
            return False
        # Inside the claim's transaction: a mail-server error rolls the claim back, so the retry sends it.
        send_templated_mail(
            template=spec.template,
            subject=spec.subject.format(order_id=record.order.order_id),
            to=record.partner.contact_email,
            context=context,
        )
    logger.info(
        "payment alert sent",
        extra={"alert": kind, "partner_id": record.partner.public_id, "order_id": record.order.order_id},
    )
    return True
