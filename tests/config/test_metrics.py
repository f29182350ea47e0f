"""GET /metrics: who may read it, what it shows after the partner flow, and that no label carries an id."""

import re

import pytest
from django.conf import settings
from prometheus_client.parser import text_string_to_metric_families

from orders.models import Order
from tests.orders.factories import order_row

pytestmark = pytest.mark.django_db

BUYBACK_METRICS = {
    "buyback_orders_created",
    "buyback_order_transitions",
    "buyback_outbox_pending",
    "buyback_outbox_oldest_age_seconds",
    "buyback_webhook_attempts",
    "buyback_task_queue_length",
    "buyback_payouts",
    "buyback_staff_queue",
}
ID_IN_LABEL = re.compile(r"\b(ord|ptn|whe|evt|qte|ntf|req|pay|dlv|cli)_[A-Za-z0-9]{6,}")


def scrape(client, **headers):
    return client.get("/metrics", REMOTE_ADDR="127.0.0.1", **headers)


def families(body: str) -> dict:
    return {family.name: family for family in text_string_to_metric_families(body)}


def sample_value(family, **labels) -> float:
    for sample in family.samples:
        if sample.name.endswith("_created"):
            continue
        if all(sample.labels.get(k) == v for k, v in labels.items()):
            return sample.value
    raise AssertionError(f"no sample of {family.name} with {labels}")


def partner_flow(client, django_capture_on_commit_callbacks) -> dict:
    row = order_row(available_quantity=10)
    body = {
        "event_id": row.section.event.event_id,
        "section_name": row.section.name,
        "row_name": row.name,
        "quantity": 2,
    }
    quote = client.post("/v1/quotes", body, format="json")
    assert quote.status_code == 201, quote.content
    with django_capture_on_commit_callbacks(execute=True):
        order = client.post(
            "/v1/orders",
            {
                "quote_id": quote.json()["data"]["quote_id"],
                "delivery_type": "mobile_transfer",
                "is_ready_to_deliver": "true",
            },
        )
    assert order.status_code == 201, order.content
    order_id = order.json()["data"]["order_id"]
    assert client.get(f"/v1/orders/{order_id}").status_code == 200
    return order.json()["data"]


def test_metrics_after_the_partner_flow_show_http_histograms_and_every_buyback_metric(
    auth_client, client, django_capture_on_commit_callbacks
):
    before = families(scrape(client).content.decode())
    created_before = sample_value(before["buyback_orders_created"])

    order = partner_flow(auth_client, django_capture_on_commit_callbacks)

    response = scrape(client)
    assert response.status_code == 200
    assert response["Content-Type"].startswith("text/plain")
    found = families(response.content.decode())
    assert set(found) >= BUYBACK_METRICS, BUYBACK_METRICS - set(found)
    assert sample_value(found["buyback_orders_created"]) == created_before + 1
    assert Order.objects.filter(order_id=order["order_id"]).exists()
    for outcome in ("succeeded", "failed", "timeout", "refused"):
        sample_value(found["buyback_webhook_attempts"], outcome=outcome)
    assert sample_value(found["buyback_payouts"], status="pending") >= 0
    assert sample_value(found["buyback_outbox_pending"]) >= 0
    # One sample per declared queue, in both shapes (0 in the embedded default: tasks run in-process).
    from config.celery import QUEUES

    queues = {s.labels["queue"]: s.value for s in found["buyback_task_queue_length"].samples}
    assert set(queues) == set(QUEUES)
    if not settings.REDIS_URL:
        assert set(queues.values()) == {0}
    # HTTP: latency histograms by route (the URL pattern), database timings.
    latency = found["django_http_requests_latency_seconds_by_view_method"]
    routes = {sample.labels["view"] for sample in latency.samples}
    assert "v1/orders" in routes and "v1/quotes" in routes
    assert "v1/orders/<str:order_id>" in routes or any("order_id" in route for route in routes)
    assert any(s.name.endswith("_bucket") for s in latency.samples)
    assert "django_db_query_duration_seconds" in found
    responses = found["django_http_responses_total_by_status_view_method"]
    assert {("201", "v1/orders", "POST"), ("201", "v1/quotes", "POST")} <= {
        (sample.labels["status"], sample.labels["view"], sample.labels["method"])
        for sample in responses.samples
    }


def test_no_metric_label_carries_an_id(auth_client, client, django_capture_on_commit_callbacks):
    order = partner_flow(auth_client, django_capture_on_commit_callbacks)
    body = scrape(client).content.decode()
    assert order["order_id"] not in body
    for family in text_string_to_metric_families(body):
        for sample in family.samples:
            for value in sample.labels.values():
                assert not ID_IN_LABEL.search(value), (sample.name, value)


