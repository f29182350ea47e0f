"""``authenticate``: the platform's genuine transfer mail passes; every forgery of the matrix fails with a line
staff can read (docs/operations/receiving-mail.md "Transfer detection"). Real DKIM signatures with keys made here, DNS
answered by a StaticResolver (the sandbox key by the service's own resolver)."""

from datetime import timedelta
from email import message_from_bytes

import dkim
import pytest
from django.utils import timezone

from orders.transfers.authenticity import authenticate as auth
from orders.transfers.authenticity.authenticate import authenticate
from orders.transfers.authenticity.dns import DnsTempError, StaticResolver, use_resolver
from orders.transfers.models import InboundMessage
from orders.transfers.testing.simulator import sandbox_sign
from tests.transfers.mailkit import inbound_message, make_key, resolver_for, sign, transfer_email

pytestmark = pytest.mark.django_db

PLATFORM_FROM = "Ticketmaster <transfers@tickets.example>"


@pytest.fixture
def registry(monkeypatch):
    """The platform registry as the tests need it: ``ticketmaster`` sends from tickets.example."""
    domains = {"sandbox": {"sandbox.invalid"}, "ticketmaster": {"tickets.example"}}
    monkeypatch.setattr(auth, "platform_sender_domains", lambda site: set(domains.get(site, set())))
    return domains


@pytest.fixture
def platform_key():
    return make_key("tickets.example", "k1")


def check(raw, order, resolver=None, **fields):
    message = inbound_message(order, raw, **fields)
    with use_resolver(resolver or StaticResolver()):
        return authenticate(raw, message=message, order=order)


def assert_fails(verdict, *fragments, kind="unverified"):
    assert verdict.authentic is False
    assert verdict.case_kind == kind
    assert verdict.temperror is False
    text = "\n".join(verdict.failures)
    for fragment in fragments:
        assert fragment in text, text


# --- genuine -------------------------------------------------------------------------------------------------
def test_the_sandbox_platforms_mail_to_a_test_order_is_authentic(test_order):
    raw = sandbox_sign(transfer_email(test_order.transfer_address))
    verdict = check(raw, test_order)
    assert verdict.authentic is True, verdict.failures
    assert verdict.failures == []
    assert (verdict.platform, verdict.sandbox, verdict.case_kind) == ("sandbox", True, "")
    assert verdict.dkim["d"] == "sandbox.invalid" and verdict.dkim["s"] == "sandbox"
    assert verdict.dkim["bits"] == 2048 and verdict.dkim["result"] == "pass"
    assert verdict.header_from == "Sandbox Tickets <transfers@sandbox.invalid>"
    assert verdict.header_to == test_order.transfer_address
    assert verdict.header_subject == "You've been sent 2 tickets to Skyline Festival"
    assert verdict.message_id.endswith("@sandbox.invalid>")
    assert verdict.header_date


def test_a_registered_platforms_mail_signed_by_its_key_is_authentic_on_a_live_order(
    live_order, registry, platform_key
):
    raw = sign(transfer_email(live_order.transfer_address, sender=PLATFORM_FROM), platform_key)
    verdict = check(raw, live_order, resolver_for(platform_key))
    assert verdict.authentic is True, verdict.failures
    assert (verdict.platform, verdict.sandbox) == ("ticketmaster", False)
    assert verdict.dkim["d"] == "tickets.example" and verdict.dkim["via"] == "signature"


def test_a_subdomain_signer_of_the_same_organisation_is_aligned(live_order, registry):
    key = make_key("mail.tickets.example", "s2")
    raw = sign(transfer_email(live_order.transfer_address, sender=PLATFORM_FROM), key)
    verdict = check(raw, live_order, resolver_for(key))
    assert verdict.authentic is True, verdict.failures


