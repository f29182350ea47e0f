"""Test mode's simulated transfer (docs/partners/test-mode.md "Simulating the ticket transfer"): the sandbox
platform's e-mail composed in its fixed format, DKIM-signed, sent over SMTP through the real receiver, by
``POST /v1/test/orders/{order_id}/simulate_transfer`` and by ``manage.py send_test_transfer``."""

from __future__ import annotations

import email
import hashlib
import subprocess
import sys

import dkim
import pytest
from django.core.management import CommandError, call_command

from orders.models import Order
from orders.transfers.intake.selectors import raw_read
from orders.transfers.models import InboundMessage
from orders.transfers.testing.mail_compose import compose_sandbox_transfer
from tests.conftest import assert_error
from tests.faults.live import ROOT, free_port, production_env
from tests.testmode.conftest import api_order, client_for, make_partner_with_both_pairs
from tests.testmode.test_orders import advance

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def pairs(transactional_db):
    return make_partner_with_both_pairs()


@pytest.fixture
def test_client(pairs):
    return client_for(pairs.test)


@pytest.fixture
def live_client(pairs):
    return client_for(pairs.live)


@pytest.fixture
def row(transactional_db):
    from tests.orders.factories import RowFactory

    return RowFactory(available_quantity=10)


def simulate(client, order_id: str, body: dict | None = None):
    return client.post(f"/v1/test/orders/{order_id}/simulate_transfer", body or {}, format="json")


def body_of(raw: bytes) -> dict[str, str]:
    message = email.message_from_bytes(raw)
    lines = message.get_payload(decode=True).decode().splitlines()
    return dict(line.split(": ", 1) for line in lines if ": " in line)


def test_compose_writes_the_sandbox_format_for_each_variant(pairs, test_client, row):
    order = Order.objects.get(order_id=api_order(test_client, row, quantity=4)["order_id"])
    match = compose_sandbox_transfer(order, "match")
    headers = email.message_from_bytes(match)
    assert headers["From"] == "Sandbox Tickets <transfers@sandbox.invalid>"
    assert headers["To"] == order.transfer_address
    assert headers["Subject"] == f"You've been sent 4 tickets to {order.event.name}"
    assert headers["Message-ID"].endswith("@sandbox.invalid>") and headers["Date"]
    fields = body_of(match)
    assert fields["Event"] == order.event.name and fields["Venue"] == order.event.venue.name
    assert (fields["Section"], fields["Row"], fields["Seats"], fields["Tickets"]) == (
        order.section_name_display,
        order.row_name_display,
        "1, 2, 3, 4",
        "4",
    )
    assert fields["Accept your tickets"].startswith("https://accept.sandbox.invalid/t/")
    assert b"\r\n" in match and b"\n" not in match.replace(b"\r\n", b"")
    partial = body_of(compose_sandbox_transfer(order, "partial"))
    assert (partial["Seats"], partial["Tickets"]) == ("1, 2", "2")
    wrong = body_of(compose_sandbox_transfer(order, "wrong_row"))
    assert wrong["Row"].lower() != fields["Row"].lower() and wrong["Seats"] == fields["Seats"]
    accepted = email.message_from_bytes(compose_sandbox_transfer(order, "match", kind="transfer_accepted"))
    assert accepted["Subject"] == f"Your tickets to {order.event.name} were accepted"
    canceled = email.message_from_bytes(compose_sandbox_transfer(order, "match", kind="transfer_canceled"))
    assert canceled["Subject"] == f"Ticket transfer canceled: {order.event.name}"
    Order.objects.filter(pk=order.pk).update(general_admission=True)
    order.refresh_from_db()
    ga = body_of(compose_sandbox_transfer(order, "match"))
    assert "Seats" not in ga and ga["Tickets"] == "4"


def test_simulate_transfer_sends_a_signed_email_through_the_receiver(
    receiver, sandbox_signer, test_client, row
):
    order = api_order(test_client, row)
    response = simulate(test_client, order["order_id"])
    assert response.status_code == 202, response.content
    data = response.json()["data"]
    assert (data["order_id"], data["variant"], data["kind"]) == (order["order_id"], "match", "transfer_offer")
    stored = InboundMessage.objects.get(recipient=order["transfer_address"])
    raw = raw_read(stored)
    assert hashlib.sha256(raw).hexdigest() == data["message_sha256"] == stored.sha256
    assert (stored.channel, stored.peer) == ("smtp", "127.0.0.1")
    signature = email.message_from_bytes(raw)["DKIM-Signature"]
    tags = dict(t.strip().split("=", 1) for t in signature.replace("\r\n", "").split(";") if "=" in t)
    assert tags["d"] == "sandbox.invalid" and tags["s"] == "sandbox" and "l" not in tags
    assert {"from", "to", "subject", "date"} <= {h.strip().lower() for h in tags["h"].split(":")}
    # The whole way: authentic, parsed, matched, the order moved (tasks in-process, as in the embedded default).
    assert Order.objects.get(order_id=order["order_id"]).status == "ticket_received"


