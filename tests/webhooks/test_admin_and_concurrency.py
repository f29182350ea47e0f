"""Staff admin (read-only, searchable) and races on one delivery or one partner's endpoint limit."""

import threading

import pytest
from django.contrib.auth import get_user_model
from django.db import connection
from django.test import Client

from orders.webhooks import sending, services
from orders.webhooks.models import WebhookAttempt, WebhookEndpoint
from tests.conftest import make_partner

from .conftest import Reply, order_notification, register

ENDPOINTS = "/admin/webhooks/webhookendpoint/"
DELIVERIES = "/admin/webhooks/webhookdelivery/"


@pytest.fixture
def staff_client(db):
    user = get_user_model().objects.create_superuser("root", "root@buyback.example", "pw")
    client = Client()
    client.force_login(user)
    return client


@pytest.mark.django_db
def test_admin_lists_and_searches_endpoints_and_deliveries_read_only(
    staff_client, partner, other_partner_creds, receiver, django_capture_on_commit_callbacks
):
    endpoint, secret = register(partner, receiver.url())
    other, _ = register(other_partner_creds.partner, receiver.url("/other"))
    notification = order_notification(partner)
    with django_capture_on_commit_callbacks(execute=True):
        [delivery] = services.notification_fan_out(notification)

    for term in [partner.name, partner.public_id, endpoint.endpoint_id]:
        html = staff_client.get(ENDPOINTS, {"q": term}).content.decode()
        assert endpoint.endpoint_id in html and other.endpoint_id not in html, term
    for term in [notification.notification_id, endpoint.endpoint_id, partner.name]:
        html = staff_client.get(DELIVERIES, {"q": term}).content.decode()
        assert delivery.delivery_id in html, term
    detail = staff_client.get(f"{DELIVERIES}{delivery.pk}/change/").content.decode()
    assert notification.order.order_id in detail  # the attempt's request body, inline
    endpoint_page = staff_client.get(f"{ENDPOINTS}{endpoint.pk}/change/").content.decode()
    assert secret not in endpoint_page and endpoint.secret_encrypted not in endpoint_page
    assert staff_client.get(f"{ENDPOINTS}add/").status_code == 403
    assert staff_client.post(f"{ENDPOINTS}{endpoint.pk}/delete/", {"post": "yes"}).status_code == 403
    assert WebhookEndpoint.objects.filter(pk=endpoint.pk).exists()


def _in_threads(count: int, target) -> list:
    barrier = threading.Barrier(count)
    results: list = []

    def run():
        try:
            barrier.wait()
            results.append(target())
        except Exception as exc:  # noqa: BLE001
            results.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=run) for _ in range(count)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    return results


@pytest.mark.django_db(transaction=True)
def test_a_due_delivery_reached_by_several_workers_at_once_is_sent_once(receiver, monkeypatch):
    partner = make_partner().partner
    register(partner, receiver.url())
    receiver.default = Reply(delay=0.3)
    monkeypatch.setattr(services, "delivery_enqueue", lambda **kwargs: True)  # the workers below send it
    [delivery] = services.notification_fan_out(order_notification(partner))
    results = _in_threads(4, lambda: sending.delivery_attempt(delivery_pk=delivery.pk))
    assert len(receiver.requests) == 1
    assert sum(1 for r in results if isinstance(r, WebhookAttempt)) == 1
    assert [r for r in results if isinstance(r, Exception)] == []
    assert WebhookAttempt.objects.filter(delivery=delivery).count() == 1


@pytest.mark.django_db(transaction=True)
def test_concurrent_registrations_never_pass_ten_endpoints(receiver):
    partner = make_partner().partner
    for i in range(8):
        register(partner, receiver.url(f"/{i}"))
    results = _in_threads(
        4,
        lambda: services.endpoint_create(
            partner_pk=partner.pk, livemode=True, url=receiver.url("/race"), event_types=["*"]
        ),
    )
    assert WebhookEndpoint.objects.filter(partner=partner).count() == 10
    assert sum(1 for r in results if isinstance(r, tuple)) == 2