def test_the_first_signature_that_verifies_and_aligns_is_used(live_order, registry, platform_key):
    forger = make_key("evil.example", "x")
    raw = sign(sign(transfer_email(live_order.transfer_address, sender=PLATFORM_FROM), platform_key), forger)
    verdict = check(raw, live_order, resolver_for(platform_key, forger))
    assert verdict.authentic is True, verdict.failures
    assert verdict.dkim["d"] == "tickets.example"
    assert [s["usable"] for s in verdict.dkim["signatures"]] == [False, True]


# --- the forgery matrix --------------------------------------------------------------------------------------
def test_unsigned_mail_is_unverified(test_order):
    verdict = check(transfer_email(test_order.transfer_address), test_order)
    assert_fails(verdict, "no DKIM signature")


def test_a_signature_made_with_another_key_than_the_published_one_fails(live_order, registry, platform_key):
    forger = make_key("tickets.example", "k1")  # same d= and s=, the forger's own key
    raw = sign(transfer_email(live_order.transfer_address, sender=PLATFORM_FROM), forger)
    verdict = check(raw, live_order, resolver_for(platform_key))
    assert_fails(verdict, "does not match the message")


def test_the_sandbox_selector_signed_with_another_key_fails(test_order):
    forger = make_key("sandbox.invalid", "sandbox")
    raw = sign(transfer_email(test_order.transfer_address), forger)
    # Even a resolver that would publish the forger's key is never asked for the sandbox's name.
    verdict = check(raw, test_order, resolver_for(forger))
    assert_fails(verdict, "does not match the message")


def test_a_revoked_key_fails(live_order, registry, platform_key):
    raw = sign(transfer_email(live_order.transfer_address, sender=PLATFORM_FROM), platform_key)
    resolver = StaticResolver({platform_key.dns_name: [b"v=DKIM1; k=rsa; p="]})
    verdict = check(raw, live_order, resolver)
    assert_fails(verdict, "revoked (empty p=)")


def test_a_signature_without_a_published_key_fails(live_order, registry, platform_key):
    raw = sign(transfer_email(live_order.transfer_address, sender=PLATFORM_FROM), platform_key)
    verdict = check(raw, live_order, StaticResolver())
    assert_fails(verdict, "no key is published at k1._domainkey.tickets.example")


def test_a_valid_signature_of_an_unaligned_domain_fails(live_order, registry):
    other = make_key("bulk-mailer.example", "m1")
    raw = sign(transfer_email(live_order.transfer_address, sender=PLATFORM_FROM), other)
    verdict = check(raw, live_order, resolver_for(other))
    assert_fails(verdict, "d=bulk-mailer.example is not in the organisational domain")


@pytest.mark.parametrize("domain", ["tickets-rnaster.com", "tickets.example.evil.com", "ticketsexample.com"])
def test_a_look_alike_domain_signed_with_its_own_key_fails(live_order, registry, domain):
    key = make_key(domain, "k1")
    raw = sign(transfer_email(live_order.transfer_address, sender=f"Ticketmaster <transfers@{domain}>"), key)
    verdict = check(raw, live_order, resolver_for(key))
    assert_fails(verdict, f"From domain {domain} is not a sender domain")


def test_a_sandbox_look_alike_fails_on_a_test_order(test_order):
    key = make_key("sandbox-invalid.com", "sandbox")
    raw = sign(
        transfer_email(test_order.transfer_address, sender="Sandbox <transfers@sandbox-invalid.com>"), key
    )
    verdict = check(raw, test_order, resolver_for(key))
    assert_fails(verdict, "From domain sandbox-invalid.com is not a sender domain")
    assert verdict.sandbox is False and verdict.platform == ""


@pytest.mark.parametrize(
    "sender",
    [
        '"Sandbox Tickets <transfers@sandbox.invalid>" <transfers@evil.example>',
        '"transfers@sandbox.invalid" <transfers@evil.example>',
        "=?utf-8?q?transfers=40sandbox=2Einvalid?= <transfers@evil.example>",
    ],
)
def test_a_display_name_spoof_is_judged_by_the_address(test_order, sender):
    key = make_key("evil.example", "k1")
    raw = sign(transfer_email(test_order.transfer_address, sender=sender), key)
    verdict = check(raw, test_order, resolver_for(key))
    assert_fails(verdict, "From domain evil.example is not a sender domain")
    assert verdict.sandbox is False


