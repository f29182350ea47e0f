"""Helpers of the export and statement tests: orders at chosen instants, charges and payouts on them."""

import copy
import csv
import io
from datetime import datetime

from django.http import StreamingHttpResponse

from orders.models import Order, new_order_id, new_transfer_address
from payouts.models import Charge, Payout
from quotes.models import Quote
from tests.orders.factories import make_order


def csv_rows(response) -> list[dict[str, str]]:
    """The rows of a streamed CSV download, by column name."""
    assert isinstance(response, StreamingHttpResponse)
    text = b"".join(response.streaming_content).decode()
    return list(csv.DictReader(io.StringIO(text)))


def order_at(partner, at: datetime, **kwargs) -> Order:
    """An order made the service's way, then moved to ``at`` (creation time is what exports and
    statements are about)."""
    order = make_order(partner, **kwargs)
    Order.objects.filter(pk=order.pk).update(created_at=at)
    order.refresh_from_db()
    return order


def charge_on(order: Order, *, at: datetime, status: str = "succeeded", refunded_at=None) -> Charge:
    charge, _ = Charge.objects.update_or_create(
        order=order,
        defaults={
            "partner_id": order.partner_id,
            "amount": order.total_price,
            "platform": "sandbox",
            "idempotency_key": f"test-charge-{order.order_id}",
            "card_brand": "Visa",
            "card_last4": "4242",
            "status": status,
            "refund_status": "succeeded" if refunded_at else "none",
            "refunded_at": refunded_at,
        },
    )
    Charge.objects.filter(pk=charge.pk).update(created_at=at)  # auto_now_add: moved afterwards
    return charge


def payout_on(order: Order, *, status: str = "paid", paid_at=None, scheduled_for=None, **extra) -> Payout:
    payout, _ = Payout.objects.update_or_create(
        order=order,
        defaults={
            "partner_id": order.partner_id,
            "amount": order.total_price,
            "status": status,
            "paid_at": paid_at,
            "scheduled_for": scheduled_for,
            "account_description": "Sandbox Test Bank ••••6789 (ACH)",
            **extra,
        },
    )
    return payout


def clone_orders(template: Order, count: int) -> None:
    """``count`` more orders like ``template`` (each with its own quote), inserted in bulk."""
    quote = Quote.objects.get(pk=template.quote_id)
    quotes = []
    for _ in range(count):
        clone = copy.copy(quote)
        clone.pk = None
        clone._state.adding = True
        quotes.append(clone)
    quotes = Quote.objects.bulk_create(quotes, batch_size=500)
    orders = []
    for new_quote in quotes:
        clone = copy.copy(template)
        clone.pk = None
        clone._state.adding = True
        clone.order_id = new_order_id()
        clone.transfer_address = new_transfer_address()
        clone.quote = new_quote
        orders.append(clone)
    Order.objects.bulk_create(orders, batch_size=500)
