"""Orders for the partner-facing side of transfer detection, moved the way the service moves them."""

from __future__ import annotations

from orders.models import Order
from orders.services import order_transition
from orders.transfers.state import order_receive
from tests.orders.conftest import create_order, pdf_upload


def awaiting_order(partner, *, delivery_type: str = "mobile_transfer", **overrides) -> Order:
    """An order of ``partner`` confirmed and waiting for its tickets."""
    if delivery_type == "pdf":
        overrides.setdefault("file", pdf_upload())
    order = create_order(partner, delivery_type=delivery_type, **overrides)
    return order_transition(order=order, to=Order.Status.AWAITING_TRANSFER, actor="system:confirmation")


def received_order(
    partner, *, delivery_type: str = "mobile_transfer", source: str = "email", accepted: bool = False, **kw
) -> Order:
    """An order whose tickets arrived (``ticket_received``, transfer ``detected`` or ``accepted``)."""
    order = awaiting_order(partner, delivery_type=delivery_type, **kw)
    return order_receive(
        order=order, source=source, actor="system:transfers", reason="Tickets arrived", accepted=accepted
    )