def test_a_from_header_with_two_readings_fails(test_order):
    key = make_key("evil.example", "k1")
    raw = sign(
        transfer_email(test_order.transfer_address, sender="transfers@sandbox.invalid <x@evil.example>"), key
    )
    verdict = check(raw, test_order, resolver_for(key))
    assert_fails(verdict, "exactly one well-formed address")


def test_a_tampered_body_fails(test_order):
    raw = sandbox_sign(transfer_email(test_order.transfer_address))
    tampered = raw.replace(b"Row: A", b"Row: B")
    assert tampered != raw
    verdict = check(tampered, test_order)
    assert_fails(verdict, "body was changed after signing")


def test_a_tampered_to_fails(test_order, other_test_order):
    genuine = sandbox_sign(transfer_email(other_test_order.transfer_address))
    tampered = genuine.replace(
        other_test_order.transfer_address.encode(), test_order.transfer_address.encode()
    )
    verdict = check(tampered, test_order)
    assert_fails(verdict, "does not match the message")


def test_another_orders_genuine_mail_delivered_here_fails_on_the_signed_to(test_order, other_test_order):
    genuine = sandbox_sign(transfer_email(other_test_order.transfer_address))
    verdict = check(genuine, test_order)
    assert_fails(verdict, "does not name this order's transfer address")


def test_an_l_tag_with_appended_text_fails(live_order, registry, platform_key):
    raw = sign(transfer_email(live_order.transfer_address, sender=PLATFORM_FROM), platform_key, length=True)
    appended = raw + b"Row: Z (corrected)\r\n"
    assert dkim.verify(appended, dnsfunc=lambda name, timeout=5: platform_key.txt)  # dkimpy alone accepts it
    verdict = check(appended, live_order, resolver_for(platform_key))
    assert_fails(verdict, "l= tag")


def test_an_l_tag_fails_even_without_appended_text(live_order, registry, platform_key):
    raw = sign(transfer_email(live_order.transfer_address, sender=PLATFORM_FROM), platform_key, length=True)
    verdict = check(raw, live_order, resolver_for(platform_key))
    assert_fails(verdict, "l= tag")


def test_a_second_from_header_fails(test_order):
    genuine = sandbox_sign(transfer_email(test_order.transfer_address))
    doubled = b"From: Seller <seller@evil.example>\r\n" + genuine
    verdict = check(doubled, test_order)
    assert_fails(verdict, "2 From headers")


@pytest.mark.parametrize("header", ["To", "Subject", "Date"])
def test_a_second_to_subject_or_date_fails(test_order, header):
    genuine = sandbox_sign(transfer_email(test_order.transfer_address))
    value = {"To": "someone@else.example", "Subject": "Hello", "Date": "Mon, 1 Jan 2024 00:00:00 +0000"}[
        header
    ]
    doubled = genuine.replace(b"\r\n\r\n", f"\r\n{header}: {value}\r\n\r\n".encode(), 1)
    verdict = check(doubled, test_order)
    assert_fails(verdict, f"2 {header} headers")


def test_a_signature_not_covering_to_fails(live_order, registry, platform_key):
    raw = sign(
        transfer_email(live_order.transfer_address, sender=PLATFORM_FROM),
        platform_key,
        headers=("from", "subject", "date", "message-id"),
    )
    verdict = check(raw, live_order, resolver_for(platform_key))
    assert_fails(verdict, "h= does not cover to")


