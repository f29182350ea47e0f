"""Portal fixtures, for the portal pages of every app: a signed-in portal user of a partner and one of another
partner, and the round trips through the sandbox payment platform's pages."""

from dataclasses import dataclass
from urllib.parse import parse_qs, urlsplit

import pytest
from django.test import Client

from partners.portal_services import portal_user_invite
from payouts.services.progression import payouts_progress
from tests.conftest import login_with_password, make_partner
from tests.orders.factories import make_order

PASSWORD = "correct horse battery staple 42"


@pytest.fixture(autouse=True)
def _fast_password_hashing(settings):
    """Portal tests sign in a lot; a real PBKDF2 per sign-in would only make them slow."""
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@dataclass
class PortalLogin:
    partner: object
    user: object
    client: Client
    creds: object


def portal_login(*, name: str, email: str, payment_methods: bool) -> PortalLogin:
    creds = make_partner(
        name=name, email=f"ops@{name.split()[0].lower()}.example", payment_methods=payment_methods
    )
    portal_user = portal_user_invite(partner=creds.partner, email=email, password=PASSWORD)
    client = Client()
    assert login_with_password(client, username=email, password=PASSWORD)
    return PortalLogin(creds.partner, portal_user.user, client, creds)


@pytest.fixture
def portal(db) -> PortalLogin:
    """A partner with no payment methods yet and its signed-in portal user."""
    return portal_login(name="Acme Tickets", email="alice@acme.example", payment_methods=False)


@pytest.fixture
def ready_portal(db) -> PortalLogin:
    """A partner with a payout account and a card on file and its signed-in portal user."""
    return portal_login(name="Ready Resale", email="rita@ready.example", payment_methods=True)


@pytest.fixture
def other_portal(db) -> PortalLogin:
    return portal_login(name="Other Resale Co", email="bob@other.example", payment_methods=True)


def query_of(url: str) -> dict[str, str]:
    return {key: values[0] for key, values in parse_qs(urlsplit(url).query).items()}


def connect_payout_account(client: Client, *, account_number: str = "000123456789", confirm: bool = False):
    """Portal → sandbox authorize page → back to the portal, as a browser would. Returns the final response."""
    data = {"payout-confirm_replace": "on"} if confirm else {}
    start = client.post("/portal/settings/payment-methods/payout/connect", data)
    assert start.status_code == 302, start.status_code
    sandbox = client.post(
        start["Location"],
        {
            "method": "ach",
            "holder_name": "Alice Example",
            "routing_number": "110000000",
            "account_number": account_number,
            "account_number_confirm": account_number,
        },
    )
    assert sandbox.status_code == 302, sandbox.content[:300]
    return client.get(sandbox["Location"], follow=True)


def add_card(client: Client, *, number: str = "4242 4242 4242 4242", confirm: bool = False):
    data = {"card-confirm_replace": "on"} if confirm else {}
    start = client.post("/portal/settings/payment-methods/card/add", data)
    assert start.status_code == 302, start.status_code
    sandbox = client.post(
        start["Location"],
        {"holder_name": "Alice Example", "number": number, "expiry": "12 / 34", "cvc": "123"},
    )
    assert sandbox.status_code == 302, sandbox.content[:300]
    return client.get(sandbox["Location"], follow=True)


@pytest.fixture
def two_partners(ready_portal, other_portal):
    """An order past ticket receipt, with its payout under way, of each partner: (mine, theirs)."""
    mine = make_order(ready_portal.partner, status="ticket_received", partner_reference="MINE-1")
    theirs = make_order(other_portal.partner, status="ticket_received", partner_reference="THEIRS-1")
    payouts_progress()
    return mine, theirs
