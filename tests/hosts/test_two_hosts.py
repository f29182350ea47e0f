"""Two hosts, one of them killed: two copies of the Procfile shape (ports, runtime and metrics directories of
their own) against one PostgreSQL, one Redis and one S3 (moto's server), the partner flow sent to both, pdf orders
included; one host's every process SIGKILLed mid-flow. Then every order that got its 201 is confirmed exactly
once, each pdf order's ticket file checked, every notification delivered (a repeat carries the same
webhook-id, so the partner's de-duplication holds), one payout per paid order; and Prometheus saw both hosts'
targets up until the kill, the killed host's down after it."""

from __future__ import annotations

import json
import subprocess
import time
import urllib.request
import uuid
from collections import Counter

import pytest

from bench.ticket_files import ticket_pdf
from orders.models import Notification, Order, OrderStatusHistory
from orders.transfers.models import TicketFileCheck
from payouts.models import Charge, Payout
from tests.faults.conftest import ORDER_FORM, quote_body
from tests.faults.live import BIN, ROOT, bearer_auth, free_port, http, wait_for
from tests.ops.shape import ROLES, Host, host_env, own_queues, poll, prometheus_config, start_prometheus
from tests.transfers.files.helpers import codes
from tests.webhooks.conftest import Receiver

pytestmark = pytest.mark.django_db(transaction=True)

TOKEN = "two-hosts-scrape-token"
RECEIVE = """
import sys, django
django.setup()
from orders.models import Order
from orders.transfers.decision.state import order_receive
for order_id in sys.argv[1:]:
    order_receive(order=Order.objects.get(order_id=order_id), source="staff", actor="staff:hosts",
                  reason="Ticket received", accepted=True)
"""
ORDERS_PER_HOST = 4


@pytest.fixture
def endpoint():
    server = Receiver()
    server.thread.start()
    yield server
    server.server.shutdown()
    server.server.server_close()


def post_pdf_order(url: str, auth: dict[str, str], quote_id: str, pdf: bytes):
    boundary = "----hosts" + uuid.uuid4().hex
    fields = {"quote_id": quote_id, "delivery_type": "pdf", "is_ready_to_deliver": "true"}
    body = b"".join(
        f'--{boundary}\r\nContent-Disposition: form-data; name="{k}"\r\n\r\n{v}\r\n'.encode() for k, v in fields.items()
    ) + (
        f'--{boundary}\r\nContent-Disposition: form-data; name="file"; filename="tickets.pdf"\r\n'
        "Content-Type: application/pdf\r\n\r\n"
    ).encode() + pdf + f"\r\n--{boundary}--\r\n".encode()  # fmt: skip
    request = urllib.request.Request(
        url + "/v1/orders",
        data=body,
        method="POST",
        headers={**auth, "Content-Type": f"multipart/form-data; boundary={boundary}"},
    )
    with urllib.request.urlopen(request, timeout=30) as response:  # noqa: S310
        return response.status, json.loads(response.read())