def test_a_replay_of_another_orders_genuine_mail_is_suspected(test_order, other_test_order):
    genuine = sandbox_sign(transfer_email(other_test_order.transfer_address))
    first = inbound_message(other_test_order, genuine)
    with use_resolver(StaticResolver()):
        assert authenticate(genuine, message=first, order=other_test_order).authentic is True
    InboundMessage.objects.filter(pk=first.pk).update(
        stage="processed",
        authentic=True,
        platform="sandbox",
        message_id=message_from_bytes(genuine)["Message-ID"],
    )
    verdict = check(genuine, test_order)
    assert_fails(verdict, "already processed for another order", kind="replay_suspected")
    assert verdict.replay_of == [first.pk]


def test_a_reused_message_id_of_the_platform_is_suspected(test_order, other_test_order):
    message_id = "<transfer-1234@sandbox.invalid>"
    earlier = sandbox_sign(transfer_email(other_test_order.transfer_address, message_id=message_id))
    inbound_message(
        other_test_order,
        earlier,
        stage="processed",
        authentic=True,
        platform="sandbox",
        message_id=message_id,
    )
    again = sandbox_sign(transfer_email(test_order.transfer_address, message_id=message_id))
    verdict = check(again, test_order)
    assert_fails(verdict, "already processed for another order", kind="replay_suspected")


def test_the_same_message_id_of_an_unverified_message_is_no_replay(test_order, other_test_order):
    message_id = "<transfer-5678@sandbox.invalid>"
    forged = transfer_email(other_test_order.transfer_address, message_id=message_id)
    inbound_message(
        other_test_order,
        forged,
        stage="processed",
        authentic=False,
        platform="sandbox",
        message_id=message_id,
    )
    genuine = sandbox_sign(transfer_email(test_order.transfer_address, message_id=message_id))
    assert check(genuine, test_order).authentic is True


def test_a_retry_of_the_same_message_to_the_same_order_is_no_replay(test_order):
    genuine = sandbox_sign(transfer_email(test_order.transfer_address))
    message = inbound_message(test_order, genuine, stage="processed", authentic=True, platform="sandbox")
    with use_resolver(StaticResolver()):
        verdict = authenticate(genuine, message=message, order=test_order)
    assert verdict.authentic is True, verdict.failures


def test_a_date_before_the_order_fails(test_order):
    stale = test_order.created_at - timedelta(minutes=16)
    verdict = check(sandbox_sign(transfer_email(test_order.transfer_address, date=stale)), test_order)
    assert_fails(verdict, "is before the order")


def test_a_date_within_15_minutes_before_the_order_passes(test_order):
    early = test_order.created_at - timedelta(minutes=14)
    verdict = check(sandbox_sign(transfer_email(test_order.transfer_address, date=early)), test_order)
    assert verdict.authentic is True, verdict.failures


def test_a_date_more_than_15_minutes_after_receipt_fails(test_order):
    ahead = timezone.now() + timedelta(minutes=20)
    verdict = check(sandbox_sign(transfer_email(test_order.transfer_address, date=ahead)), test_order)
    assert_fails(verdict, "after the message was received")


def test_genuine_mail_forwarded_as_an_attachment_fails(test_order):
    genuine = sandbox_sign(transfer_email(test_order.transfer_address))
    boundary = "fwd-boundary"
    wrapper = (
        (
            "From: Sandbox Tickets <transfers@sandbox.invalid>\r\n"
            f"To: {test_order.transfer_address}\r\n"
            "Subject: Fwd: You've been sent 2 tickets to Skyline Festival\r\n"
            f"Date: {message_from_bytes(genuine)['Date']}\r\n"
            "Message-ID: <fwd-1@seller.example>\r\n"
            "MIME-Version: 1.0\r\n"
            f'Content-Type: multipart/mixed; boundary="{boundary}"\r\n\r\n'
            f"--{boundary}\r\nContent-Type: text/plain\r\n\r\nSee attached.\r\n"
            f"--{boundary}\r\nContent-Type: message/rfc822\r\n\r\n"
        ).encode()
        + genuine
        + f"\r\n--{boundary}--\r\n".encode()
    )
    verdict = check(wrapper, test_order)
    assert_fails(verdict, "no DKIM signature")


