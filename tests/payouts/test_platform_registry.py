"""A payment platform is one folder registered by name: a platform defined only in the tests
(``tests/payouts/stub_platform.py``), registered with one line, is what the setting selects, its calls are logged
by the wrapper that names none of them, and its events endpoint is served and handled by the shared code."""

from __future__ import annotations

import importlib
import logging
from decimal import Decimal

import pytest
from django.core.exceptions import ImproperlyConfigured
from django.test import Client
from django.urls import clear_url_caches, reverse

import config.urls
import payouts.platform.urls
from payouts.errors import PlatformError, PlatformUnavailable
from payouts.models import PlatformEvent
from payouts.platform import LoggedPlatform, get_platform
from payouts.platform.base import ChargeRequest
from payouts.platform.registry import PLATFORMS
from tests.payouts import stub_platform
from tests.payouts.stub_platform import DECLINING_CARD, UNAVAILABLE_KEY, StubPlatform


def _urls_again() -> None:
    importlib.reload(payouts.platform.urls)
    importlib.reload(config.urls)
    clear_url_caches()


@pytest.fixture
def stub(settings):
    PLATFORMS["stub"] = "tests.payouts.stub_platform"  # the one line that adds a platform
    settings.PAYMENT_PLATFORM = "stub"
    _urls_again()
    yield
    del PLATFORMS["stub"]
    _urls_again()


def _platform_lines(caplog) -> list[logging.LogRecord]:
    return [r for r in caplog.records if r.name == "payouts.platform"]


def test_the_setting_selects_the_registered_platform_wrapped_in_the_logging(stub):
    platform = get_platform()
    assert isinstance(platform, LoggedPlatform)
    assert isinstance(platform.backend, StubPlatform)
    assert platform.name == "stub"


def test_a_name_not_registered_is_refused_naming_those_that_are(settings):
    settings.PAYMENT_PLATFORM = "stub"
    with pytest.raises(
        ImproperlyConfigured, match="Unknown PAYMENT_PLATFORM 'stub': use 'sandbox' or 'stripe'"
    ):
        get_platform()


def test_its_calls_are_logged_by_the_wrapper_with_outcome_and_safe_fields_only(stub, caplog):
    platform = get_platform()
    caplog.set_level(logging.INFO, logger="payouts.platform")
    charge = dict(amount=Decimal("12.50"), currency="USD", description="Order ord_1")
    assert (
        platform.charge_card(card_token="card_secret", idempotency_key="k_ok", **charge).status == "succeeded"
    )
    assert (
        platform.charge_card(card_token=DECLINING_CARD, idempotency_key="k_declined", **charge).status
        == "failed"
    )
    with pytest.raises(PlatformUnavailable):
        platform.charge_card(card_token="card_secret", idempotency_key=UNAVAILABLE_KEY, **charge)
    with pytest.raises(PlatformError):
        platform.get_refund(refund_id="re_1")
    platform.create_payout(
        account_id="acct_1", amount=Decimal("9.00"), currency="USD", idempotency_key="p_1", description="x"
    )

    lines = _platform_lines(caplog)
    assert [(r.operation, r.outcome) for r in lines] == [
        ("charge_card", "ok"),
        ("charge_card", "declined"),
        ("charge_card", "unavailable"),
        ("get_refund", "refused"),
        ("create_payout", "ok"),
    ]
    assert all(r.platform == "stub" for r in lines)
    first = lines[0]
    assert first.getMessage() == "payment platform call charge_card ok idempotency_key=k_ok"
    fields = {k: v for k, v in vars(first).items() if k.startswith("platform_")}
    assert fields == {
        "platform_idempotency_key": "k_ok",
        "platform_amount": "12.50",
        "platform_currency": "USD",
    }
    assert lines[3].getMessage() == "payment platform call get_refund refused idempotency_key=-"
    assert vars(lines[3])["platform_refund_id"] == "re_1"
    assert vars(lines[4])["platform_account_id"] == "acct_1"
    assert not any("card_secret" in str(vars(r)) or "Order ord_1" in str(vars(r)) for r in lines)


def test_a_batch_is_one_call_and_a_line_per_charge_and_what_asks_nothing_is_not_logged(stub, caplog):
    platform = get_platform()
    caplog.set_level(logging.INFO, logger="payouts.platform")
    requests = [
        ChargeRequest(
            card_token=token, amount=Decimal("1.00"), currency="USD", idempotency_key=key, description="x"
        )
        for token, key in (("card_a", "b1"), (DECLINING_CARD, "b2"), ("card_c", UNAVAILABLE_KEY))
    ]
    answers = platform.charge_cards(requests)
    assert isinstance(answers[2], PlatformUnavailable)
    assert platform.form_action_origins() == ["https://stub.invalid"]
    assert platform.test_mode_cards(wanted=[]) == {}
    with pytest.raises(PlatformError, match="The stub platform has no test payment methods"):
        platform.create_test_methods(
            reference="r", holder_name="h", card_number="4242", account_number="6789"
        )
    lines = _platform_lines(caplog)
    assert [(r.operation, r.outcome, r.getMessage().rsplit("=", 1)[1]) for r in lines] == [
        ("charge_card", "ok", "b1"),
        ("charge_card", "declined", "b2"),
        ("charge_card", "unavailable", UNAVAILABLE_KEY),
        ("create_test_methods", "refused", "-"),
    ]


@pytest.mark.django_db
def test_its_events_endpoint_is_served_and_the_shared_handling_stores_each_event_once(stub):
    assert reverse("stub:events") == "/payments/stub/events"
    event = {"id": "evt_stub_1", "type": "payout.changed", "payout_id": "po_unknown", "status": "paid"}
    first = Client().post("/payments/stub/events", event, content_type="application/json")
    again = Client().post("/payments/stub/events", event, content_type="application/json")
    assert first.json() == {"received": "evt_stub_1", "duplicate": False}
    assert again.json() == {"received": "evt_stub_1", "duplicate": True}
    stored = PlatformEvent.objects.get()
    assert (stored.platform, stored.type) == ("stub", "payout.changed")
    assert stored.outcome == "payout po_unknown: none in flight here, nothing moved"


@pytest.mark.django_db
def test_the_urls_of_a_platform_no_longer_registered_are_gone(stub):
    del PLATFORMS["stub"]
    try:
        _urls_again()
        assert Client().post("/payments/stub/events", {}, content_type="application/json").status_code == 404
    finally:
        PLATFORMS["stub"] = stub_platform.__name__
