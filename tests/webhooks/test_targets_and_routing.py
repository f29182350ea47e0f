"""The SSRF guard (registration is in test_api.py; here: delivery, DNS, settings) and the webhooks queue."""

import ipaddress
import json
import socket
import subprocess
import sys
import time

import pytest
import redis
from django.conf import settings as django_settings

from config.celery import app as celery_app
from orders.webhooks import services, targets
from orders.webhooks.models import WebhookAttempt, WebhookDelivery
from tests.faults.live import ROOT, production_env

from .conftest import Reply, order_notification, register


@pytest.mark.parametrize(
    ("address", "public"),
    [
        ("93.184.215.14", True),
        ("2606:2800:21f:cb07:6820:80da:af6b:8b2c", True),
        ("127.0.0.1", False),
        ("10.0.0.1", False),
        ("172.16.5.4", False),
        ("192.168.1.1", False),
        ("100.64.0.1", False),  # carrier-grade NAT
        ("169.254.169.254", False),
        ("0.0.0.0", False),
        ("224.0.0.251", False),
        ("240.0.0.1", False),
        ("::1", False),
        ("::", False),
        ("fe80::1", False),
        ("fc00::1", False),
        ("ff02::1", False),
        ("::ffff:127.0.0.1", False),
        ("::ffff:10.0.0.1", False),
        ("2002:0a00:0001::1", False),  # 6to4 wrapping 10.0.0.1
        ("64:ff9b::a00:1", False),  # NAT64 (well-known prefix) of 10.0.0.1
        ("64:ff9b::7f00:1", False),  # NAT64 of 127.0.0.1
        ("64:ff9b::5db8:d70e", False),  # NAT64 of a public address: reached through the operator's translator
        ("64:ff9b:1::a9fe:a9fe", False),  # local-use NAT64 prefix
    ],
)
def test_address_is_public(address, public):
    assert targets.address_is_public(ipaddress.ip_address(address)) is public


@pytest.mark.django_db
def test_production_refuses_a_private_target_at_delivery(
    settings, partner, receiver, django_capture_on_commit_callbacks
):
    endpoint, _ = register(
        partner, receiver.url()
    )  # registered while allowed (or the DNS answer changed since)
    settings.WEBHOOK_ALLOW_PRIVATE_TARGETS = False
    with django_capture_on_commit_callbacks(execute=True):
        services.notification_fan_out(order_notification(partner))
    assert receiver.requests == []
    attempt = WebhookAttempt.objects.get()
    assert attempt.status == "retrying"
    assert attempt.error.startswith("not_allowed:")
    assert attempt.response_status is None


@pytest.mark.django_db
def test_a_delivery_connects_to_the_address_it_checked(
    monkeypatch, partner, receiver, django_capture_on_commit_callbacks
):
    """One DNS lookup per attempt: a second answer (rebinding to another address) is never used."""
    real = socket.getaddrinfo
    answers = []

    def fake_getaddrinfo(host, port, *args, **kwargs):
        if host == "hooks.partner.test":
            # First answer: the receiver; any later lookup would point somewhere else.
            ip = "127.0.0.1" if not answers else "192.0.2.1"
            answers.append(ip)
            return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", (ip, port))]
        return real(host, port, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", fake_getaddrinfo)
    endpoint, _ = register(partner, f"http://hooks.partner.test:{receiver.port}/hook")
    answers.clear()
    with django_capture_on_commit_callbacks(execute=True):
        services.notification_fan_out(order_notification(partner))
    assert answers == ["127.0.0.1"]
    [request] = receiver.requests
    assert request.headers["host"] == f"hooks.partner.test:{receiver.port}"
    assert WebhookDelivery.objects.get(endpoint=endpoint).state == "succeeded"


def _settings_of(env: dict[str, str]) -> dict:
    code = (
        "import django, json; django.setup(); from django.conf import settings as s; "
        "print(json.dumps([s.WEBHOOK_ALLOW_HTTP, s.WEBHOOK_ALLOW_PRIVATE_TARGETS, s.WEBHOOK_TIMEOUT_SECONDS]))"
    )
    env = {**env, "DJANGO_SETTINGS_MODULE": "config.settings"}
    out = subprocess.run(
        [sys.executable, "-c", code],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


@pytest.mark.django_db
def test_production_refuses_http_and_private_targets_by_default():
    assert _settings_of(production_env()) == [False, False, 10.0]


def test_development_allows_them():
    """`make run` (development, on its own PostgreSQL and Redis): the receivers of a first look listen on 127.0.0.1."""
    env = {k: v for k, v in __import__("os").environ.items() if k != "DJANGO_ENV"}
    assert _settings_of(env) == [True, True, 10.0]


def test_deliveries_are_routed_to_the_webhooks_queue_and_confirmations_are_not():
    router = celery_app.amqp.router
    send = router.route({}, "orders.webhooks.tasks.delivery_attempt", args=(1,))
    confirm = router.route({}, "orders.tasks.notifications_deliver", args=(1, ["payouts.confirmation"]))
    assert send["queue"].name == "webhooks"
    assert confirm["queue"].name == celery_app.conf.task_default_queue != "webhooks"


@pytest.mark.django_db(transaction=True)
def test_a_slow_endpoint_does_not_hold_up_the_order_side(partner, receiver):
    """The fan-out only publishes to the webhooks queue: with the receiver hanging past the timeout, the
    order side (which hands the notification over after its commit) is back at once, and nothing for the
    webhooks lands in the confirmations' queue."""
    client = redis.Redis.from_url(django_settings.REDIS_URL)
    client.delete("webhooks")
    receiver.default = Reply(delay=5)
    notification = order_notification(partner)
    register(partner, receiver.url())
    celery_app.conf.task_always_eager = False
    try:
        started = time.monotonic()
        services.notification_fan_out(notification)  # commits; the message is published on commit
        elapsed = time.monotonic() - started
        queued = client.llen("webhooks")
        in_default = [
            m for m in client.lrange(celery_app.conf.task_default_queue, 0, -1) if b"delivery_attempt" in m
        ]
    finally:
        celery_app.conf.task_always_eager = True
        client.delete("webhooks")
    # Waiting on the endpoint would take its 5 s; no request reached it, the attempt is on the webhooks queue.
    assert elapsed < 5
    assert queued == 1
    assert in_default == []
    assert receiver.requests == []