def _arc_forwarded(order, sealer_key):
    """Genuine sandbox mail that a forwarder changed (a footer) and ARC-sealed, reporting the DKIM pass it saw."""
    genuine = sandbox_sign(transfer_email(order.transfer_address))
    changed = genuine + b"-- \r\nForwarded by the mail relay\r\n"
    sealer = sealer_key.domain
    with_ar = (
        f"Authentication-Results: {sealer}; dkim=pass header.d=sandbox.invalid header.s=sandbox\r\n".encode()
        + changed
    )
    arc_set = dkim.arc_sign(
        with_ar,
        sealer_key.selector.encode(),
        sealer.encode(),
        sealer_key.private_pem,
        sealer.encode(),
        include_headers=[b"from", b"to", b"subject", b"date", b"message-id"],
    )
    assert len(arc_set) == 3
    return b"".join(arc_set) + with_ar


def test_an_arc_seal_of_an_unlisted_sealer_is_ignored(test_order, settings):
    settings.INBOUND_TRUSTED_ARC_SEALERS = ()
    sealer = make_key("relay.example", "arc1")
    raw = _arc_forwarded(test_order, sealer)
    verdict = check(raw, test_order, resolver_for(sealer))
    assert_fails(verdict, "body was changed after signing", "ARC seal by relay.example was ignored")
    assert verdict.arc == {
        "present": True,
        "instance": 1,
        "sealer": "relay.example",
        "trusted": False,
        "counted": False,
        "note": "sealer not listed in INBOUND_TRUSTED_ARC_SEALERS: recorded and ignored",
    }


def test_an_arc_seal_of_a_listed_sealer_stands_in_for_the_broken_signature(test_order, settings):
    settings.INBOUND_TRUSTED_ARC_SEALERS = ("relay.example",)
    sealer = make_key("relay.example", "arc1")
    raw = _arc_forwarded(test_order, sealer)
    verdict = check(raw, test_order, resolver_for(sealer))
    assert verdict.authentic is True, verdict.failures
    assert verdict.arc["counted"] is True and verdict.arc["cv"] == "pass"
    assert verdict.dkim["via"] == "arc" and verdict.dkim["d"] == "sandbox.invalid"


def test_a_listed_sealers_broken_chain_does_not_count(test_order, settings):
    settings.INBOUND_TRUSTED_ARC_SEALERS = ("relay.example",)
    sealer = make_key("relay.example", "arc1")
    raw = _arc_forwarded(test_order, sealer).replace(b"Tickets: 2", b"Tickets: 4")
    verdict = check(raw, test_order, resolver_for(sealer))
    assert_fails(verdict, "body was changed after signing")
    assert verdict.arc["counted"] is False and verdict.arc["cv"] == "fail"


def test_the_sandbox_signer_on_a_live_order_is_unverified(live_order):
    raw = sandbox_sign(transfer_email(live_order.transfer_address))
    verdict = check(raw, live_order)
    assert_fails(verdict, "accepted for test orders only")
    assert verdict.sandbox is True and verdict.platform == ""


def test_a_short_key_fails(live_order, registry):
    short = make_key("tickets.example", "k1", bits=512)
    assert short.bits == 512
    raw = sign(transfer_email(live_order.transfer_address, sender=PLATFORM_FROM), short)
    verdict = check(raw, live_order, resolver_for(short))
    assert_fails(verdict, "512 bits (at least 1024 are required)")


def test_a_dns_timeout_is_a_temporary_error(live_order, registry, platform_key):
    raw = sign(transfer_email(live_order.transfer_address, sender=PLATFORM_FROM), platform_key)
    resolver = StaticResolver({platform_key.dns_name: DnsTempError("no answer within 5 s")})
    verdict = check(raw, live_order, resolver)
    assert verdict.authentic is False and verdict.temperror is True
    assert verdict.case_kind == "auth_temperror"
    assert verdict.dkim["result"] == "temperror"
    assert "could not be fetched for now" in "\n".join(verdict.failures)


