"""Orders for the partner-facing side of transfer detection, moved the way the service moves them."""

from __future__ import annotations

from datetime import timedelta

from orders.models import Order
from orders.services import order_create, order_transition
from orders.transfers.decision.state import order_receive
from tests.orders.conftest import create_order, pdf_upload
from tests.orders.factories import order_row
from tests.quotes.factories import QuoteFactory, quote_token
from tests.webhooks.conftest import receiver  # noqa: F401  (a fixture of these tests)


def awaiting_order(partner, *, delivery_type: str = "mobile_transfer", **overrides) -> Order:
    """An order of ``partner`` confirmed and waiting for its tickets."""
    if delivery_type == "pdf":
        overrides.setdefault("file", pdf_upload())
    if overrides.get("livemode") is False:
        order = _test_mode_order(partner, delivery_type=delivery_type, **overrides)
    else:
        order = create_order(partner, delivery_type=delivery_type, **overrides)
    return order_transition(order=order, to=Order.Status.AWAITING_TRANSFER, actor="system:confirmation")


def _test_mode_order(partner, **fields) -> Order:
    quote = QuoteFactory(partner=partner, row=order_row(available_quantity=50), quantity=2, livemode=False)
    return order_create(
        partner_pk=partner.pk,
        actor=f"partner:{partner.public_id}",
        quote_id=quote_token(quote),
        is_ready_to_deliver=False,
        in_hand_date=quote.event.event_date - timedelta(days=7),
        **fields,
    )


def received_order(
    partner, *, delivery_type: str = "mobile_transfer", source: str = "email", accepted: bool = False, **kw
) -> Order:
    """An order whose tickets arrived (``ticket_received``, transfer ``detected`` or ``accepted``)."""
    order = awaiting_order(partner, delivery_type=delivery_type, **kw)
    return order_receive(
        order=order, source=source, actor="system:transfers", reason="Tickets arrived", accepted=accepted
    )
