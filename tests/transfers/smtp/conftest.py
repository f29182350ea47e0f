"""Fixtures of the SMTP receiver's tests: a real receiver (aiosmtpd, the service's handler) on a free port of
127.0.0.1, test-mode orders made through the API, and the sandbox signer."""

from __future__ import annotations

import smtplib

import pytest

from orders.transfers.intake.smtp import TransferMailController, TransferMailHandler
from tests.faults.live import free_port
from tests.transfers.e2e.conftest import dns, platform, platform_key  # noqa: F401  (fixtures)


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
    """``orders.transfers.testing.simulator.sandbox_sign``: the sandbox platform's signer, its key made on first use."""
    from orders.transfers.testing.simulator import sandbox_sign

    return sandbox_sign


@pytest.fixture
def waiting_orders(transactional_db, settings):
    """Makes test-mode orders through the API, confirmed (``awaiting_transfer``), for the sandbox platform's
    transfer e-mail (``tests.transfers.e2e.conftest.genuine``) or the ``ticketsexample`` platform's."""
    from orders.models import Order
    from tests.catalog.factories import RowFactory
    from tests.faults.live import wait_for
    from tests.testmode.conftest import api_order, client_for, make_partner_with_both_pairs

    settings.PAYMENT_PLATFORM = "sandbox"
    pairs = make_partner_with_both_pairs()
    clients = {False: client_for(pairs.test), True: client_for(pairs.live)}

    def make(*, quantity: int = 2, primary_site: str = "ticketmaster", live: bool = False, **form) -> Order:
        row = RowFactory(
            name="A",
            name_display="Row A",
            available_quantity=50,
            section__name="Lower 101",
            section__name_display="Section Lower 101",
            section__event__primary_site=primary_site,
        )
        data = api_order(clients[live], row, quantity=quantity, **form)
        order = Order.objects.select_related("event__venue", "partner").get(order_id=data["order_id"])
        assert wait_for(lambda: Order.objects.get(pk=order.pk).status == "awaiting_transfer", timeout=30)
        order.refresh_from_db()
        return order

    return make


def smtp_send(receiver, raw: bytes, recipients: list[str], *, mail_from: str = "transfers@sandbox.invalid"):
    """One SMTP transaction to the receiver: (the DATA reply's code, its text), or the RCPT refusal's."""
    with smtp_client(f"127.0.0.1:{receiver.port}") as client:
        client.ehlo("mx.sandbox.invalid")
        client.mail(mail_from)
        for address in recipients:
            code, text = client.rcpt(address)
            if code != 250:
                return code, text
        return client.data(raw)
