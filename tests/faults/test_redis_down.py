"""Redis dies while the web process serves, then comes back (production shape: gunicorn, Redis as cache,
rate-limit store and Celery broker).

Redis is reached through a proxy that closes its port and resets every open connection: what the web
process sees when Redis crashes. The shared Redis server itself keeps running for everyone else.
"""

from datetime import timedelta
from urllib.parse import urlsplit

import pytest
import time_machine
from django.conf import settings
from django.core import mail
from django.utils import timezone

from orders import tasks as order_tasks
from orders.models import Order
from partners import services as partner_services
from payouts import tasks
from payouts.models import Charge

from .conftest import ORDER_FORM, quote_body
from .live import TcpProxy, http, production_env, redis_url_via

pytestmark = pytest.mark.django_db(transaction=True)

RATE_HEADERS = ("RateLimit-Limit", "RateLimit-Remaining", "RateLimit-Reset")
# Socket timeouts are 0.5 s for the cache and about a second for a publish; a request that needs them
# all during an outage must still answer within a few seconds.
PROMPT = 5.0


@pytest.fixture
def redis_proxy(settings):
    if not settings.REDIS_URL:
        pytest.fail("this test needs REDIS_URL (make test sets it)")
    target = urlsplit(settings.REDIS_URL)
    proxy = TcpProxy((target.hostname or "127.0.0.1", target.port or 6379))
    proxy.up()
    via = redis_url_via(proxy.port)
    # The test process reaches Redis through the same proxy, so it lives through the same outage.
    direct = settings.CACHES
    settings.CACHES = {**direct, "default": {**direct["default"], "LOCATION": via}}
    yield proxy, via
    settings.CACHES = direct  # before the proxy goes: the test teardown clears the cache
    proxy.down()


def _token(url: str, creds):
    return http(
        "POST",
        url + "/v1/auth/token",
        json_body={
            "client_id": creds.client_id,
            "client_secret": creds.client_secret,
            "grant_type": "client_credentials",
        },
    )


def test_redis_dying_while_serving_degrades_and_loses_nothing(processes, redis_proxy, row, creds):
    proxy, via = redis_proxy
    url = processes.web(production_env(REDIS_URL=via))
    token = _token(url, creds)
    assert token.status == 200 and all(h in token.headers for h in RATE_HEADERS)
    old_auth = {"Authorization": f"Bearer {token.body['data']['access_token']}"}
    before = http("GET", url + "/v1/events", headers=old_auth)
    assert before.status == 200 and before.headers["RateLimit-Limit"] == str(settings.RATE_LIMIT_PER_MINUTE)
    event_id = row.section.event.event_id

    proxy.down()

    # The token endpoint still answers; the limiter fails open (no counting, so no RateLimit headers).
    token = _token(url, creds)
    assert token.status == 200, token.body
    assert token.seconds < PROMPT
    assert not any(h in token.headers for h in RATE_HEADERS)
    auth = {"Authorization": f"Bearer {token.body['data']['access_token']}"}

    # The catalog answers from the database.
    for path in (
        "/v1/events",
        f"/v1/events/{event_id}/sections",
        f"/v1/events/{event_id}/sections/Lower%20101/rows",
    ):
        reply = http("GET", url + path, headers=auth)
        assert reply.status == 200, (path, reply.body)
        assert reply.seconds < PROMPT, (path, reply.seconds)
        assert not any(h in reply.headers for h in RATE_HEADERS)
    listed = http("GET", url + "/v1/events", headers=auth).body["data"]["results"]
    assert [e["event_id"] for e in listed] == [event_id]

    # Quotes and orders are still taken; the confirmation cannot be published, and is not lost.
    quote = http("POST", url + "/v1/quotes", json_body=quote_body(row), headers=auth)
    assert quote.status == 201, quote.body
    order = http(
        "POST",
        url + "/v1/orders",
        form={"quote_id": quote.body["data"]["quote_id"], **ORDER_FORM},
        headers=auth,
    )
    assert order.status == 201, order.body
    assert order.seconds < PROMPT, order.seconds
    created = Order.objects.get(order_id=order.body["data"]["order_id"])
    assert created.status == Order.Status.ACCEPTED and created.confirmation_started_at is None

    # The token cache falls back to the database: a session revoked during the outage is refused at once.
    rotated = partner_services.credentials_rotate(partner=creds.partner)
    refused = http("GET", url + "/v1/events", headers=old_auth)
    assert refused.status == 401 and refused.code == "UNAUTHORIZED", refused.body

    proxy.up()

    # Back to normal: counted again, and the revoked token stays refused.
    fresh = _token(url, rotated)
    assert fresh.status == 200 and all(h in fresh.headers for h in RATE_HEADERS)
    still_refused = http("GET", url + "/v1/events", headers=old_auth)
    assert still_refused.status == 401 and still_refused.code == "UNAUTHORIZED", still_refused.body

    # The sweepers publish what never left: the confirmation, and the order.created notification (whose
    # delivery to the confirmation then finds the work done). It runs once: one charge, one e-mail.
    later = timezone.now() + timedelta(seconds=settings.ORDER_CONFIRMATION_GRACE_SECONDS + 30)
    with time_machine.travel(later, tick=False):
        assert tasks.orders_requeue_unconfirmed() == 1
        assert tasks.orders_requeue_unconfirmed() == 0
        assert order_tasks.notifications_dispatch_pending() == 1
        assert order_tasks.notifications_dispatch_pending() == 0
    created.refresh_from_db()
    assert created.status == Order.Status.AWAITING_TRANSFER
    assert Charge.objects.filter(order=created).count() == 1
    assert [m.to for m in mail.outbox] == [["seller@faulty.example"]]
