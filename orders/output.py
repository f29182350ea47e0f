"""The order as the API shows it (the 201, the single order, each order of a list, every notification's
order): what ``OrderSerializer`` and ``OrderDetailSerializer`` render, field by field, without building the
serializers' fields per call (docs/architecture/orders.md)."""

from datetime import UTC

from rest_framework import serializers

from .models import Order, OrderStatusHistory
from .serializers import OrderDetailSerializer, OrderSerializer, order_quotes

# What the single order shows beyond the order of a list or a 201.
_DETAIL_ONLY = frozenset(OrderDetailSerializer._declared_fields) - frozenset(OrderSerializer._declared_fields)


def order_output(order: Order) -> dict:
    """``OrderSerializer(order).data``, without the serializer (:func:`_order_fields`); taken from
    ``order.detail_output`` (what ``order_detail_output`` gave) when the order was just rendered in full (its
    creation)."""
    rendered = getattr(order, "detail_output", None)
    if rendered is not None:
        return {name: value for name, value in rendered.items() if name not in _DETAIL_ONLY}
    return _order_fields(order)


def order_detail_output(order: Order) -> dict:
    """``OrderDetailSerializer(order).data`` (``order.history_rows`` set), without the serializer."""
    data = _order_fields(order)
    data["status_changed_at"] = _when(order.status_changed_at)
    rows = order.history_rows
    data["status_history"] = None if rows is None else [_change_fields(change) for change in rows]
    return data


# The serializers' fields whose conversions are not a plain ``str``, ``int`` or ``bool``: their own
# ``to_representation`` (an instant in the API's format; a decimal quantized as declared). An instant is
# always shown in UTC, as the format's ``Z`` says, whatever time zone is current (the serializer's field would
# show the current one's wall time).
_OUTPUT_FIELDS = OrderDetailSerializer._declared_fields
_DATETIME = serializers.DateTimeField(default_timezone=UTC)
_DATE = _OUTPUT_FIELDS["in_hand_date"]
_FACE_VALUE = _OUTPUT_FIELDS["face_value"]
_TOTAL_PRICE = _OUTPUT_FIELDS["total_price"]


def _text(value):
    return None if value is None else str(value)


def _when(value):
    return None if value is None else _DATETIME.to_representation(value)


def _choice(value):
    # A ChoiceField gives back a value outside its choices (and "") as it is, any other as its choice's key.
    return value if value is None or value == "" else str(value)


def _order_fields(order: Order) -> dict:
    """What ``OrderSerializer`` renders of ``order``, field by field in its order, each as its field converts it
    (a ``None`` as ``None``, as the serializer leaves it): building nothing per field, about a third of the
    serializer's time. ``tests/orders/test_output.py`` holds them equal over orders in every state."""
    transfer = order.transfer
    in_hand_date = order.in_hand_date
    restrictions = order.restrictions
    return {
        "order_id": _text(order.order_id),
        "event_id": _text(order.event.event_id),
        "section_name": _text(order.section_name),
        "section_name_display": _text(order.section_name_display),
        "row_name": _text(order.row_name),
        "row_name_display": _text(order.row_name_display),
        "quantity": int(order.quantity),
        "general_admission": bool(order.general_admission),
        "face_value": None if order.face_value is None else _FACE_VALUE.to_representation(order.face_value),
        "total_price": None
        if order.total_price is None
        else _TOTAL_PRICE.to_representation(order.total_price),
        "status": _choice(order.status),
        "quotes": order_quotes(order),
        "restrictions": None
        if restrictions is None
        else [None if item is None else str(item) for item in restrictions],
        "restriction_detail": _text(order.restriction_detail),
        "primary_site": _text(order.primary_site),
        "created_at": _when(order.created_at),
        "delivery_type": _choice(order.delivery_type),
        "is_ready_to_deliver": bool(order.is_ready_to_deliver),
        "in_hand_date": None if in_hand_date is None else _DATE.to_representation(in_hand_date),
        "transfer_address": _text(order.transfer_address),
        "transfer": None
        if transfer is None
        else {
            "state": _choice(transfer.state),
            "quantity_detected": None
            if transfer.quantity_detected is None
            else int(transfer.quantity_detected),
            "source": _choice(transfer.source),
            "detected_at": _when(transfer.detected_at),
            "accepted_at": _when(transfer.accepted_at),
        },
        "partner_reference": order.partner_reference or None,
        "seller_email": order.seller_email or None,
        "livemode": bool(order.livemode),
    }


def _change_fields(change: OrderStatusHistory) -> dict:
    """What ``OrderStatusChangeSerializer`` renders of one change."""
    return {
        "from_status": change.from_status or None,
        "to_status": _text(change.to_status),
        "at": _when(change.at),
        "actor": _text(change.actor_kind),
        "reason": _text(change.reason),
    }
