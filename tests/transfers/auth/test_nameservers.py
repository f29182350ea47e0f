"""``INBOUND_DNS_NAMESERVERS``: the DKIM key and the SPF record of a live platform's mail are asked of the
nameservers the operator named (a nameserver of the test's own on 127.0.0.1), never of the system's resolver;
empty, the system's configuration is read; a value that is not an address with an optional port stops the
start-up."""

import pytest
from django.core.exceptions import ImproperlyConfigured

from config.settings_parts.inbound import dns_nameservers
from orders.transfers.authenticity import authenticate as auth
from orders.transfers.authenticity.authenticate import authenticate
from orders.transfers.authenticity.dns import DnsPythonResolver, production_resolver
from tests.transfers.auth.test_dns import Nameserver
from tests.transfers.mailkit import inbound_message, make_key, sign, transfer_email

pytestmark = pytest.mark.django_db

SPF = "v=spf1 ip4:192.0.2.25 -all"


def chunks(txt: bytes) -> list[str]:
    text = txt.decode()
    return [text[i : i + 200] for i in range(0, len(text), 200)]


def test_dkim_and_spf_ask_the_named_nameserver(live_order, settings, monkeypatch):
    monkeypatch.setattr(
        auth, "platform_sender_domains", lambda site: {"tickets.example"} if site == "ticketmaster" else set()
    )
    key = make_key("tickets.example", "k1")
    zone = {key.dns_name: [chunks(key.txt)], "bounce.tickets.example": [[SPF]]}
    raw = sign(transfer_email(live_order.transfer_address, sender="Tickets <transfers@tickets.example>"), key)
    message = inbound_message(
        live_order,
        raw,
        peer="192.0.2.25:41000",
        mail_from="b@bounce.tickets.example",
        helo="mx.tickets.example",
    )
    with Nameserver(zone) as server:
        settings.INBOUND_DNS_NAMESERVERS = (("127.0.0.1", server.port),)
        settings.INBOUND_DNS_TIMEOUT_SECONDS = 2.0
        verdict = authenticate(raw, message=message, order=live_order)
    assert verdict.authentic is True, verdict.failures
    assert verdict.dkim["d"] == "tickets.example" and verdict.dkim["result"] == "pass"
    assert verdict.spf["result"] == "pass", verdict.spf
    assert {key.dns_name, "bounce.tickets.example"} <= set(server.queries)


def test_the_resolver_follows_the_setting_and_defaults_to_the_systems(settings):
    settings.INBOUND_DNS_NAMESERVERS = (("192.0.2.53", 5353), ("2001:db8::53", 53))
    named = production_resolver()
    assert isinstance(named, DnsPythonResolver)
    assert [(n.address, n.port) for n in named._get().nameservers] == [
        ("192.0.2.53", 5353),
        ("2001:db8::53", 53),
    ]
    settings.INBOUND_DNS_NAMESERVERS = ()
    system = production_resolver()
    assert system is not named and system.nameservers is None


def test_the_setting_reads_addresses_with_optional_ports():
    assert dns_nameservers("") == ()
    assert dns_nameservers(" 192.0.2.53, 192.0.2.54:5353 ,[2001:db8::53]:5300, 2001:db8::54") == (
        ("192.0.2.53", 53),
        ("192.0.2.54", 5353),
        ("2001:db8::53", 5300),
        ("2001:db8::54", 53),
    )
    for bad in ("ns1.example", "192.0.2.53:0", "192.0.2.53:70000", "192.0.2.53:dns", "[2001:db8::53"):
        with pytest.raises(ImproperlyConfigured, match="INBOUND_DNS_NAMESERVERS"):
            dns_nameservers(bad)
