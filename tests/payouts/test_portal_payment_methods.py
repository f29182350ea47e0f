"""Settings → Payment Methods: connect a payout account and add a card through the sandbox platform."""

from datetime import timedelta

import pytest
import time_machine
from django.utils import timezone

from orders.models import Order
from payouts.models import CreditCard, PayoutAccount
from tests.orders.factories import make_order
from tests.portal.fixtures import add_card, connect_payout_account, query_of

pytestmark = pytest.mark.django_db

WARNING = "Updating or replacing a payment method while orders are active may cause billing problems"


def test_page_shows_both_sections_unconfigured(portal):
    response = portal.client.get("/portal/settings/payment-methods")
    assert response.status_code == 200
    body = response.content.decode()
    assert "Connect payout account" in body
    assert "Credit Card" in body and "Add card" in body
    assert "No payout account connected yet." in body
    assert WARNING not in body


def test_connect_payout_account_through_the_sandbox(portal):
    response = connect_payout_account(portal.client)
    body = response.content.decode()
    assert response.redirect_chain[-1][0] == "/portal/settings/payment-methods"
    assert "Payout account connected: Sandbox Test Bank ••••6789 (ACH bank transfer)." in body
    account = PayoutAccount.objects.get(partner=portal.partner)
    assert (account.platform, account.method, account.bank_name, account.last4) == (
        "sandbox",
        "ach",
        "Sandbox Test Bank",
        "6789",
    )
    assert account.platform_account_id.startswith("sbx_acct_")


def test_connect_redirect_carries_state_and_return_url(portal):
    start = portal.client.post("/portal/settings/payment-methods/payout/connect")
    params = query_of(start["Location"])
    assert start["Location"].startswith("/sandbox/authorize?")
    assert len(params["state"]) >= 40
    assert params["redirect_uri"] == "http://testserver/portal/settings/payment-methods/payout/return"
    assert params["client_reference"] == portal.partner.public_id


def test_add_card_through_the_sandbox_card_page(portal):
    response = add_card(portal.client)
    assert "Card saved: Visa ••••4242, expires 12/2034." in response.content.decode()
    card = CreditCard.objects.get(partner=portal.partner)
    assert (card.brand, card.last4, card.exp_month, card.exp_year) == ("Visa", "4242", 12, 2034)
    assert card.platform_card_token.startswith("sbx_card_")


def _sandbox_code(client) -> tuple[str, str]:
    start = client.post("/portal/settings/payment-methods/payout/connect")
    sandbox = client.post(
        start["Location"],
        {
            "method": "wire",
            "holder_name": "A",
            "routing_number": "021000021",
            "account_number": "12345678",
            "account_number_confirm": "12345678",
        },
    )
    params = query_of(sandbox["Location"])
    return params["code"], params["state"]


def test_return_with_a_forged_state_saves_nothing(portal):
    code, _ = _sandbox_code(portal.client)
    response = portal.client.get(
        "/portal/settings/payment-methods/payout/return", {"code": code, "state": "forged"}, follow=True
    )
    assert "could not be verified" in response.content.decode()
    assert not PayoutAccount.objects.filter(partner=portal.partner).exists()


def test_return_replayed_saves_once_and_refuses_the_replay(portal):
    code, state = _sandbox_code(portal.client)
    url = "/portal/settings/payment-methods/payout/return"
    first = portal.client.get(url, {"code": code, "state": state}, follow=True)
    assert "Payout account connected: JPMorgan Chase Bank ••••5678 (Wire transfer)." in first.content.decode()
    PayoutAccount.objects.filter(partner=portal.partner).delete()
    replay = portal.client.get(url, {"code": code, "state": state}, follow=True)
    assert "could not be verified" in replay.content.decode()
    assert not PayoutAccount.objects.filter(partner=portal.partner).exists()


def test_state_of_another_session_is_refused(portal, other_portal):
    code, state = _sandbox_code(other_portal.client)
    response = portal.client.get(
        "/portal/settings/payment-methods/payout/return", {"code": code, "state": state}, follow=True
    )
    assert "could not be verified" in response.content.decode()
    assert not PayoutAccount.objects.filter(partner=portal.partner).exists()


