"""A real Prometheus scrapes the Procfile shape: every line of the Procfile, as written, under
DJANGO_ENV=production (nginx, gunicorn, the three workers, beat, the inbound receiver), the partner flow with a
webhook endpoint that fails, then Debian's prometheus with the shipped configuration. Through its HTTP API:
every target up, and the counters that the web process (orders created), the worker's pool (the confirmation's
transition) and the webhooks worker (the failed attempts) count, all above zero."""

from __future__ import annotations

import subprocess

import pytest

from tests.faults.conftest import ORDER_FORM, quote_body
from tests.faults.live import bearer_auth, http
from tests.webhooks.conftest import Receiver, Reply

from .shape import (
    ROLES,
    Host,
    host_env,
    https,
    own_queues,
    poll,
    procfile,
    prometheus_config,
    start_prometheus,
)

pytestmark = pytest.mark.django_db(transaction=True)

TOKEN = "scrape-token-of-the-prometheus-test"


@pytest.fixture
def failing_endpoint():
    """A partner's webhook endpoint that answers every delivery with a 500."""
    server = Receiver()
    server.default = Reply(status=500, body=b"down for maintenance")
    server.thread.start()
    yield server
    server.server.shutdown()
    server.server.server_close()


def test_prometheus_scrapes_every_procfile_process_and_reads_the_counters_of_the_flow(
    processes, tmp_path, creds, row, failing_endpoint
):
    env, ports = host_env("host-a", tmp_path, token=TOKEN, queues=own_queues())
    release = subprocess.run(  # noqa: S603 - the Procfile's own line
        ["/bin/sh", "-c", f"exec {procfile()['release']}"],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert release.returncode == 0, release.stderr[-3000:]
    host = Host("host-a", processes, env, ports)
    host.start()
    host.wait_serving()
    url = host.url

    # Production redirects plain HTTP to https, but never /metrics: a scraper holding the token reads it
    # over plain HTTP through nginx; without the token it is the ordinary 404.
    assert http("GET", url + "/v1/events").status == 301
    assert http("GET", url + "/metrics", headers={"Authorization": f"Bearer {TOKEN}"}).status == 200
    assert http("GET", url + "/metrics").status == 404
    for role in ("worker", "beat", "inbound"):
        exporter = f"http://127.0.0.1:{ports[role]}/metrics"
        assert http("GET", exporter).status == 404
        assert http("GET", exporter, headers={"Authorization": "Bearer wrong"}).status == 404

    auth = bearer_auth(url, creds, https())
    endpoint = http(
        "POST",
        url + "/v1/webhook_endpoints",
        json_body={"url": failing_endpoint.url("/hooks"), "event_types": ["*"]},
        headers=auth,
    )
    assert endpoint.status == 201, endpoint.body
    quote = http("POST", url + "/v1/quotes", json_body=quote_body(row), headers=auth)
    assert quote.status == 201, quote.body
    order = http("POST", url + "/v1/orders", form={"quote_id": quote.body["data"]["quote_id"], **ORDER_FORM}, headers=auth)  # fmt: skip
    assert order.status == 201, order.body
    order_id = order.body["data"]["order_id"]

    def confirmed() -> bool:
        return (
            http("GET", url + f"/v1/orders/{order_id}", headers=auth).body["data"]["status"]
            == "awaiting_transfer"
        )

    poll(confirmed, 90, "the worker never confirmed the order", host.logs)
    poll(
        lambda: len(failing_endpoint.requests) >= 1, 90, "no webhook attempt reached the endpoint", host.logs
    )

    prometheus = start_prometheus(processes, prometheus_config(tmp_path, [host], TOKEN))

    def every_target_up() -> bool:
        targets = prometheus.targets()
        return len(targets) == len(ROLES) and all(t["health"] == "up" for t in targets)

    poll(every_target_up, 60, "not every target is up", lambda: str(prometheus.targets()))
    assert {t["labels"]["process"] for t in prometheus.targets()} == set(ROLES)

    counters = {
        "orders created (web)": "sum(buyback_orders_created_total)",
        "confirmed to awaiting_transfer (worker)": 'sum(buyback_order_transitions_total{to_status="awaiting_transfer"})',
        "failed webhook attempts (webhooks)": 'sum(buyback_webhook_attempts_total{outcome="failed"})',
    }  # fmt: skip

    def all_counted() -> bool:
        return all(prometheus.value(expr) > 0 for expr in counters.values())

    poll(
        all_counted,
        60,
        "a counter stayed at zero",
        lambda: str({k: prometheus.value(e) for k, e in counters.items()}),
    )
    # Each is counted where the work happens: the transition in the worker, the attempt in the webhooks worker.
    assert (
        prometheus.value(
            'sum(buyback_order_transitions_total{process="worker",to_status="awaiting_transfer"})'
        )
        > 0
    )
    assert prometheus.value('sum(buyback_webhook_attempts_total{process="webhooks",outcome="failed"})') > 0
    # The gauges come once, from the web process only.
    assert prometheus.value("count(buyback_outbox_pending)") == 1
    assert prometheus.value('count(buyback_outbox_pending{process="web"})') == 1
