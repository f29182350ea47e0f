"""The sandbox payment platform: its pages, its one-time codes, idempotent charges and clocked payouts."""

import logging
import re
from datetime import timedelta
from decimal import Decimal
from urllib.parse import parse_qs, urlsplit

import pytest
import time_machine
from django.utils import timezone

from payouts.errors import AuthorizationFailed, PlatformError, PlatformUnavailable
from payouts.platform import get_platform
from payouts.sandbox.models import SandboxAccount, SandboxCard, SandboxCharge, SandboxPayout
from payouts.sandbox.services import (
    luhn_valid,
    routing_number_valid,
    sandbox_account_authorize,
    sandbox_card_save,
)

pytestmark = pytest.mark.django_db

RETURN = "http://testserver/portal/settings/payment-methods/payout/return"


def _authorize(client, *, account_number="000123456789", routing="110000000", method="ach", **extra):
    platform = get_platform("sandbox")
    url = platform.authorize_url(state="st-1", return_url=RETURN, account_reference="ptn_test")
    data = {
        "method": method,
        "holder_name": "Ada Lovelace",
        "routing_number": routing,
        "account_number": account_number,
        "account_number_confirm": account_number,
        **extra,
    }
    return client.post(url, data)


def test_authorize_page_redirects_back_with_code_and_state(client):
    response = _authorize(client, method="wire")
    assert response.status_code == 302
    location = urlsplit(response["Location"])
    assert f"{location.scheme}://{location.netloc}{location.path}" == RETURN
    query = parse_qs(location.query)
    assert query["state"] == ["st-1"]
    account = get_platform("sandbox").complete_authorization(code=query["code"][0], idempotency_key="k1")
    assert account.method == "wire"
    assert account.bank_name == "Sandbox Test Bank"
    assert account.last4 == "6789"
    stored = SandboxAccount.objects.get(account_id=account.account_id)
    assert stored.account_last4 == "6789"
    assert "000123456789" not in str(vars(stored))


def test_authorization_code_is_single_use(client):
    code = parse_qs(urlsplit(_authorize(client)["Location"]).query)["code"][0]
    platform = get_platform("sandbox")
    platform.complete_authorization(code=code, idempotency_key="k1")
    with pytest.raises(AuthorizationFailed):
        platform.complete_authorization(code=code, idempotency_key="k2")


def test_authorization_code_expires_after_ten_minutes(client):
    code = parse_qs(urlsplit(_authorize(client)["Location"]).query)["code"][0]
    with time_machine.travel(timezone.now() + timedelta(minutes=11)), pytest.raises(AuthorizationFailed):
        get_platform("sandbox").complete_authorization(code=code, idempotency_key="k1")


def test_cancel_on_authorize_page_returns_access_denied(client):
    response = _authorize(client, cancel="1")
    query = parse_qs(urlsplit(response["Location"]).query)
    assert query == {"error": ["access_denied"], "state": ["st-1"]}
    assert not SandboxAccount.objects.exists()


@pytest.mark.parametrize(
    "redirect_uri",
    ["http://evil.example/portal/x", "javascript:alert(1)", "http://testserver/admin/", ""],
)
def test_authorize_page_refuses_foreign_redirect_uri(client, redirect_uri):
    response = client.get(
        "/sandbox/authorize", {"client_reference": "ptn_x", "state": "s", "redirect_uri": redirect_uri}
    )
    assert response.status_code == 400
    assert b"not valid" in response.content


def test_authorize_page_rejects_bad_routing_and_mismatched_numbers(client):
    response = _authorize(client, routing="123456789", account_number_confirm="000123456780")
    assert response.status_code == 200
    assert b"valid 9-digit ABA routing number" in response.content
    assert b"do not match" in response.content
    for name in (b"account_number", b"account_number_confirm", b"routing_number"):
        field = re.search(rb'<input[^>]*name="' + name + rb'"[^>]*>', response.content).group(0)
        assert b"value=" not in field  # the typed numbers are never echoed back
    assert not SandboxAccount.objects.exists()


def _card(client, number="4242 4242 4242 4242", expiry="12 / 30", **extra):
    url = get_platform("sandbox").card_setup_url(
        state="st-2", return_url=RETURN, customer_reference="ptn_test", idempotency_key="k"
    )
    return client.post(url, {"holder_name": "Ada", "number": number, "expiry": expiry, "cvc": "123", **extra})


def test_card_page_saves_card_and_returns_setup_id(client):
    response = _card(client)
    assert response.status_code == 302
    query = parse_qs(urlsplit(response["Location"]).query)
    assert query["state"] == ["st-2"]
    sandbox = get_platform("sandbox")
    with pytest.raises(AuthorizationFailed, match="another account"):  # another partner's setup
        sandbox.complete_card_setup(setup_id=query["setup_id"][0], customer_reference="ptn_other")
    card = sandbox.complete_card_setup(setup_id=query["setup_id"][0], customer_reference="ptn_test")
    assert (card.brand, card.last4, card.exp_month, card.exp_year) == ("Visa", "4242", 12, 2030)
    with pytest.raises(AuthorizationFailed):  # a replayed return link saves nothing twice
        sandbox.complete_card_setup(setup_id=query["setup_id"][0], customer_reference="ptn_test")


