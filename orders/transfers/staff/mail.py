"""Staff asking the seller about a transfer the service could not decide (the "Ask the seller" case action).

A test-mode order never e-mails a seller: ``seller_recipient`` names the partner's contact then, and the
subject starts ``[TEST]``."""

from __future__ import annotations

from django.conf import settings

from config.core.mail import send_templated_mail
from orders.models import Order
from orders.seller_mail import LONG_DATE, dates_shown, seller_recipient


def send_transfer_question(*, order: Order, question: str) -> str:
    """E-mail the seller of ``order`` staff's ``question`` about the transfer; returns the recipient ("" if the
    order has no one to write to, and nothing is sent)."""
    to = seller_recipient(order)
    if not to:
        return ""
    event = order.event
    send_templated_mail(
        template="transfer_question",
        subject=f"About your ticket transfer for {event.name} (order {order.order_id})",
        to=to,
        context={
            "order": order,
            "event": event,
            "venue": event.venue,
            "starts_on": dates_shown(event.local_starts_at, LONG_DATE),
            "question": question,
            "partner_name": order.partner.name,
            "support_email": settings.DEFAULT_FROM_EMAIL,
        },
        livemode=order.livemode,
    )
    return to
