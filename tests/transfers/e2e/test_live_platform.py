"""A real platform added as data: the ``ticketsexample`` template in a folder of ``TRANSFER_PLATFORM_DIRS``,
its mail from ``mail.tickets-example.com`` signed by its own key (made here, published by the resolver). A
live order of that platform is received automatically; the same platform's mail for a live order of another
platform is not the order's platform's mail (``unverified``)."""

import pytest
from django.core.exceptions import ImproperlyConfigured

from orders.models import Notification, Order
from orders.transfers.models import InboundMessage
from orders.transfers.reading import platforms
from tests.transfers.mailkit import sign

from .conftest import PLATFORM, PLATFORM_FROM, PLATFORM_YAML, deliver, mail_for, open_cases, snapshot

S, TS, NT = Order.Status, Order.TransferState, Notification.Type
pytestmark = pytest.mark.django_db


def test_the_registry_reads_the_templates_of_the_setting_folders(platform, settings, tmp_path):
    entry = platforms.registry().get(PLATFORM)
    assert entry is not None and entry.sender_domains == ("mail.tickets-example.com",)
    assert platforms.platform_for_domain("mail.tickets-example.com") == PLATFORM
    assert "sandbox" in platforms.registry()  # the shipped templates stay
    settings.TRANSFER_PLATFORM_DIRS = ()
    assert PLATFORM not in platforms.registry()


@pytest.mark.parametrize(
    "layout, problem",
    [
        ({"sandbox.yaml": "shipped"}, "defined twice"),
        ({"broken.yaml": "platform: broken\n"}, "Platform template broken.yaml"),
        (None, "does not exist"),
    ],
)
def test_a_bad_platform_folder_stops_the_start(settings, tmp_path, layout, problem):
    folder = tmp_path / "more"
    if layout is not None:
        folder.mkdir()
        for name, text in layout.items():
            source = (platforms.FOLDER / "sandbox.yaml").read_text() if text == "shipped" else text
            (folder / name).write_text(source)
    settings.TRANSFER_PLATFORM_DIRS = (str(folder),)
    with pytest.raises(ImproperlyConfigured, match=problem):
        platforms.registry()
    settings.TRANSFER_PLATFORM_DIRS = ()
    assert platforms.registry().names() == ["sandbox"]


def test_a_live_order_of_the_platform_is_received_from_its_mail(shop, platform_key):
    order = shop.order(live=True, primary_site=PLATFORM)
    raw = sign(mail_for(order, sender=PLATFORM_FROM), platform_key)
    message = deliver(raw, order, shop.capture)
    assert message.authentic is True, message.verdicts["auth"]["failures"]
    assert (message.platform, message.outcome) == (PLATFORM, InboundMessage.Outcome.MATCHED)
    assert message.verdicts["auth"]["dkim"]["d"] == "tickets-example.com"
    order.refresh_from_db()
    assert (order.status, order.transfer.state, order.transfer.source) == (
        S.TICKET_RECEIVED,
        TS.DETECTED,
        "email",
    )
    assert order.transfer.quantity_detected == order.quantity and open_cases(order) == []
    changed = Notification.objects.get(
        order=order, type=NT.ORDER_STATUS_CHANGED, payload__data__reason="transfer_detected"
    )
    assert changed.livemode is True
    assert shop.live.get(f"/v1/orders/{order.order_id}").json()["data"]["status"] == S.TICKET_RECEIVED


def test_the_platforms_mail_for_a_live_order_of_another_platform_is_unverified(shop, platform_key):
    order = shop.order(live=True, primary_site="ticketmaster")
    raw = sign(mail_for(order, sender=PLATFORM_FROM), platform_key)
    before = snapshot(order)
    message = deliver(raw, order, shop.capture)
    assert snapshot(order) == before
    assert message.authentic is False and open_cases(order) == ["unverified"]
    failures = "\n".join(message.verdicts["auth"]["failures"])
    assert "is not a sender domain of the order's platform 'ticketmaster'" in failures


def test_a_test_order_of_the_platform_takes_its_real_mail_too(shop, platform_key):
    order = shop.order(primary_site=PLATFORM)
    message = deliver(sign(mail_for(order, sender=PLATFORM_FROM), platform_key), order, shop.capture)
    order.refresh_from_db()
    assert message.platform == PLATFORM and order.status == S.TICKET_RECEIVED


def test_the_template_folder_is_the_yaml_staff_write(platform):
    assert PLATFORM_YAML.startswith(f"platform: {PLATFORM}\n")
    assert set(platforms.registry().get(PLATFORM).kinds) == set(platforms.KINDS)
