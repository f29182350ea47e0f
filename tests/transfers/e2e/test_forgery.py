"""The forgery matrix end to end: each forged or replayed transfer e-mail is handed to the intake for a real
order (made and confirmed through the API) and processed after its commit, as the SMTP receiver would have
it. The order must not move: its status and transfer fields stay, no ``order.status_changed`` or
``order.transfer_updated`` is written, and exactly one open case of the right kind shows the message to staff
(``authentic=False``). ``tests/transfers/auth/`` proves each verdict at the unit level; here the whole
pipeline runs (intake, storage, the task after commit, authentication, the case)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta
from email import message_from_bytes

import dkim
import pytest

from orders.models import Order
from orders.transfers.authenticity.dns import StaticResolver, use_resolver
from orders.transfers.models import InboundMessage, TransferCase
from tests.transfers.mailkit import make_key, resolver_for, sign

from .conftest import PLATFORM, PLATFORM_FROM, deliver, genuine, mail_for, open_cases, snapshot

S, TS = Order.Status, Order.TransferState
pytestmark = pytest.mark.django_db


@dataclass
class Forgery:
    raw: bytes
    order: Order
    resolver: StaticResolver | None = None  # None: the test platform's key only (the ``dns`` fixture)


def _live(shop) -> Order:
    """A live order of the test platform (``ticketsexample``), whose mail its own key signs."""
    return shop.order(live=True, primary_site=PLATFORM)


def unsigned(shop, key):
    order = shop.order()
    return Forgery(mail_for(order), order)


def wrong_key(shop, key):
    order = shop.order()
    forger = make_key("sandbox.invalid", "sandbox")  # the sandbox's d= and s=, the forger's own key
    return Forgery(sign(mail_for(order), forger), order, resolver_for(forger))


def revoked_key(shop, key):
    order = _live(shop)
    raw = sign(mail_for(order, sender=PLATFORM_FROM), key)
    return Forgery(raw, order, StaticResolver({key.dns_name: [b"v=DKIM1; k=rsa; p="]}))


def d_not_aligned(shop, key):
    order = _live(shop)
    other = make_key("bulk-mailer.example", "m1")  # a valid signature, of another organisation
    return Forgery(sign(mail_for(order, sender=PLATFORM_FROM), other), order, resolver_for(key, other))


def look_alike_domain(shop, key):
    order = _live(shop)
    look_alike = make_key("tickets-examp1e.com", "s1")
    raw = sign(mail_for(order, sender="Tickets Example <transfers@mail.tickets-examp1e.com>"), look_alike)
    return Forgery(raw, order, resolver_for(key, look_alike))


def display_name_spoof(shop, key):
    order = shop.order()
    evil = make_key("evil.example", "k1")
    sender = '"Sandbox Tickets <transfers@sandbox.invalid>" <transfers@evil.example>'
    return Forgery(sign(mail_for(order, sender=sender), evil), order, resolver_for(evil))


def tampered_body(shop, key):
    # The genuine notice of one ticket of two, rewritten to claim both.
    order = shop.order(quantity=2)
    raw = genuine(order, seats=["1"], quantity=1)
    tampered = raw.replace(b"Seats: 1\r\n", b"Seats: 1, 2\r\n").replace(b"Tickets: 1\r\n", b"Tickets: 2\r\n")
    assert tampered != raw
    return Forgery(tampered, order)


def tampered_to(shop, key):
    # Another order's genuine mail, its To rewritten to this order's transfer address.
    order, other = shop.order(), shop.order()
    raw = genuine(other).replace(other.transfer_address.encode(), order.transfer_address.encode())
    return Forgery(raw, order)


def length_tag_with_appended_text(shop, key):
    order = _live(shop)
    raw = sign(mail_for(order, sender=PLATFORM_FROM, seats=["1"], quantity=1), key, length=True)
    appended = raw + b"Seats: 1, 2\r\nTickets: 2\r\n"
    assert dkim.verify(appended, dnsfunc=lambda name, timeout=5: key.txt)  # dkimpy alone accepts it
    return Forgery(appended, order)


def second_from(shop, key):
    order = shop.order()
    return Forgery(b"From: Seller <seller@evil.example>\r\n" + genuine(order), order)


def stale_date(shop, key):
    order = shop.order()
    return Forgery(genuine(order, date=order.created_at - timedelta(minutes=16)), order)


def forwarded_as_attachment(shop, key):
    order = shop.order()
    inner = genuine(order)
    boundary = "fwd-boundary"
    wrapper = (
        (
            "From: Sandbox Tickets <transfers@sandbox.invalid>\r\n"
            f"To: {order.transfer_address}\r\n"
            f"Subject: Fwd: {message_from_bytes(inner)['Subject']}\r\n"
            f"Date: {message_from_bytes(inner)['Date']}\r\n"
            "Message-ID: <fwd-1@seller.example>\r\n"
            "MIME-Version: 1.0\r\n"
            f'Content-Type: multipart/mixed; boundary="{boundary}"\r\n\r\n'
            f"--{boundary}\r\nContent-Type: text/plain\r\n\r\nSee attached.\r\n"
            f"--{boundary}\r\nContent-Type: message/rfc822\r\n\r\n"
        ).encode()
        + inner
        + f"\r\n--{boundary}--\r\n".encode()
    )
    return Forgery(wrapper, order)


def arc_from_an_unlisted_sealer(shop, key):
    # Genuine mail a forwarder changed (a footer) and ARC-sealed, vouching for the DKIM pass it saw.
    order = shop.order()
    sealer = make_key("relay.example", "arc1")
    changed = genuine(order) + b"-- \r\nForwarded by the mail relay\r\n"
    with_ar = (
        b"Authentication-Results: relay.example; dkim=pass header.d=sandbox.invalid header.s=sandbox\r\n"
        + changed
    )
    arc_set = dkim.arc_sign(
        with_ar,
        b"arc1",
        b"relay.example",
        sealer.private_pem,
        b"relay.example",
        include_headers=[b"from", b"to", b"subject", b"date", b"message-id"],
    )
    return Forgery(b"".join(arc_set) + with_ar, order, resolver_for(sealer))


def sandbox_signer_on_a_live_order(shop, key):
    order = shop.order(live=True)
    return Forgery(genuine(order), order)


def replay_of_another_orders_mail(shop, key):
    # Delivered genuinely to order A (A moves), then the same bytes to order B.
    first, order = shop.order(), shop.order()
    raw = genuine(first)
    deliver(raw, first, shop.capture)
    first.refresh_from_db()
    assert first.status == S.TICKET_RECEIVED
    return Forgery(raw, order)


def replay_of_a_message_id(shop, key):
    # Order A's Message-ID on a copy made for order B (its own To, signed again): the platform sends a
    # Message-ID once, so this is a replay even though everything else about it is genuine.
    first, order = shop.order(), shop.order()
    raw = genuine(first)
    deliver(raw, first, shop.capture)
    message_id = message_from_bytes(raw)["Message-ID"]
    return Forgery(genuine(order, message_id=message_id), order)


MATRIX = {
    "unsigned": (unsigned, "unverified"),
    "wrong_key": (wrong_key, "unverified"),
    "revoked_key": (revoked_key, "unverified"),
    "d_not_aligned": (d_not_aligned, "unverified"),
    "look_alike_domain": (look_alike_domain, "unverified"),
    "display_name_spoof": (display_name_spoof, "unverified"),
    "tampered_body": (tampered_body, "unverified"),
    "tampered_to": (tampered_to, "unverified"),
    "l_tag_with_appended_text": (length_tag_with_appended_text, "unverified"),
    "second_from": (second_from, "unverified"),
    "stale_date": (stale_date, "unverified"),
    "forwarded_as_attachment": (forwarded_as_attachment, "unverified"),
    "arc_from_an_unlisted_sealer": (arc_from_an_unlisted_sealer, "unverified"),
    "sandbox_signer_on_a_live_order": (sandbox_signer_on_a_live_order, "unverified"),
    "replay_of_another_orders_mail": (replay_of_another_orders_mail, "replay_suspected"),
    "replay_of_a_message_id": (replay_of_a_message_id, "replay_suspected"),
}


def run(name: str, shop, key) -> tuple[Forgery, InboundMessage, dict, dict]:
    make, _kind = MATRIX[name]
    forgery = make(shop, key)
    before = snapshot(forgery.order)
    if forgery.resolver is not None:
        with use_resolver(forgery.resolver):
            message = deliver(forgery.raw, forgery.order, shop.capture)
    else:
        message = deliver(forgery.raw, forgery.order, shop.capture)
    return forgery, message, before, snapshot(forgery.order)


@pytest.mark.parametrize("name", list(MATRIX))
def test_forged_or_replayed_mail_leaves_the_order_and_opens_one_case(name, shop, platform_key):
    forgery, message, before, after = run(name, shop, platform_key)
    order = forgery.order
    assert after == before, name
    assert after["status"] == S.AWAITING_TRANSFER and after["transfer_state"] == TS.NONE
    assert after["transfer_quantity_detected"] == 0
    assert message.stage == InboundMessage.Stage.PROCESSED and message.outcome == InboundMessage.Outcome.CASE
    assert message.authentic is False
    kind = MATRIX[name][1]
    assert open_cases(order) == [kind], message.verdicts.get("auth")
    case = TransferCase.objects.get(order=order)
    assert case.message == message and case.summary.startswith("Not authentic")
    assert case.details["failures"] == message.verdicts["auth"]["failures"] != []
    order.refresh_from_db()
    assert order.transfer.case_open is True
    # The partner sees nothing but the order still waiting for its tickets.
    client = shop.live if order.livemode else shop.test
    assert client.get(f"/v1/orders/{order.order_id}").json()["data"]["status"] == S.AWAITING_TRANSFER


def test_forged_or_replayed_mail_that_changed_an_order_is_0_of_n(shop, platform_key, capsys):
    changed = [
        name for name in MATRIX if (lambda r: r[2] != r[3] or r[1].authentic)(run(name, shop, platform_key))
    ]
    with capsys.disabled():
        print(f"\nforged or replayed mail that changed an order: {len(changed)} of {len(MATRIX)}")
    assert changed == [], f"forged or replayed mail that changed an order: {len(changed)} of {len(MATRIX)}"


def test_the_genuine_counterpart_of_the_replay_still_moves_its_own_order(shop):
    # The replayed order's own genuine mail, arriving after the replay, is not held against it.
    first, order = shop.order(), shop.order()
    raw = genuine(first)
    deliver(raw, first, shop.capture)
    deliver(raw, order, shop.capture)
    assert open_cases(order) == ["replay_suspected"]
    message = deliver(genuine(order), order, shop.capture)
    order.refresh_from_db()
    assert (
        message.authentic is True
        and order.status == S.TICKET_RECEIVED
        and order.transfer.state == TS.DETECTED
    )


def test_the_sandbox_signer_is_accepted_for_test_orders_only(shop):
    test_order, live_order = shop.order(), shop.order(live=True)
    deliver(genuine(test_order), test_order, shop.capture)
    message = deliver(genuine(live_order), live_order, shop.capture)
    test_order.refresh_from_db()
    live_order.refresh_from_db()
    assert test_order.status == S.TICKET_RECEIVED
    assert live_order.status == S.AWAITING_TRANSFER and open_cases(live_order) == ["unverified"]
    assert any("test orders only" in f for f in message.verdicts["auth"]["failures"])


def test_a_forgery_completing_a_partial_transfer_changes_nothing(shop):
    # One genuine ticket of two, then the same genuine mail again with its seat rewritten to the missing one
    # (a change the relaxed canonicalisation does not forgive, unlike trailing spaces).
    order = shop.order(quantity=2)
    deliver(genuine(order, seats=["1"], quantity=1), order, shop.capture)
    before = snapshot(order)
    assert (before["transfer_state"], before["transfer_quantity_detected"]) == (TS.PARTIAL, 1)
    forged = genuine(order, seats=["1"], quantity=1).replace(b"Seats: 1\r\n", b"Seats: 2\r\n")
    assert b"Seats: 2\r\n" in forged
    message = deliver(forged, order, shop.capture)
    assert message.authentic is False and snapshot(order) == before
    assert open_cases(order) == ["unverified"]


def test_genuine_mail_also_addressed_in_the_envelope_to_another_order_moves_only_its_own(shop):
    # One SMTP transaction, two RCPT: the platform's mail for order A, copied to order B's address.
    order, other = shop.order(), shop.order()
    before = snapshot(other)
    raw = genuine(order)
    deliver(raw, order, shop.capture, recipients=[order.transfer_address, other.transfer_address])
    order.refresh_from_db()
    assert order.status == S.TICKET_RECEIVED
    [copy] = InboundMessage.objects.filter(order=other)
    assert copy.authentic is False and snapshot(other) == before
    assert open_cases(other) in (["replay_suspected"], ["unverified"])
    assert any("transfer address" in f or "already processed" in f for f in copy.verdicts["auth"]["failures"])