def test_state_expires_after_thirty_minutes(portal):
    code, state = _sandbox_code(portal.client)
    with time_machine.travel(timezone.now() + timedelta(minutes=31)):
        response = portal.client.get(
            "/portal/settings/payment-methods/payout/return", {"code": code, "state": state}, follow=True
        )
    assert "could not be verified" in response.content.decode()
    assert not PayoutAccount.objects.filter(partner=portal.partner).exists()


def test_canceled_authorization_changes_nothing(portal):
    start = portal.client.post("/portal/settings/payment-methods/payout/connect")
    back = portal.client.post(start["Location"], {"cancel": "1"})
    response = portal.client.get(back["Location"], follow=True)
    assert "the authorization was canceled" in response.content.decode()
    assert not PayoutAccount.objects.filter(partner=portal.partner).exists()


def test_platform_error_on_return_leaves_the_previous_method(ready_portal):
    before = PayoutAccount.objects.get(partner=ready_portal.partner)
    start = ready_portal.client.post("/portal/settings/payment-methods/payout/connect")
    state = query_of(start["Location"])["state"]
    response = ready_portal.client.get(
        "/portal/settings/payment-methods/payout/return",
        {"code": "sbx_code_unknown", "state": state},
        follow=True,
    )
    assert "The payout account was not connected." in response.content.decode()
    after = PayoutAccount.objects.get(partner=ready_portal.partner)
    assert (after.platform_account_id, after.last4) == (before.platform_account_id, before.last4)


def test_replacing_with_active_orders_shows_the_warning_and_needs_confirmation(ready_portal):
    make_order(ready_portal.partner, status="awaiting_transfer")
    page = ready_portal.client.get("/portal/settings/payment-methods").content.decode()
    assert WARNING in page
    assert 'name="payout-confirm_replace"' in page and 'name="card-confirm_replace"' in page

    refused = ready_portal.client.post("/portal/settings/payment-methods/payout/connect")
    assert refused.status_code == 409
    assert WARNING in refused.content.decode()
    refused_card = ready_portal.client.post("/portal/settings/payment-methods/card/add")
    assert refused_card.status_code == 409

    response = connect_payout_account(ready_portal.client, account_number="987654321", confirm=True)
    assert "Payout account connected" in response.content.decode()
    assert PayoutAccount.objects.get(partner=ready_portal.partner).last4 == "4321"
    response = add_card(ready_portal.client, number="5555 5555 5555 4444", confirm=True)
    assert "Card saved: Mastercard ••••4444" in response.content.decode()


def test_replacing_with_only_settled_orders_needs_no_confirmation(ready_portal):
    for status in Order.SETTLED_STATUSES:
        make_order(ready_portal.partner, status=status)
    page = ready_portal.client.get("/portal/settings/payment-methods").content.decode()
    assert WARNING not in page
    response = connect_payout_account(ready_portal.client, account_number="11112222")
    assert "Payout account connected" in response.content.decode()


def test_orders_becoming_active_during_an_unconfirmed_replacement_are_caught(ready_portal):
    start = ready_portal.client.post("/portal/settings/payment-methods/card/add")
    make_order(ready_portal.partner, status="accepted")
    sandbox = ready_portal.client.post(
        start["Location"], {"holder_name": "R", "number": "5555555555554444", "expiry": "12/34", "cvc": "123"}
    )
    response = ready_portal.client.get(sandbox["Location"], follow=True)
    assert WARNING in response.content.decode()
    assert CreditCard.objects.get(partner=ready_portal.partner).last4 == "4242"


def test_connect_needs_post(portal):
    assert portal.client.get("/portal/settings/payment-methods/payout/connect").status_code == 405


def test_payment_method_changes_touch_only_the_own_partner(ready_portal, other_portal):
    before = other_portal.partner.payout_account.platform_account_id
    connect_payout_account(ready_portal.client, account_number="55554444")
    other_portal.partner.payout_account.refresh_from_db()
    assert other_portal.partner.payout_account.platform_account_id == before
    assert (
        ready_portal.partner.payout_account.__class__.objects.get(partner=ready_portal.partner).last4
        == "4444"
    )
