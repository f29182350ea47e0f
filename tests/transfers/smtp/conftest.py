"""Fixtures of the SMTP receiver's tests: a real receiver (aiosmtpd, the service's handler) on a free port of
127.0.0.1, test-mode orders made through the API, and the sandbox signer."""

from __future__ import annotations

import base64
import importlib
import smtplib
import sys
import types

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


def _fallback_sandbox_module() -> types.ModuleType:
    """Until the sandbox signer is part of the tree: the same interface, DKIM with a key made here
    (d=sandbox.invalid, s=sandbox), so the messages the tests send are really signed."""
    import dkim
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import rsa

    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    pem = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.TraditionalOpenSSL,
        serialization.NoEncryption(),
    )
    module = types.ModuleType("orders.transfers.sandbox")

    def sandbox_sign(raw: bytes) -> bytes:
        headers = [b"from", b"to", b"subject", b"date", b"message-id"]
        return dkim.sign(raw, b"sandbox", b"sandbox.invalid", pem, include_headers=headers) + raw

    public = key.public_key().public_bytes(
        serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo
    )
    module.sandbox_sign = sandbox_sign
    module.public_txt = b"v=DKIM1; k=rsa; p=" + base64.b64encode(public)
    return module


@pytest.fixture
def sandbox_signer(monkeypatch):
    """``orders.transfers.sandbox.sandbox_sign``: the service's own when present, else the local fallback."""
    try:
        module = importlib.import_module("orders.transfers.sandbox")
    except ImportError:
        module = _fallback_sandbox_module()
        monkeypatch.setitem(sys.modules, "orders.transfers.sandbox", module)
    return module.sandbox_sign


def pipeline_present() -> bool:
    try:
        importlib.import_module("orders.transfers.platforms")
        importlib.import_module("orders.transfers.auth")
        importlib.import_module("orders.transfers.sandbox")
    except ImportError:
        return False
    return True


def db_vendor() -> str:
    return connection.vendor
