"""Crash safety of the receiver as a real process (``manage.py inbound_smtp``, the production shape): killed
after a message is committed but before it answered 250, the sender's retry of the same bytes is stored and
published for processing once, nothing lost; SIGTERM lets a message being answered finish.

The window is opened by the receiver's test hook ``INBOUND_SMTP_TEST_HOLD_AFTER_STORE_SECONDS`` (it waits that
long after the commit before answering), never set in a deployment.
"""

from __future__ import annotations

import json
import signal
import smtplib
import sys
import threading

import pytest
import redis
from django.conf import settings

from orders.transfers.intake.services import PROCESS_TASK
from orders.transfers.models import InboundMessage
from tests.conftest import make_partner
from tests.faults.live import ROOT, free_port, production_env, wait_for
from tests.orders.factories import make_order

from .test_receiver import message_for

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def broker():
    client = redis.Redis.from_url(settings.CELERY_BROKER_URL)
    client.delete("celery")
    yield client
    client.delete("celery")


def published(client, message_pk: int) -> int:
    """How many times the processing of ``message_pk`` was published to the broker's ``celery`` queue."""
    count = 0
    for payload in client.lrange("celery", 0, -1):
        headers = json.loads(payload).get("headers", {})
        if headers.get("task") == PROCESS_TASK and headers.get("argsrepr") == f"({message_pk},)":
            count += 1
    return count


def receiver_process(processes, tmp_path, name: str, listen: str, hold: float = 0.0):  # noqa: F811
    env = production_env(
        PYTHONPATH=str(ROOT),
        DATA_DIR=str(tmp_path / "data"),
        INBOUND_SMTP_TEST_HOLD_AFTER_STORE_SECONDS=str(hold),
    )
    process = processes.spawn(name, [sys.executable, "manage.py", "inbound_smtp", "--listen", listen], env)
    host, port = listen.split(":")

    def listening() -> bool:
        try:
            smtplib.SMTP(host, int(port), timeout=2).quit()
        except OSError:
            return False
        return True

    assert wait_for(lambda: process.popen.poll() is not None or listening(), timeout=60), process.output()
    assert process.popen.poll() is None, process.output()
    return process


def send_in_thread(listen: str, recipient: str, raw: bytes) -> tuple[threading.Thread, dict]:
    host, port = listen.split(":")
    outcome: dict = {}

    def send() -> None:
        try:
            with smtplib.SMTP(host, int(port), timeout=60) as client:
                outcome["refused"] = client.sendmail("transfers@sandbox.invalid", [recipient], raw)
        except (smtplib.SMTPException, OSError) as exc:
            outcome["error"] = exc

    thread = threading.Thread(target=send, daemon=True)
    thread.start()
    return thread, outcome


def test_killed_after_the_commit_before_250_the_retry_is_stored_and_processed_once(
    processes,  # noqa: F811
    tmp_path,
    broker,
):
    order = make_order(make_partner().partner, status="awaiting_transfer")
    listen = f"127.0.0.1:{free_port()}"
    raw = message_for(order.transfer_address)
    first = receiver_process(processes, tmp_path, "inbound-1", listen, hold=120)
    thread, outcome = send_in_thread(listen, order.transfer_address, raw)
    assert wait_for(lambda: InboundMessage.objects.filter(recipient=order.transfer_address).exists(), 30)
    stored = InboundMessage.objects.get(recipient=order.transfer_address)
    assert wait_for(lambda: published(broker, stored.pk) == 1, 10), first.output()[-3000:]  # after its commit
    assert thread.is_alive() and not outcome  # committed, not yet answered
    first.kill(signal.SIGKILL)
    thread.join(30)
    assert isinstance(outcome.get("error"), smtplib.SMTPServerDisconnected | OSError), outcome

    # The sender never saw 250: it retries the same bytes with the receiver back.
    second = receiver_process(processes, tmp_path, "inbound-2", listen)
    thread, outcome = send_in_thread(listen, order.transfer_address, raw)
    thread.join(60)
    assert outcome == {"refused": {}}, outcome
    assert list(InboundMessage.objects.filter(recipient=order.transfer_address)) == [stored]
    assert published(broker, stored.pk) == 1  # the retry found the row: nothing published again
    assert wait_for(lambda: "(retry)" in second.output(), 10), second.output()


def test_sigterm_lets_the_message_being_answered_finish(processes, tmp_path, broker):  # noqa: F811
    order = make_order(make_partner().partner, status="awaiting_transfer")
    listen = f"127.0.0.1:{free_port()}"
    receiver = receiver_process(processes, tmp_path, "inbound", listen, hold=3)
    thread, outcome = send_in_thread(listen, order.transfer_address, message_for(order.transfer_address))
    assert wait_for(lambda: InboundMessage.objects.filter(recipient=order.transfer_address).exists(), 30)
    receiver.popen.send_signal(signal.SIGTERM)
    thread.join(30)
    assert outcome == {"refused": {}}, outcome
    assert receiver.popen.wait(timeout=30) == 0, receiver.output()
    assert "Inbound SMTP receiver stopped." in receiver.output()
