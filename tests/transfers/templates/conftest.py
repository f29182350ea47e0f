"""Platform templates made by staff: the StagePass platform (``tests/transfers/staff/stagepass.py``) with its
own DKIM key for ``stagepass-tickets.com``, published by a test resolver (no lookup leaves the process); its
registry entry made under four eyes (proposed by one staff member, approved by another, activated) with no
template yet, so its authentic mail opens ``unparsed`` cases; live orders of it made through the API."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Permission

from orders.models import Order
from orders.transfers.authenticity.dns import use_resolver
from orders.transfers.models import InboundMessage, PlatformTemplateVersion, TransferCase
from orders.transfers.reading import platforms
from orders.transfers.reading.learn import kind_data, learn
from orders.transfers.reading.services import version_activate, version_approve, version_create
from tests.catalog.factories import RowFactory
from tests.testmode.conftest import api_order, client_for, make_partner_with_both_pairs
from tests.transfers.e2e.conftest import deliver
from tests.transfers.mailkit import DkimKey, make_key, resolver_for, sign
from tests.transfers.staff.stagepass import PLATFORM, REGISTRY, stagepass_mail
from tests.transfers.templates import bleacherbox as bleacherbox_mail_module

STAFF_PASSWORD = "a long staff pass 2026"


@pytest.fixture
def stagepass_key() -> DkimKey:
    return make_key("stagepass-tickets.com", "sp1")


@pytest.fixture
def dns(stagepass_key):
    with use_resolver(resolver_for(stagepass_key)):
        yield


def staff(username: str, *codenames: str):
    user = get_user_model().objects.create_user(
        username, f"{username}@service.example", STAFF_PASSWORD, is_staff=True
    )
    user.user_permissions.add(*Permission.objects.filter(codename__startswith="view_"))
    user.user_permissions.add(*Permission.objects.filter(codename__in=codenames))
    return user


@pytest.fixture
def registry_entry(db):
    """StagePass's sender domains and accept-link hosts, proposed by Alice, approved by Bob, in force."""
    proposed = version_create(
        platform=PLATFORM, data=REGISTRY, actor="staff:alice@service.example", reason="StagePass goes live"
    )
    version_approve(
        version_pk=proposed.pk, actor="staff:bob@service.example", reason="checked its DKIM domain"
    )
    return version_activate(version_pk=proposed.pk, actor="staff:alice@service.example", reason="in force")


@dataclass
class Shop:
    partner: object
    live: object
    capture: object
    key: DkimKey
    platform: str = PLATFORM
    compose: Callable[..., bytes] = stagepass_mail

    def order(
        self,
        *,
        quantity: int = 2,
        event: str = "Skyline Festival",
        section: str = "101",
        row: str = "A",
        **more,
    ) -> Order:
        """A live order of the shop's platform made through the API and confirmed (``awaiting_transfer``)."""
        row = RowFactory(
            name=row,
            name_display=f"Row {row}",
            available_quantity=50,
            section__name=section,
            section__name_display=f"Section {section}",
            section__event__primary_site=self.platform,
            section__event__name=event,
            **more,
        )
        with self.capture(execute=True):
            data = api_order(self.live, row, quantity=quantity)
        order = Order.objects.select_related("event__venue", "partner").get(order_id=data["order_id"])
        assert order.status == Order.Status.AWAITING_TRANSFER and order.livemode
        return order

    def mail(self, order: Order, **kwargs) -> InboundMessage:
        """The platform's signed mail to ``order`` through the intake, processed after its commit."""
        return deliver(sign(self.compose(order, **kwargs), self.key), order, self.capture)

    def unparsed(self, order: Order, **kwargs) -> TransferCase:
        message = self.mail(order, **kwargs)
        assert message.authentic is True, message.verdicts["auth"]["failures"]
        return TransferCase.objects.get(message=message, kind="unparsed", state="open")


@pytest.fixture
def shop(db, django_capture_on_commit_callbacks, settings, dns, registry_entry, stagepass_key) -> Shop:
    settings.PAYMENT_PLATFORM = "sandbox"
    pairs = make_partner_with_both_pairs(name="Harbourside Ticket Exchange")
    return Shop(pairs.partner, client_for(pairs.live), django_capture_on_commit_callbacks, stagepass_key)


def stagepass_template(order) -> dict:
    """StagePass's template as staff make it: the proposals from one mail of ``order``, taken as they are."""
    mail = platforms.mail_text(stagepass_mail(order))
    learned = learn(
        text=mail.text, subject=mail.subject, order=order, accept_hosts=("accept.stagepass-tickets.com",)
    )
    base = PlatformTemplateVersion.objects.get(platform=PLATFORM, state="active").data
    offer = kind_data(
        subject_pattern=learned.subject_pattern,
        patterns={name: p.pattern for name, p in learned.proposals.items()},
        general_admission=False,
    )
    return {
        **base,
        "start_formats": ["%Y-%m-%d %H:%M", learned.start_format],
        "kinds": {"transfer_offer": offer},
    }


@pytest.fixture
def bleacherbox(db, django_capture_on_commit_callbacks, settings) -> Shop:
    """BleacherBox (``bleacherbox.py``): its own DKIM key and selector published by a test resolver, its registry
    entry proposed by Alice, approved by Bob and in force, with no template yet."""
    key = make_key(bleacherbox_mail_module.DOMAIN, bleacherbox_mail_module.SELECTOR)
    proposed = version_create(
        platform=bleacherbox_mail_module.PLATFORM,
        data=bleacherbox_mail_module.REGISTRY,
        actor="staff:alice@service.example",
        reason="BleacherBox goes live",
    )
    version_approve(
        version_pk=proposed.pk, actor="staff:bob@service.example", reason="checked its DKIM domain"
    )
    version_activate(version_pk=proposed.pk, actor="staff:alice@service.example", reason="in force")
    settings.PAYMENT_PLATFORM = "sandbox"
    pairs = make_partner_with_both_pairs(name="Midwest Seat Exchange")
    with use_resolver(resolver_for(key)):
        yield Shop(
            pairs.partner,
            client_for(pairs.live),
            django_capture_on_commit_callbacks,
            key,
            platform=bleacherbox_mail_module.PLATFORM,
            compose=bleacherbox_mail_module.bleacherbox_mail,
        )


def template_activated(shop: Shop, order) -> PlatformTemplateVersion:
    """StagePass's template learned from ``order``'s mail, saved and activated by Alice; the activation's
    re-processing runs."""
    made = version_create(
        platform=PLATFORM,
        data=stagepass_template(order),
        actor="staff:alice@service.example",
        reason="offers",
    )
    with shop.capture(execute=True):
        return version_activate(version_pk=made.pk, actor="staff:alice@service.example", reason="in force")
