"""Fixtures of the SMTP receiver's tests: a real receiver (aiosmtpd, the service's handler) on a free port of
127.0.0.1, test-mode orders made through the API, and the sandbox signer."""

from __future__ import annotations

import smtplib

import pytest
from django.db import connection

from orders.transfers.smtp import TransferMailController, TransferMailHandler
from tests.faults.live import free_port


@pytest.fixture
def receiver(settings, transactional_db):
    """The receiver in this process (its database threads use their own connections, so the tests' data
    is committed: transactional_db). ``INBOUND_SMTP_LISTEN`` points at it."""
    port = free_port()
    handler = TransferMailHandler(threads=2)
    controller = TransferMailController(handler, "127.0.0.1", port)
    controller.start()
    settings.INBOUND_SMTP_LISTEN = f"127.0.0.1:{port}"
    yield controller
    controller.stop()
    handler.close()


def smtp_client(listen: str) -> smtplib.SMTP:
    host, _, port = listen.rpartition(":")
    return smtplib.SMTP(host, int(port), timeout=30)


@pytest.fixture
def sandbox_signer():
    """``orders.transfers.sandbox.sandbox_sign``: the sandbox platform's signer, its key made on first use."""
    from orders.transfers.sandbox import sandbox_sign

    return sandbox_sign


def db_vendor() -> str:
    return connection.vendor
