"""The notification types an endpoint can subscribe to are declared once, on ``Notification.Type``: the API's
choices, the schema's enum and help, the portal's form and the fan-out's subscription all read them there."""

from orders.models import Notification
from orders.signals import subscriber
from orders.webhooks import forms, serializers


def test_every_declared_type_but_the_ping_is_subscribable_in_declaration_order():
    assert Notification.Type.subscribable() == (
        "order.created",
        "order.status_changed",
        "order.transfer_updated",
    )
    assert Notification.Type.WEBHOOK_PING not in Notification.Type.subscribable()


def test_the_api_the_schema_the_form_and_the_fan_out_read_the_one_declaration():
    types = Notification.Type.subscribable()
    assert [*types, "*"] == serializers.EVENT_TYPE_CHOICES
    enum = serializers.EventTypesField._spectacular_annotation["field"]["oneOf"][0]["items"]["enum"]
    assert enum == list(types)
    assert all(f"`{t}`" in serializers.EVENT_TYPES_HELP for t in types)
    assert [value for value, _ in forms.EVENT_TYPE_CHOICES] == ["*", *types]
    assert subscriber("webhooks").types == frozenset(types)