def test_a_transition_is_counted_by_status_and_reason(client, django_capture_on_commit_callbacks, partner):
    from orders.services import order_cancel
    from tests.orders.conftest import create_order

    with django_capture_on_commit_callbacks(execute=True):
        order = create_order(partner)
    before = families(scrape(client).content.decode())
    family = before.get("buyback_order_transitions")
    previous = 0.0
    if family is not None:
        try:
            previous = sample_value(family, to_status="canceled", reason="canceled_by_partner")
        except AssertionError:
            previous = 0.0
    with django_capture_on_commit_callbacks(execute=True):
        order_cancel(order=order, actor="test")
    found = families(scrape(client).content.decode())
    counted = sample_value(
        found["buyback_order_transitions"], to_status="canceled", reason="canceled_by_partner"
    )
    assert counted == previous + 1


def test_a_test_mode_order_is_not_counted(client, django_capture_on_commit_callbacks, partner):
    from tests.orders.conftest import create_order
    from tests.orders.factories import order_row as row_factory
    from tests.quotes.factories import QuoteFactory, quote_token

    before = sample_value(families(scrape(client).content.decode())["buyback_orders_created"])
    row = row_factory(available_quantity=10)
    quote = QuoteFactory(partner=partner, row=row, quantity=1, livemode=False)
    with django_capture_on_commit_callbacks(execute=True):
        create_order(partner, row=row, quote_id=quote_token(quote), livemode=False)
    after = sample_value(families(scrape(client).content.decode())["buyback_orders_created"])
    assert after == before


def test_a_request_through_a_proxy_gets_the_ordinary_404(client):
    for header in ("HTTP_X_FORWARDED_FOR", "HTTP_FORWARDED", "HTTP_X_REAL_IP"):
        response = scrape(client, **{header: "203.0.113.9"})
        assert response.status_code == 404, header
        assert b"buyback_" not in response.content
    unknown = client.get("/no-such-page", REMOTE_ADDR="127.0.0.1")
    proxied = scrape(client, HTTP_X_FORWARDED_FOR="127.0.0.1")
    assert proxied["Content-Type"] == unknown["Content-Type"]


def test_a_request_from_another_address_gets_404(client):
    assert client.get("/metrics", REMOTE_ADDR="10.0.0.7").status_code == 404
    assert client.get("/metrics", REMOTE_ADDR="::1").status_code == 200


def test_with_a_metrics_token_only_the_right_bearer_reads_the_metrics(client, settings):
    settings.METRICS_TOKEN = "scrape-token-0123456789"
    assert scrape(client, HTTP_AUTHORIZATION="Bearer scrape-token-0123456789").status_code == 200
    assert scrape(client).status_code == 404
    assert scrape(client, HTTP_AUTHORIZATION="Bearer wrong-token").status_code == 404
    assert scrape(client, HTTP_AUTHORIZATION="Basic scrape-token-0123456789").status_code == 404
    # The token works through a proxy too: it is the only door then.
    proxied = client.get(
        "/metrics",
        REMOTE_ADDR="10.0.0.7",
        HTTP_X_FORWARDED_FOR="203.0.113.9",
        HTTP_AUTHORIZATION="Bearer scrape-token-0123456789",
    )
    assert proxied.status_code == 200


def test_the_gauges_are_cached_between_scrapes(client, django_assert_max_num_queries):
    scrape(client)  # computes and caches
    with django_assert_max_num_queries(0):
        assert scrape(client).status_code == 200


def test_an_undispatched_notification_shows_in_the_outbox_gauges(client, partner):
    from datetime import timedelta

    from django.utils import timezone

    from orders.models import Notification

    Notification.objects.create(
        partner=partner,
        type=Notification.Type.WEBHOOK_PING,
        payload={},
        created_at=timezone.now() - timedelta(minutes=10),
    )
    found = families(scrape(client).content.decode())
    assert sample_value(found["buyback_outbox_pending"]) >= 1
    assert sample_value(found["buyback_outbox_oldest_age_seconds"]) >= 590


@pytest.mark.django_db(transaction=True)
def test_statement_timing_survives_a_connection_opened_inside_another_execute_wrapper():
    """A new thread's first statement opens its connection inside a request's ``execute_wrapper`` block (as
    the lost-connection retry wraps every request): that block's wrapper leaves, the timing stays."""
    import threading

    from django.db import connection

    from config.core.metrics import _timed_execute

    seen, wrappers = [], []

    def watcher(execute, sql, params, many, context):
        seen.append(sql)
        return execute(sql, params, many, context)

    def first_request_of_a_thread() -> None:
        try:
            with connection.execute_wrapper(watcher), connection.cursor() as cursor:
                cursor.execute("SELECT 1")
            wrappers.extend(connection.execute_wrappers)
        finally:
            connection.close()

    thread = threading.Thread(target=first_request_of_a_thread)
    thread.start()
    thread.join()
    assert seen
    assert wrappers == [_timed_execute]


def test_a_failing_gauge_query_leaves_the_rest_of_the_scrape_answering(client, monkeypatch):
    from payouts.backoffice import metrics as gauges

    def broken():
        raise RuntimeError("database unavailable")

    monkeypatch.setattr(gauges, "gauges_compute", broken)
    response = scrape(client)
    assert response.status_code == 200
    found = families(response.content.decode())
    assert "buyback_orders_created" in found
    assert "buyback_payouts" not in found
