"""Output shapes of the notification feed (``GET /v1/notifications``) and its query parameters
(docs/partners/notifications-and-webhooks.md "Notifications"). ``data`` differs by ``type``: the schema
says which shape goes with which type."""

from drf_spectacular.utils import PolymorphicProxySerializer, extend_schema_field
from rest_framework import serializers

from config.api.pagination import PageParamsSerializer

from .models import Notification, Order
from .outbox import STATUS_REASON_CODES, TRANSFER_REASON_CODES
from .serializers import OrderDetailSerializer


class NotificationListParamsSerializer(PageParamsSerializer):
    type = serializers.ChoiceField(choices=Notification.Type.choices, required=False)
    order_id = serializers.CharField(
        required=False, max_length=32, help_text="Only this order's notifications."
    )
    after = serializers.CharField(
        required=False,
        max_length=32,
        help_text="A notification id (`ntf_…`) of yours: only the notifications after it (resuming a poll).",
    )


class NotificationDataSerializer(serializers.Serializer):
    """``data`` of ``order.created`` and ``order.status_changed``."""

    order = OrderDetailSerializer(
        help_text="The order as GET /v1/orders/{order_id} returned it at the change."
    )
    previous_status = serializers.ChoiceField(
        choices=Order.Status.choices, allow_null=True, help_text="null for order.created."
    )
    reason = serializers.ChoiceField(
        choices=list(STATUS_REASON_CODES),
        allow_null=True,
        help_text="The transition's machine reason, where it has one.",
    )


class TransferNotificationDataSerializer(serializers.Serializer):
    """``data`` of ``order.transfer_updated`` (docs/partners/orders.md "Transfer")."""

    order = OrderDetailSerializer(
        help_text="The order as GET /v1/orders/{order_id} returned it at the change, its new `transfer` "
        "included."
    )
    previous_transfer_state = serializers.ChoiceField(
        choices=Order.TransferState.choices, help_text="`transfer.state` before the change."
    )
    reason = serializers.ChoiceField(
        choices=list(TRANSFER_REASON_CODES), help_text="Why `transfer.state` changed."
    )


class PingDataSerializer(serializers.Serializer):
    """``data`` of ``webhook.ping``."""

    endpoint_id = serializers.CharField(help_text="The endpoint pinged (`whe_…`).")


NOTIFICATION_DATA_SCHEMA = PolymorphicProxySerializer(
    component_name="NotificationDataByType",
    serializers=[NotificationDataSerializer, TransferNotificationDataSerializer, PingDataSerializer],
    resource_type_field_name=None,
)


class NotificationSerializer(serializers.Serializer):
    """Schema of the stored notification object (the feed returns ``Notification.payload`` as is)."""

    id = serializers.CharField(help_text="`ntf_…`, also the webhook-id of its webhook deliveries.")
    type = serializers.ChoiceField(choices=Notification.Type.choices)
    created_at = serializers.DateTimeField()
    livemode = serializers.BooleanField()
    data = serializers.SerializerMethodField(
        help_text="By `type`: `order.created` and `order.status_changed` carry `{order, previous_status, "
        "reason}`, `order.transfer_updated` `{order, previous_transfer_state, reason}`, `webhook.ping` "
        "`{endpoint_id}`."
    )

    @extend_schema_field(NOTIFICATION_DATA_SCHEMA)
    def get_data(self, notification) -> dict:
        return notification["data"]


class NotificationListSerializer(serializers.Serializer):
    results = NotificationSerializer(many=True)
    has_more = serializers.BooleanField()
    next_cursor = serializers.CharField(allow_null=True)
