"""The platform registry (validated at start-up), the parser of every kind, and the matcher's normalising."""

from datetime import datetime
from pathlib import Path

import pytest
from django.core.exceptions import ImproperlyConfigured

from orders.models import Order
from orders.transfers.reading import platforms
from orders.transfers.reading.matching import normalise, seats_normalise
from orders.transfers.reading.platforms import (
    order_platforms,
    parse,
    platform_for_domain,
    registry,
    registry_load,
)
from orders.transfers.testing.corpus import corpus_order

from . import mail

pytestmark = pytest.mark.django_db

SANDBOX_YAML = (Path(platforms.__file__).parent / "sandbox.yaml").read_text()


# An evening of next year's December: the parser reads the start as text, whatever day the suite runs on.
STARTS_AT_LOCAL = f"{datetime.now().year + 1}-12-12 20:00"
SKYLINE = {
    "event": "Skyline Festival",
    "venue": "Harbor Arena",
    "starts_at_local": STARTS_AT_LOCAL,
    "timezone": "America/New_York",
    "section_name": "Lower 101",
    "row_name": "A",
    "quantity": 2,
}


def _order():
    return corpus_order(SKYLINE)


def test_registry_loads_the_sandbox_platform():
    sandbox = registry().get("sandbox")
    assert sandbox.sender_domains == ("sandbox.invalid",)
    assert sandbox.accept_link_hosts == ("accept.sandbox.invalid",)
    assert sandbox.static_barcodes is False
    assert set(sandbox.kinds) == {"transfer_offer", "transfer_accepted", "transfer_canceled"}
    assert platform_for_domain("sandbox.invalid") == "sandbox"
    assert platform_for_domain("mail.sandbox.invalid") == "sandbox"
    assert platform_for_domain("notsandbox.invalid") is None


def test_a_test_order_accepts_the_sandbox_platform_whatever_its_primary_site():
    assert order_platforms(Order(primary_site="ticketmaster", livemode=False)) == ["sandbox"]
    assert order_platforms(Order(primary_site="ticketmaster", livemode=True)) == []
    assert order_platforms(Order(primary_site="sandbox", livemode=True)) == ["sandbox"]


@pytest.mark.parametrize(
    ("broken", "problem"),
    [
        (SANDBOX_YAML.replace("static_barcodes: false", "static_barcodes: maybe"), "static_barcodes"),
        (SANDBOX_YAML.replace("sender_domains: [sandbox.invalid]\n", ""), "sender_domains"),
        (SANDBOX_YAML.replace('subject: "^Your tickets', 'subject: "^(Your tickets'), "does not compile"),
        (SANDBOX_YAML.replace("(?P<value>\\\\d+)", "(\\\\d+)", 1), "no (?P<value>"),
        (SANDBOX_YAML.replace("  transfer_canceled:", "  transfer_refunded:"), "unknown kind"),
        (SANDBOX_YAML.replace("platform: sandbox", "platform: other"), "'platform' must be"),
        ("kinds: [", "not valid YAML"),
    ],
)
def test_a_bad_template_stops_the_start(tmp_path, broken, problem):
    (tmp_path / "sandbox.yaml").write_text(broken)
    with pytest.raises(ImproperlyConfigured, match=problem.replace("(", r"\(").replace("?", r"\?")):
        registry_load(tmp_path)


def test_the_app_validates_the_templates_when_it_starts(monkeypatch, tmp_path):
    from django.apps import apps

    (tmp_path / "sandbox.yaml").write_text("platform: sandbox\n")
    monkeypatch.setattr(platforms, "_registry", None)
    monkeypatch.setattr(platforms, "FOLDER", tmp_path)
    with pytest.raises(ImproperlyConfigured):
        apps.get_app_config("transfers").ready()


@pytest.mark.parametrize("kind", ["transfer_offer", "transfer_accepted", "transfer_canceled"])
def test_parse_recognises_every_kind(kind):
    parsed = parse(mail.compose(_order(), kind, seats=[1, 2]), "sandbox")
    assert parsed.kind == kind and parsed.missing == []
    assert (parsed.event_name, parsed.venue_name, parsed.starts_at_local) == (
        "Skyline Festival",
        "Harbor Arena",
        STARTS_AT_LOCAL,
    )
    assert (parsed.section, parsed.row, parsed.seats, parsed.quantity) == ("Lower 101", "A", ["1", "2"], 2)
    assert "Event: Skyline Festival" in parsed.text


def test_parse_html_only_keeps_the_accept_link_and_never_links_of_other_hosts():
    raw = mail.compose(_order(), seats=[3], html=True)
    parsed = parse(raw, "sandbox")
    assert parsed.accept_link.startswith("https://accept.sandbox.invalid/t/") and parsed.seats == ["3"]
    assert "<p>" not in parsed.text
    foreign = mail.compose(
        _order(),
        body=mail.order_body(_order(), seats=[3]).replace(
            "accept.sandbox.invalid", "accept.sandbox.invalid.evil.example"
        ),
    )
    assert parse(foreign, "sandbox").missing == ["accept_link"]


def test_parse_without_template_or_kind_is_none():
    raw = mail.compose(_order(), seats=[1])
    assert parse(raw, "ticketmaster") is None
    assert parse(raw.replace(b"You've been sent", b"Newsletter:"), "sandbox") is None


def test_normalising_case_prefixes_zeros_and_whitespace():
    assert normalise("Sec. 0101", prefixes=True) == normalise("section 101", prefixes=True) == "101"
    assert normalise("Row  A", prefixes=True) == normalise("a", prefixes=True) == "a"
    assert normalise("  SKYLINE   Festival ") == "skyline festival"
    assert normalise("Lower 007") == "lower 7"
    assert normalise("Rowland", prefixes=True) == "rowland"  # a word, not the prefix
    assert seats_normalise(["01", "1", "A02", "a2", "3"]) == ["1", "a2", "3"]
    assert platforms.seats_split("1-4, 7 & 9") == ["1", "2", "3", "4", "7", "9"]