@pytest.mark.parametrize(
    ("number", "expiry", "message"),
    [
        ("4242 4242 4242 4241", "12 / 30", b"not valid"),
        ("4111 1111 1111 1111", "12 / 30", b"test card numbers only"),
        ("4242 4242 4242 4242", "01 / 20", b"expired"),
        ("4242 4242 4242 4242", "13 / 30", b"between 01 and 12"),
    ],
)
def test_card_page_rejects_bad_cards_without_echoing_the_number(client, number, expiry, message):
    response = _card(client, number=number, expiry=expiry)
    assert response.status_code == 200
    assert message in response.content
    number_input = re.search(rb'<input[^>]*name="number"[^>]*>', response.content).group(0)
    assert b"value=" not in number_input  # the typed number is never echoed back
    assert not SandboxCard.objects.exists()


def _saved_card(number: str) -> str:
    setup = sandbox_card_save(
        customer_reference="ptn_t", holder_name="A", number=number, exp_month=1, exp_year=2031
    )
    return setup.card.token


def test_charge_is_idempotent_on_key():
    platform = get_platform("sandbox")
    token = _saved_card("4242424242424242")
    first = platform.charge_card(
        card_token=token, amount=Decimal("120.50"), currency="USD", idempotency_key="ord_1", description="x"
    )
    again = platform.charge_card(
        card_token=token, amount=Decimal("120.50"), currency="USD", idempotency_key="ord_1", description="x"
    )
    assert first == again
    assert first.status == "succeeded"
    assert SandboxCharge.objects.count() == 1
    with pytest.raises(PlatformError):
        platform.charge_card(
            card_token=token,
            amount=Decimal("99.00"),
            currency="USD",
            idempotency_key="ord_1",
            description="x",
        )


def test_declining_test_card_gives_failed_charge_with_reason():
    token = _saved_card("4000000000000002")
    result = get_platform("sandbox").charge_card(
        card_token=token, amount=Decimal("10.00"), currency="USD", idempotency_key="ord_2", description="x"
    )
    assert result.status == "failed"
    assert result.failure_reason == "Your card was declined."


def test_processing_error_card_makes_platform_unavailable():
    token = _saved_card("4000000000000119")
    with pytest.raises(PlatformUnavailable):
        get_platform("sandbox").charge_card(
            card_token=token,
            amount=Decimal("10.00"),
            currency="USD",
            idempotency_key="ord_3",
            description="x",
        )
    assert not SandboxCharge.objects.exists()


def _account(account_number="000123456789") -> str:
    grant = sandbox_account_authorize(
        reference="ptn_t",
        holder_name="A",
        method="ach",
        routing_number="110000000",
        account_number=account_number,
        redirect_uri=RETURN,
    )
    return grant.account.account_id


def test_payout_moves_in_process_scheduled_paid_with_the_clock(settings):
    settings.SANDBOX_PAYOUT_SCHEDULE_AFTER_SECONDS = 60
    settings.SANDBOX_PAYOUT_PAID_AFTER_SECONDS = 300
    platform = get_platform("sandbox")
    account_id = _account()
    start = timezone.now()
    with time_machine.travel(start, tick=False) as clock:
        state = platform.create_payout(
            account_id=account_id,
            amount=Decimal("50.00"),
            currency="USD",
            idempotency_key="p1",
            description="x",
        )
        assert state.status == "in_process"
        clock.move_to(start + timedelta(seconds=61))
        state = platform.get_payout(account_id=account_id, payout_id=state.payout_id)
        assert state.status == "scheduled"
        assert state.scheduled_for == start + timedelta(seconds=300)
        clock.move_to(start + timedelta(seconds=301))
        state = platform.get_payout(account_id=account_id, payout_id=state.payout_id)
        assert state.status == "paid"
    again = platform.create_payout(
        account_id=account_id, amount=Decimal("50.00"), currency="USD", idempotency_key="p1", description="x"
    )
    assert again.payout_id == state.payout_id
    assert SandboxPayout.objects.count() == 1


def test_payout_to_failing_test_account_fails_with_reason():
    platform = get_platform("sandbox")
    account_id = _account("000111111116")
    state = platform.create_payout(
        account_id=account_id, amount=Decimal("5.00"), currency="USD", idempotency_key="p2", description="x"
    )
    with time_machine.travel(timezone.now() + timedelta(hours=1)):
        state = platform.get_payout(account_id=account_id, payout_id=state.payout_id)
    assert state.status == "failed"
    assert "no account" in state.failure_reason


def test_every_platform_call_is_logged_with_its_idempotency_key(caplog):
    token = _saved_card("4242424242424242")
    with caplog.at_level(logging.INFO, logger="payouts.platform"):
        get_platform("sandbox").charge_card(
            card_token=token,
            amount=Decimal("1.00"),
            currency="USD",
            idempotency_key="ord_logged",
            description="x",
        )
    records = [r for r in caplog.records if r.name == "payouts.platform"]
    assert len(records) == 1
    assert records[0].operation == "charge_card"
    assert records[0].platform_idempotency_key == "ord_logged"
    assert records[0].outcome == "ok"
    assert "ord_logged" in records[0].getMessage()


def test_checksums():
    assert routing_number_valid("110000000") and routing_number_valid("021000021")
    assert not routing_number_valid("110000001")
    assert luhn_valid("4242424242424242") and not luhn_valid("4242424242424243")


def test_sandbox_pages_are_gone_when_another_platform_is_configured(client, settings):
    settings.PAYMENT_PLATFORM = "stripe"
    assert client.get("/sandbox/").status_code == 404
