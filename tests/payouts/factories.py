"""Orders in any status for the payouts tests, made the way the service makes them."""

from datetime import timedelta
from decimal import Decimal

from orders.models import Order
from orders.services import order_create, order_transition
from tests.orders.factories import QuoteFactory, RowFactory, quote_token

# The life cycle's path to each status (DECISIONS: order life cycle).
PATH = {
    "accepted": [],
    "awaiting_transfer": ["awaiting_transfer"],
    "ticket_received": ["awaiting_transfer", "ticket_received"],
    "payout_in_process": ["awaiting_transfer", "ticket_received", "payout_in_process"],
    "scheduled": ["awaiting_transfer", "ticket_received", "payout_in_process", "scheduled"],
    "paid": ["awaiting_transfer", "ticket_received", "payout_in_process", "scheduled", "paid"],
    "canceled": ["canceled"],
    "expired": ["awaiting_transfer", "expired"],
}


def make_order(
    partner,
    *,
    status: str = "accepted",
    quantity: int = 2,
    offer_price: Decimal = Decimal("85.00"),
    partner_reference: str = "",
) -> Order:
    """An order of ``partner`` created from a fresh quote, then walked to ``status`` through order_transition."""
    row = RowFactory(available_quantity=50, offer_price=offer_price)
    quote = QuoteFactory(partner=partner, row=row, quantity=quantity)
    order = order_create(
        partner_pk=partner.pk,
        actor=f"partner:{partner.public_id}",
        quote_id=quote_token(quote),
        delivery_type="mobile_transfer",
        is_ready_to_deliver=False,
        in_hand_date=quote.event.event_date - timedelta(days=7),
        partner_reference=partner_reference,
    )
    # With transaction=True tests the confirmation ran on commit already: continue from where it is.
    order.refresh_from_db()
    steps = PATH[status]
    if order.status in steps:
        steps = steps[steps.index(order.status) + 1 :]
    for step in steps:
        order = order_transition(order=order, to=step, actor="staff:test", reason="test setup")
    return order
