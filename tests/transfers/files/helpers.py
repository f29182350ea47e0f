"""Orders of the ticket-file tests, made the way the services make them, and barcodes unique to a test."""

import secrets

from orders.models import Order
from orders.services import order_transition
from tests.orders.conftest import create_order


def codes(count: int, prefix: str = "TKT") -> list[str]:
    """``count`` barcode texts no other test uses (what a platform prints: letters, digits, dashes)."""
    return [f"{prefix}-{secrets.token_hex(6).upper()}-{n:04d}" for n in range(count)]


def file_order(partner, *, quantity: int = 2, delivery_type: str = "pdf", status: str = "awaiting_transfer"):
    """An order of ``partner`` for ``quantity`` tickets, walked to ``status`` (``accepted`` or
    ``awaiting_transfer``) by staff (by the confirmation, in tests that commit)."""
    order = create_order(partner, quantity=quantity, delivery_type=delivery_type)
    order.refresh_from_db()  # with transaction=True tests the confirmation ran on commit already
    if status == Order.Status.AWAITING_TRANSFER and order.status == Order.Status.ACCEPTED:
        order = order_transition(order=order, to=status, actor="staff:test", reason="test setup")
    return order
