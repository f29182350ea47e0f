"""The order as the API shows it: ``order_output`` and ``order_detail_output`` give what ``OrderSerializer`` and
``OrderDetailSerializer`` give, value for value and type for type, over orders in every state."""

import json
from datetime import UTC, timedelta
from decimal import Decimal

import pytest
from django.utils import timezone
from rest_framework.utils.encoders import JSONEncoder

from orders import outbox
from orders.models import Order
from orders.output import order_detail_output, order_output
from orders.serializers import OrderDetailSerializer, OrderSerializer
from orders.services import order_cancel, order_transition
from orders.transfers.models import TransferProgress

from .conftest import create_order


def _typed(value):
    """``value`` with the type of every part kept, so that ``1 == True`` or ``Decimal("1") == 1`` do not pass."""
    if isinstance(value, dict):
        return ("dict", [(key, _typed(item)) for key, item in value.items()])
    if isinstance(value, list):
        return ("list", [_typed(item) for item in value])
    return (type(value).__name__, value)


def _as_read(order: Order) -> Order:
    order = Order.objects.select_related("event", "transfer_progress").get(pk=order.pk)
    order.history_rows = list(order.status_history.order_by("at", "id"))
    return order


def _same(order: Order) -> None:
    assert _typed(order_output(order)) == _typed(OrderSerializer(order).data)
    assert _typed(order_detail_output(order)) == _typed(OrderDetailSerializer(order).data)


@pytest.fixture
def orders(partner):
    now = timezone.now()
    made = {
        "waiting for its in-hand date": create_order(partner),
        "ready, with the partner's fields": create_order(
            partner,
            is_ready_to_deliver=True,
            in_hand_date=None,
            seller_email="seller@example.com",
            partner_reference="ref-7",
            delivery_type="mobile_qr",
        ),
    }
    canceled = create_order(partner, quantity=3)
    order_cancel(order=canceled, actor="partner:x", reason="changed my mind")
    made["canceled, with a reason"] = canceled
    moved = create_order(partner, quantity=1)
    order_transition(order=moved, to=Order.Status.AWAITING_TRANSFER, actor="system:confirmation")
    TransferProgress.objects.create(
        order=moved,
        state=Order.TransferState.PARTIAL,
        quantity_detected=0,
        source=Order.TransferSource.EMAIL,
        detected_at=now - timedelta(minutes=3),
    )
    made["awaiting its transfer, partly seen"] = moved
    accepted = create_order(partner)
    TransferProgress.objects.create(
        order=accepted,
        state=Order.TransferState.ACCEPTED,
        quantity_detected=2,
        source=Order.TransferSource.STAFF,
        detected_at=now - timedelta(hours=2, microseconds=7),
        accepted_at=now - timedelta(hours=1),
    )
    made["accepted on the platform"] = accepted
    odd = create_order(partner)
    # Values the columns hold that no order made through the API has: a blank source, restrictions with a null,
    # prices with more places than the fields show, a test-mode order.
    Order.objects.filter(pk=odd.pk).update(
        restrictions=["Mobile only", None, "21+"],
        restriction_detail="",
        offer_price=Decimal("12.5"),
        face_value=Decimal("100"),
        total_price=Decimal("25.005"),
        livemode=False,
        general_admission=True,
    )
    TransferProgress.objects.create(order=odd, state=Order.TransferState.NONE, source="")
    made["with values at the edges"] = odd
    return made


def test_every_order_renders_as_its_serializer_renders_it(orders):
    for name, order in orders.items():
        read = _as_read(order)
        assert read.pk, name
        _same(read)


def test_an_order_with_no_transfer_row_renders_its_defaults(orders):
    read = _as_read(orders["waiting for its in-hand date"])
    assert not TransferProgress.objects.filter(order=read).exists()
    _same(read)
    assert order_output(read)["transfer"] == {
        "state": "none",
        "quantity_detected": 0,
        "source": None,
        "detected_at": None,
        "accepted_at": None,
    }


def test_the_order_just_made_renders_as_read_back(partner):
    """The creation renders the order it wrote (``order.detail_output``) without reading it back."""
    order = create_order(partner, seller_email="seller@example.com")
    assert _typed(order.detail_output) == _typed(OrderDetailSerializer(_as_read(order)).data)


def test_an_instant_is_shown_in_utc_whatever_zone_is_current(orders):
    read = _as_read(orders["accepted on the platform"])
    shown = order_detail_output(read)
    with timezone.override("America/New_York"):
        assert order_detail_output(read) == shown
    assert shown["created_at"] == read.created_at.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    assert shown["transfer"]["accepted_at"].endswith("Z")


def test_a_notifications_payload_holds_the_order_as_the_api_renderer_encodes_it(orders):
    """The payload stores the rendered order as it reads back from the API renderer's JSON (money as JSON numbers),
    value for value and type for type."""
    for name, order in orders.items():
        shown = order_detail_output(_as_read(order))
        expected = json.loads(json.dumps(shown, cls=JSONEncoder))
        assert _typed(outbox._json_ready(shown)) == _typed(expected), name
        assert isinstance(expected["total_price"], float)