def test_a_dns_timeout_on_mail_that_fails_anyway_is_no_temporary_error(
    live_order, other_live_order, registry
):
    key = make_key("tickets.example", "k1")
    raw = sign(transfer_email(other_live_order.transfer_address, sender=PLATFORM_FROM), key)
    resolver = StaticResolver({key.dns_name: DnsTempError("SERVFAIL")})
    verdict = check(raw, live_order, resolver)
    assert_fails(verdict, "does not name this order's transfer address")


@pytest.mark.parametrize("flag", ["spam", "virus"])
def test_a_provider_flag_makes_genuine_mail_unverified(test_order, flag):
    raw = sandbox_sign(transfer_email(test_order.transfer_address))
    verdict = check(raw, test_order, channel="mailgun", verdicts={"provider": {flag: True}})
    assert_fails(verdict, f"The provider flagged it as {flag}")


# --- SPF: recorded, never decisive ---------------------------------------------------------------------------
def test_spf_is_recorded_for_smtp_mail_and_a_fail_does_not_matter(live_order, registry, platform_key):
    raw = sign(transfer_email(live_order.transfer_address, sender=PLATFORM_FROM), platform_key)
    resolver = resolver_for(platform_key, extra={"tickets.example": [b"v=spf1 ip4:192.0.2.0/24 -all"]})
    kw = {"mail_from": "bounce@tickets.example", "helo": "mx.tickets.example"}
    passing = check(raw, live_order, resolver, peer="192.0.2.10", **kw)
    assert passing.authentic is True and passing.spf["result"] == "pass"
    InboundMessage.objects.all().delete()
    failing = check(raw, live_order, resolver, peer="198.51.100.7", **kw)
    assert failing.authentic is True and failing.spf["result"] == "fail"


def test_spf_is_not_sufficient(live_order, registry):
    raw = transfer_email(live_order.transfer_address, sender=PLATFORM_FROM)
    resolver = StaticResolver({"tickets.example": [b"v=spf1 ip4:192.0.2.0/24 -all"]})
    verdict = check(raw, live_order, resolver, peer="192.0.2.10", mail_from="bounce@tickets.example")
    assert verdict.spf["result"] == "pass"
    assert_fails(verdict, "no DKIM signature")


def test_an_spf_dns_failure_is_recorded_as_temperror(live_order, registry, platform_key):
    raw = sign(transfer_email(live_order.transfer_address, sender=PLATFORM_FROM), platform_key)
    resolver = resolver_for(platform_key, extra={"tickets.example": DnsTempError("timeout")})
    verdict = check(raw, live_order, resolver, peer="192.0.2.10", mail_from="bounce@tickets.example")
    assert verdict.authentic is True and verdict.temperror is False
    assert verdict.spf["result"] == "temperror"


def test_spf_is_not_checked_without_smtp_or_a_peer(test_order):
    raw = sandbox_sign(transfer_email(test_order.transfer_address))
    assert check(raw, test_order, channel="postmark", peer="postmark").spf["checked"] is False
    InboundMessage.objects.all().delete()
    assert check(raw, test_order, peer="").spf["checked"] is False


def test_the_verdict_is_plain_json(test_order):
    import json

    raw = sandbox_sign(transfer_email(test_order.transfer_address))
    data = json.loads(json.dumps(check(raw, test_order).as_json()))
    assert data["authentic"] is True and data["dkim"]["signatures"][0]["usable"] is True


