"""A delivery batch asks once which of its notifications no endpoint wants, and fans out only the others."""

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from orders import delivery
from orders.models import NotificationReceipt
from orders.webhooks.models import WebhookDelivery, WebhookEndpoint
from orders.webhooks.services import notifications_without_endpoints
from tests.conftest import make_partner

from .conftest import order_notification, register

pytestmark = pytest.mark.django_db


def test_a_batch_reads_the_endpoints_once_and_fans_out_only_what_an_endpoint_wants(partner, receiver):
    other = make_partner(name="No Hooks Resale").partner
    endpoint, _ = register(partner, receiver.url(), event_types=("order.created",))
    wanted = order_notification(partner)
    not_subscribed = order_notification(partner, type_="order.status_changed")
    other_mode = order_notification(partner, livemode=False)
    no_endpoint = order_notification(other)
    batch = [wanted, not_subscribed, other_mode, no_endpoint]
    assert notifications_without_endpoints(batch) == {not_subscribed.pk, other_mode.pk, no_endpoint.pk}

    endpoints_table = WebhookEndpoint._meta.db_table
    with CaptureQueriesContext(connection) as captured:
        done = delivery.notifications_deliver(deliveries=[(n.pk, ["webhooks"]) for n in batch])
    assert done == {n.pk: ["webhooks"] for n in batch}
    reads = [q["sql"] for q in captured.captured_queries if f'FROM "{endpoints_table}"' in q["sql"]]
    assert len(reads) == 2  # the batch's one read, and the fan-out of the one notification an endpoint wants
    assert list(WebhookDelivery.objects.values_list("notification_id", "endpoint_id")) == [
        (wanted.pk, endpoint.pk)
    ]
    assert NotificationReceipt.objects.filter(subscriber="webhooks").count() == 4


def test_a_disabled_endpoint_wants_nothing(partner, receiver):
    endpoint, _ = register(partner, receiver.url())
    WebhookEndpoint.objects.filter(pk=endpoint.pk).update(status=WebhookEndpoint.Status.DISABLED)
    notification = order_notification(partner)
    assert notifications_without_endpoints([notification]) == {notification.pk}