def test_two_hosts_one_killed_mid_flow_lose_nothing_and_repeat_nothing(
    processes, tmp_path, creds, row, endpoint
):
    import boto3

    s3_port = free_port()
    processes.spawn("s3", [str(BIN / "moto_server"), "-H", "127.0.0.1", "-p", str(s3_port)], {})
    s3_url = f"http://127.0.0.1:{s3_port}"
    assert wait_for(lambda: _answers(s3_url), timeout=30)
    bucket = f"tickets-{uuid.uuid4().hex[:8]}"
    aws = {"AWS_ACCESS_KEY_ID": "test", "AWS_SECRET_ACCESS_KEY": "test", "AWS_S3_REGION_NAME": "us-east-1"}
    boto3.client("s3", endpoint_url=s3_url, region_name="us-east-1", aws_access_key_id="test",
                 aws_secret_access_key="test").create_bucket(Bucket=bucket)  # fmt: skip
    shared = {
        **aws,
        "AWS_STORAGE_BUCKET_NAME": bucket,
        "AWS_S3_ENDPOINT_URL": s3_url,
        "CACHE_KEY_PREFIX": f"hosts-{uuid.uuid4().hex[:8]}",
        "ORDER_CONFIRMATION_GRACE_SECONDS": "5",
        "ORDER_CONFIRMATION_STALE_SECONDS": "30",
        "NOTIFICATION_DISPATCH_GRACE_SECONDS": "5",
        # A delivery message held by a killed worker is published again after this (not 10 minutes).
        "NOTIFICATION_REDISPATCH_SECONDS": "20",
        "PAYOUTS_PROGRESS_INTERVAL_SECONDS": "2",
        "SANDBOX_PAYOUT_SCHEDULE_AFTER_SECONDS": "1",
        "SANDBOX_PAYOUT_PAID_AFTER_SECONDS": "2",
        "BEAT_LEADER_LOCK_SECONDS": "10",
    }
    queues = own_queues()
    hosts = []
    for name in ("host-a", "host-b"):
        env, ports = host_env(name, tmp_path, token=TOKEN, queues=queues, **shared)
        env.pop("MEDIA_SHARED")  # files in S3: the way for several hosts
        env["STATIC_ROOT"] = str(tmp_path / name / "static")
        hosts.append(Host(name, processes, env, ports))
    a, b = hosts
    for host in hosts:
        host.start()
    for host in hosts:
        host.wait_serving()

    prometheus = start_prometheus(processes, prometheus_config(tmp_path, hosts, TOKEN))

    def health() -> dict[str, str]:
        return {t["labels"]["instance"]: t["health"] for t in prometheus.targets()}

    a_targets, b_targets = set(a.targets().values()), set(b.targets().values())
    poll(
        lambda: set(health().values()) == {"up"} and len(health()) == 2 * len(ROLES),
        90,
        "targets",
        lambda: str(health()),
    )

    https = {"X-Forwarded-Proto": "https", "X-Forwarded-For": "198.51.100.7"}

    auths = {host.name: bearer_auth(host.url, creds, https) for host in hosts}
    hook = http("POST", a.url + "/v1/webhook_endpoints", json_body={"url": endpoint.url("/hooks"), "event_types": ["*"]}, headers=auths["host-a"])  # fmt: skip
    assert hook.status == 201, hook.body

    placed: dict[str, str] = {}  # order id -> delivery type

    def place(host: Host, index: int) -> None:
        auth = auths[host.name]
        quote = http("POST", host.url + "/v1/quotes", json_body=quote_body(row), headers=auth)
        assert quote.status == 201, quote.body
        quote_id = quote.body["data"]["quote_id"]
        if index % 2:
            status, body = post_pdf_order(
                host.url, auth, quote_id, ticket_pdf(codes(1, prefix=f"{host.name[-1].upper()}{len(placed)}"))
            )
            kind = "pdf"
        else:
            reply = http(
                "POST", host.url + "/v1/orders", form={"quote_id": quote_id, **ORDER_FORM}, headers=auth
            )
            status, body, kind = reply.status, reply.body, "mobile_transfer"
        assert status == 201, body
        placed[body["data"]["order_id"]] = kind

    for index in range(ORDERS_PER_HOST):
        place(a, index)
        place(b, index)
    a.kill()  # the machine dies: every process of host A at once, mid-flow
    killed_at = time.time()
    for index in range(ORDERS_PER_HOST):
        place(b, index)

    def confirmed() -> bool:
        return not Order.objects.filter(order_id__in=placed, status="accepted").exists()

    poll(confirmed, 300, "an order stayed unconfirmed", b.logs)
    orders = {o.order_id: o for o in Order.objects.filter(order_id__in=placed)}
    for order_id, order in orders.items():
        # Confirmed exactly once: one charge, one move out of accepted.
        assert Charge.objects.filter(order=order).count() == 1, order_id
        assert OrderStatusHistory.objects.filter(order=order, from_status="accepted").count() == 1, order_id
    pdf_orders = [orders[i] for i, kind in placed.items() if kind == "pdf"]
    poll(lambda: all(TicketFileCheck.objects.filter(order=o).exists() for o in pdf_orders), 180, "a ticket file was never checked", b.logs)  # fmt: skip

    # The mobile transfers arrive at staff; their payouts go through on host B.
    mobile = [orders[i] for i, kind in placed.items() if kind == "mobile_transfer"]
    # Staff record them on host B (a process of the deployment, with its keys: the notifications it writes go out
    # through B's workers).
    received_by_staff = subprocess.run(  # noqa: S603
        [str(BIN / "python"), "-c", RECEIVE, *[o.order_id for o in mobile]],
        cwd=ROOT, env={**b.env, "DJANGO_SETTINGS_MODULE": "config.settings"}, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert received_by_staff.returncode == 0, received_by_staff.stderr[-3000:]
    poll(lambda: Order.objects.filter(pk__in=[o.pk for o in mobile], status="paid").count() == len(mobile), 240, "an order was never paid", b.logs)  # fmt: skip
    for order in mobile:
        assert Payout.objects.filter(order=order).count() == 1, order.order_id

    expected = set(
        Notification.objects.filter(partner=creds.partner).values_list("notification_id", flat=True)
    )
    received = lambda: Counter(json.loads(r.body)["id"] for r in endpoint.requests)  # noqa: E731
    poll(
        lambda: set(received()) >= expected,
        240,
        "a notification was never delivered",
        lambda: str(expected - set(received())),
    )
    ids: dict[str, set[str]] = {}
    for request in endpoint.requests:
        ids.setdefault(json.loads(request.body)["id"], set()).add(request.headers["webhook-id"])
    assert all(len(webhook_ids) == 1 for webhook_ids in ids.values()), ids
    repeated = {k: v for k, v in received().items() if v > 1}
    print(f"{len(placed)} orders, {len(expected)} notifications, repeated deliveries: {repeated}")

    # Both hosts were scraped until the kill; then A's targets are down and B's still up.
    poll(
        lambda: all(health()[t] == "down" for t in a_targets),
        60,
        "A's targets stayed up",
        lambda: str(health()),
    )
    assert all(health()[t] == "up" for t in b_targets), health()
    window = f"{int(time.time() - killed_at) + 60}s"
    for target in a_targets | b_targets:
        seen = prometheus.value(f'max_over_time(up{{instance="{target}"}}[{window}])')
        assert seen == 1, (target, seen)


def _answers(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=2):  # noqa: S310
            return True
    except Exception:
        return False
