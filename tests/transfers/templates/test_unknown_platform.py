"""The first mail of a platform the service does not know, through the admin's pages over HTTP: StagePass's
genuine, DKIM-signed mail to a live order whose platform has no registry entry opens an ``unverified`` case
that says its sender is not a known platform and offers "A new platform" pre-filled from the mail (From
domain, DKIM d= and selector, link hosts). Activating that entry processes the case again (an unparsed case of
its own: the mail is now authentic), and activating the template then receives the order — no staff step on
the order itself."""

import html
import re

import pytest

from orders.models import Order
from orders.transfers.authenticity.dns import use_resolver
from orders.transfers.models import PlatformTemplateVersion, TransferCase
from tests.confirming import post_confirmed
from tests.testmode.conftest import client_for, make_partner_with_both_pairs
from tests.transfers.e2e.conftest import deliver
from tests.transfers.mailkit import make_key, resolver_for, sign
from tests.transfers.staff.stagepass import ACCEPT_HOST, DOMAIN, PLATFORM, stagepass_mail

from .conftest import Shop, staff, template_activated
from .test_four_eyes import CONFIRMED, signed_in

pytestmark = pytest.mark.django_db
V = PlatformTemplateVersion
BASE = "/admin/transfers/platformtemplateversion"


@pytest.fixture
def newcomer(db, django_capture_on_commit_callbacks, settings, dns, stagepass_key) -> Shop:
    """StagePass with no registry entry at all: its events are sold, its mail arrives."""
    settings.PAYMENT_PLATFORM = "sandbox"
    pairs = make_partner_with_both_pairs(name="Harbourside Ticket Exchange")
    return Shop(pairs.partner, client_for(pairs.live), django_capture_on_commit_callbacks, stagepass_key)


def textarea(content: str) -> str:
    return html.unescape(re.search(r'<textarea name="yaml"[^>]*>(.*?)</textarea>', content, re.S).group(1))


def test_the_first_mail_of_an_unknown_platform_leads_to_its_entry_and_the_order_is_received(newcomer):
    alice = signed_in(staff("alice@service.example", "manage_platform_templates"))
    bob = signed_in(staff("bob@service.example", "approve_platform_registry"))
    order = newcomer.order()
    message = newcomer.mail(order)
    assert message.authentic is False
    case = TransferCase.objects.get(message=message, kind="unverified", state="open")
    assert case.details["new_platform"] == {
        "platform": PLATFORM,
        "from_domain": DOMAIN,
        "dkim": [{"d": "stagepass-tickets.com", "s": "sp1"}],
        "link_hosts": [ACCEPT_HOST, "help.stagepass-tickets.com"],
    }

    shown = alice.get(f"/admin/transfers/transfercase/{case.pk}/change/").content.decode()
    assert "the sender is not a known platform" in shown
    assert f"{PLATFORM!r} has no registry entry yet".replace("'", "&#x27;") in shown
    link = f"{BASE}/edit/?case={case.pk}"
    assert f'href="{link}" data-testid="new-platform">A new platform<' in shown

    editor = alice.get(link).content.decode()
    assert "d=stagepass-tickets.com" in editor and "sp1" in editor
    text = textarea(editor)
    assert f"platform: {PLATFORM}\n" in text
    assert (
        f"sender_domains: [{DOMAIN}]" in text
        and f"accept_link_hosts: [{ACCEPT_HOST}, help.stagepass-tickets.com]" in text
    )
    response = alice.post(
        f"{BASE}/edit/",
        {"platform": PLATFORM, "case": str(case.pk), "yaml": text, "reason": "StagePass's first mail"},
    )
    assert response.status_code == 302
    entry = V.objects.get(platform=PLATFORM)
    assert entry.learned_from_id == case.pk and entry.registry_change is True
    assert post_confirmed(bob, f"{BASE}/{entry.pk}/approve/", CONFIRMED).status_code == 302
    with newcomer.capture(execute=True):
        assert post_confirmed(alice, f"{BASE}/{entry.pk}/activate/", CONFIRMED).status_code == 302
    assert V.objects.get(pk=entry.pk).state == "active"

    case.refresh_from_db()
    message.refresh_from_db()
    assert case.state == "resolved", case.details
    assert message.authentic is True
    unparsed = TransferCase.objects.get(message=message, kind="unparsed", state="open")
    assert f"unparsed case #{unparsed.pk}" in case.resolution_reason
    assert Order.objects.get(pk=order.pk).status == "awaiting_transfer"

    template_activated(newcomer, order)
    assert Order.objects.get(pk=order.pk).status == "ticket_received"
    unparsed.refresh_from_db()
    assert unparsed.state == "resolved"


def test_a_sender_the_platform_does_not_list_is_offered_as_an_addition_to_its_entry(
    newcomer, registry_entry, stagepass_key
):
    other = make_key("stagepass-news.example", "n1")
    order = newcomer.order()
    raw = sign(stagepass_mail(order).replace(DOMAIN.encode(), b"mailer.stagepass-news.example"), other)
    with use_resolver(resolver_for(stagepass_key, other)):
        message = deliver(raw, order, newcomer.capture)
    case = TransferCase.objects.get(message=message, kind="unverified", state="open")
    alice = signed_in(staff("alice@service.example", "manage_platform_templates"))
    shown = alice.get(f"/admin/transfers/transfercase/{case.pk}/change/").content.decode()
    assert "the sender is not a known platform" in shown
    assert f'data-testid="new-platform">Add this sender to {PLATFORM}<' in shown
    text = textarea(alice.get(f"{BASE}/edit/?case={case.pk}").content.decode())
    assert "- mail.stagepass-tickets.com\n- mailer.stagepass-news.example\n" in text


def test_a_case_of_a_known_platform_offers_no_new_platform(newcomer, registry_entry):
    case = newcomer.unparsed(newcomer.order())
    alice = signed_in(staff("alice@service.example", "manage_platform_templates"))
    assert (
        "new-platform" not in alice.get(f"/admin/transfers/transfercase/{case.pk}/change/").content.decode()
    )
    assert alice.get(f"{BASE}/edit/?case={case.pk}").status_code == 404


def test_what_the_first_mail_proposes_is_bounded_and_plain(newcomer, stagepass_key):
    order = newcomer.order()
    links = "\r\n".join(
        [f"https://h{n}.stagepass-tickets.com/x" for n in range(30)]
        + ["https://evil.example]\r\nkinds: {}/x", "https://" + "a" * 300 + ".example/x"]
    )
    raw = stagepass_mail(order).replace(b"Questions?", links.encode() + b"\r\nQuestions?")
    message = deliver(sign(raw, stagepass_key), order, newcomer.capture)
    found = TransferCase.objects.get(message=message, kind="unverified").details["new_platform"]
    assert found["link_hosts"] == [ACCEPT_HOST] + [f"h{n}.stagepass-tickets.com" for n in range(9)]
    case = TransferCase.objects.get(message=message, kind="unverified")
    alice = signed_in(staff("alice@service.example", "manage_platform_templates"))
    text = textarea(alice.get(f"{BASE}/edit/?case={case.pk}").content.decode())
    assert text.count("kinds:") == 1 and "evil" not in text