def test_the_forged_variant_is_signed_with_a_key_the_sandbox_never_published(
    receiver, sandbox_signer, test_client, row
):
    order = api_order(test_client, row)
    assert simulate(test_client, order["order_id"], {"variant": "forged"}).status_code == 202
    assert simulate(test_client, order["order_id"], {"variant": "match"}).status_code == 202
    forged, genuine = (
        raw_read(m) for m in InboundMessage.objects.filter(recipient=order["transfer_address"]).order_by("id")
    )
    # The genuine message's key, as the sandbox's DNS record would publish it: the forged one fails with it.
    key_of_genuine = _public_key_record(genuine, sandbox_signer)
    resolve = lambda name, timeout=5: key_of_genuine  # noqa: E731
    assert dkim.verify(genuine, dnsfunc=resolve)
    assert not dkim.verify(forged, dnsfunc=resolve)


def _public_key_record(raw: bytes, sandbox_signer) -> bytes:
    try:
        from orders.transfers.testing.simulator import sandbox_public_txt

        return sandbox_public_txt()
    except ImportError:
        # The tests' fallback signer: its key is the one the fallback module was made with.
        import sys as _sys

        return _sys.modules["orders.transfers.testing.simulator"].public_txt


@pytest.mark.parametrize("variant", ["partial", "wrong_row"])
def test_each_variant_is_accepted(receiver, sandbox_signer, test_client, row, variant):
    order = api_order(test_client, row)
    response = simulate(test_client, order["order_id"], {"variant": variant})
    assert response.status_code == 202, response.content
    assert response.json()["data"]["variant"] == variant


def test_simulate_transfer_refusals(receiver, sandbox_signer, live_client, test_client, row, settings):
    order = api_order(test_client, row)
    # A live token: 403 TEST_MODE_ONLY, whatever the order.
    assert_error(simulate(live_client, order["order_id"]), 403, "TEST_MODE_ONLY")
    # An unknown order, or a live one seen with the test token: 404.
    assert_error(simulate(test_client, "ord_doesnotexist"), 404, "ORDER_NOT_FOUND")
    live = api_order(live_client, row)
    assert_error(simulate(test_client, live["order_id"]), 404, "ORDER_NOT_FOUND")
    # A variant that does not exist: 400.
    assert_error(simulate(test_client, order["order_id"], {"variant": "nope"}), 400, "VALIDATION_ERROR")
    # Partial needs two tickets or more.
    single = api_order(test_client, row, quantity=1)
    assert_error(simulate(test_client, single["order_id"], {"variant": "partial"}), 400, "VALIDATION_ERROR")
    # No receiver: 503 SERVICE_UNAVAILABLE, nothing stored.
    settings.INBOUND_SMTP_LISTEN = f"127.0.0.1:{free_port()}"
    assert_error(simulate(test_client, order["order_id"]), 503, "SERVICE_UNAVAILABLE")
    assert not InboundMessage.objects.exists()
    settings.INBOUND_SMTP_LISTEN = f"127.0.0.1:{receiver.port}"
    # An order past the transfer: 409.
    assert advance(test_client, order["order_id"], "paid").status_code == 200
    error = assert_error(simulate(test_client, order["order_id"]), 409, "ILLEGAL_TRANSITION")
    assert error["details"]["status"] == "paid"
    assert not InboundMessage.objects.exists()


def test_send_test_transfer_command(receiver, sandbox_signer, test_client, live_client, row, capsys):
    order = api_order(test_client, row)
    call_command("send_test_transfer", order["order_id"], "--variant", "wrong_row")
    printed = capsys.readouterr().out
    stored = InboundMessage.objects.get(recipient=order["transfer_address"])
    assert f"for {order['order_id']} to {order['transfer_address']}" in printed
    assert "(wrong_row)" in printed and stored.sha256 in printed
    live = api_order(live_client, row)
    with pytest.raises(CommandError, match="is a live order"):
        call_command("send_test_transfer", live["order_id"])
    with pytest.raises(CommandError, match="No order"):
        call_command("send_test_transfer", "ord_nope")


def test_send_test_transfer_on_a_live_order_exits_1_with_a_clear_message(live_client, row, tmp_path):
    live = api_order(live_client, row)
    done = subprocess.run(
        [sys.executable, "manage.py", "send_test_transfer", live["order_id"]],
        cwd=ROOT,
        env=production_env(PYTHONPATH=str(ROOT), DATA_DIR=str(tmp_path)),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 1, done.stdout + done.stderr
    assert "is a live order: simulated transfers are for test-mode orders only" in done.stderr
    assert not InboundMessage.objects.exists()