# --- hostile input: never an exception, always unverified ----------------------------------------------------
@pytest.mark.parametrize(
    "raw",
    [
        b"",
        b"garbage without any header",
        b" leading continuation\r\nFrom: a@b.example\r\n\r\nx",
        b"From: \xff\xfe@\xff.example\r\nTo: \x80\r\nSubject: \xc3\r\nDate: yesterday\r\n\r\n\xff",
        b"From: a@b.example\r\nTo: =?utf-8?b?invalid?= <@>\r\nSubject: x\r\nDate: Mon, 99 Foo 2026 99:99:99 +9999\r\n\r\n",
        b"DKIM-Signature: v=1; a=rsa-sha256; d=; s=; h=; bh=; b=\r\nFrom: a@b.example\r\n\r\nbody",
        b"DKIM-Signature: garbage;;;===\r\nARC-Seal: i=x; d=relay.example\r\nFrom: <<>>\r\n\r\n",
        b"From: " + b"a" * 5000 + b"@" + b"b" * 300 + b".example\r\nTo: ,,,,\r\n\r\n",
        b"From: Group: a@b.example, c@d.example;\r\nTo: undisclosed-recipients:;\r\n\r\n",
    ],
)
def test_hostile_input_is_unverified_without_an_exception(test_order, settings, raw):
    settings.INBOUND_TRUSTED_ARC_SEALERS = ("relay.example",)
    verdict = check(raw, test_order)
    assert verdict.authentic is False and verdict.case_kind == "unverified"
    assert verdict.failures


def test_the_multipart_form_of_the_sandbox_mail_is_authentic_too(test_order):
    raw = sandbox_sign(transfer_email(test_order.transfer_address, html=True, seats=None, quantity=3))
    parsed = message_from_bytes(raw)
    assert parsed.get_content_type() == "multipart/alternative"
    assert [p.get_content_type() for p in parsed.get_payload()] == ["text/plain", "text/html"]
    assert "Seats:" not in parsed.get_payload()[0].get_payload() and "Tickets: 3" in raw.decode()
    verdict = check(raw, test_order)
    assert verdict.authentic is True, verdict.failures


@pytest.mark.parametrize(
    "to",
    [
        "{address} <seller-second-account@example.com>",
        '"{address}" <seller-second-account@example.com>',
        "=?utf-8?q?{address}?= <seller-second-account@example.com>",
        "seller-second-account@example.com ({address})",
    ],
)
def test_genuine_mail_to_a_recipient_named_like_the_transfer_address_fails(test_order, to):
    """Tickets transferred to the seller's own second account, whose display name is the transfer address, then
    re-sent here: the signature holds, the To does not name the order's mailbox."""
    raw = sandbox_sign(transfer_email(to.format(address=test_order.transfer_address)))
    verdict = check(raw, test_order)
    assert verdict.authentic is False and verdict.case_kind == "unverified"
    assert verdict.dkim["result"] == "pass"
    assert any("To header" in line for line in verdict.failures), verdict.failures


def test_a_to_with_several_recipients_including_the_transfer_address_passes(test_order):
    raw = sandbox_sign(
        transfer_email(f"Seller <seller@example.com>, Service <{test_order.transfer_address}>")
    )
    verdict = check(raw, test_order)
    assert verdict.authentic is True, verdict.failures


def test_a_copy_of_this_orders_processed_mail_with_new_bytes_is_suspected(test_order):
    """An offer re-sent after the transfer was canceled, with a header added so that its bytes are new: its
    Message-ID is not new for the platform."""
    genuine = sandbox_sign(transfer_email(test_order.transfer_address))
    message_id = message_from_bytes(genuine)["Message-ID"]
    first = inbound_message(test_order, genuine, stage="processed", authentic=True, platform="sandbox")
    InboundMessage.objects.filter(pk=first.pk).update(message_id=message_id)
    resent = b"Received: from relay.example by mx; Mon, 1 Jan 2026 00:00:00 +0000\r\n" + genuine
    verdict = check(resent, test_order)
    assert_fails(verdict, "already processed for this order, with other bytes", kind="replay_suspected")
    assert verdict.replay_of == [first.pk]
