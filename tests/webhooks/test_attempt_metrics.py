"""buyback_webhook_attempts_total{outcome}: each recorded attempt counts once, under its outcome."""

import socket

import pytest

from config.core.metrics import WEBHOOK_ATTEMPTS
from orders.webhooks import services

from .conftest import Reply, order_notification, register

pytestmark = pytest.mark.django_db


def counts() -> dict[str, float]:
    return {
        o: WEBHOOK_ATTEMPTS.labels(outcome=o)._value.get()
        for o in ("succeeded", "failed", "timeout", "refused")
    }


def attempt(partner, url, capture) -> dict[str, float]:
    register(partner, url)
    before = counts()
    with capture(execute=True):
        services.notification_fan_out(order_notification(partner))
    after = counts()
    return {o: after[o] - before[o] for o in after}


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]  # closed again when this returns: a connection is refused


def test_a_2xx_counts_as_succeeded(partner, receiver, django_capture_on_commit_callbacks):
    assert attempt(partner, receiver.url(), django_capture_on_commit_callbacks) == {
        "succeeded": 1, "failed": 0, "timeout": 0, "refused": 0,
    }  # fmt: skip


def test_a_500_counts_as_failed(partner, receiver, django_capture_on_commit_callbacks):
    receiver.reply(Reply(status=500))
    assert attempt(partner, receiver.url(), django_capture_on_commit_callbacks) == {
        "succeeded": 0, "failed": 1, "timeout": 0, "refused": 0,
    }  # fmt: skip


def test_a_slow_answer_counts_as_timeout(settings, partner, receiver, django_capture_on_commit_callbacks):
    settings.WEBHOOK_TIMEOUT_SECONDS = 0.5
    receiver.reply(Reply(status=200, delay=2))
    assert attempt(partner, receiver.url(), django_capture_on_commit_callbacks) == {
        "succeeded": 0, "failed": 0, "timeout": 1, "refused": 0,
    }  # fmt: skip


def test_a_refused_connection_counts_as_refused(partner, django_capture_on_commit_callbacks):
    url = f"http://127.0.0.1:{closed_port()}/hook"
    assert attempt(partner, url, django_capture_on_commit_callbacks) == {
        "succeeded": 0, "failed": 0, "timeout": 0, "refused": 1,
    }  # fmt: skip
