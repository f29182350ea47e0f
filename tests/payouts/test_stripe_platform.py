"""The Stripe backend through Stripe's own library, its HTTP client replaced by a recording one: the requests the
library builds (endpoints, parameters, API version, idempotency keys, connected account), its retries and its
typed errors as the platform interface's."""

from datetime import UTC, datetime
from decimal import Decimal
from urllib.parse import parse_qs, urlsplit

import pytest
import stripe as stripe_library
from django.conf import settings as django_settings
from django.core.exceptions import ImproperlyConfigured

from payouts.errors import AuthorizationFailed, PlatformError, PlatformUnavailable
from payouts.platform import get_platform
from payouts.platform.stripe.backend import StripePlatform, to_minor_units
from tests.payouts.stripe_recording import (
    NETWORK_FAULT,
    bank_accounts,
    card_error,
    card_payment_method,
    checkout_session,
    customer,
    error,
    oauth_token,
    payment_intent,
    payout,
    refund,
    setup_intent,
    transfer,
)


@pytest.fixture
def stripe(recording_stripe) -> StripePlatform:
    platform = get_platform("stripe")
    assert platform.name == "stripe"
    return platform


def charge(platform, key: str = "ord_1", amount: str = "120.30"):
    return platform.charge_card(
        card_token="cus_1:pm_1",
        amount=Decimal(amount),
        currency="USD",
        idempotency_key=key,
        description=f"Order {key}",
    )


def test_minor_units_round_half_up():
    assert to_minor_units(Decimal("120.30")) == 12030
    assert to_minor_units(Decimal("0.005")) == 1


def test_the_api_version_sent_is_the_one_the_pinned_library_is_typed_for():
    # Upgrading the package without the version (or the other way round) fails here, not at Stripe.
    assert stripe_library.api_version == django_settings.STRIPE_API_VERSION


def test_every_call_carries_the_key_and_the_pinned_api_version(stripe, recording_stripe, settings):
    recording_stripe.answer("GET", "/v1/payouts/po_1", (200, payout("po_1", status="paid")))
    stripe.get_payout(account_id="acct_1", payout_id="po_1")
    [request] = recording_stripe.requests
    assert request.url == "https://api.stripe.com/v1/payouts/po_1"
    assert request.headers["authorization"] == "Bearer sk_test_recording"
    assert request.headers["stripe-version"] == settings.STRIPE_API_VERSION
    assert request.headers["stripe-account"] == "acct_1"


def test_one_client_per_process_and_configuration(recording_stripe, settings):
    from payouts.platform.stripe.client import StripeConfig, stripe_client

    first, second = get_platform("stripe"), get_platform("stripe")
    assert first.backend.client is second.backend.client
    settings.STRIPE_SECRET_KEY = "sk_test_rotated"
    assert get_platform("stripe").backend.client is not first.backend.client
    assert stripe_client(StripeConfig.from_settings()).__class__ is stripe_library.StripeClient


def test_authorize_url_is_connect_oauth_with_state(stripe, recording_stripe):
    url = stripe.authorize_url(
        state="st_1", return_url="https://p.example/portal/cb", account_reference="ptn_1", email="a@b.c"
    )
    parts = urlsplit(url)
    assert f"{parts.scheme}://{parts.netloc}{parts.path}" == "https://connect.stripe.com/oauth/authorize"
    assert parse_qs(parts.query) == {
        "response_type": ["code"],
        "client_id": ["ca_recording"],
        "scope": ["read_write"],
        "state": ["st_1"],
        "redirect_uri": ["https://p.example/portal/cb"],
        "stripe_user[email]": ["a@b.c"],
    }
    assert recording_stripe.requests == []  # building the URL calls nothing


def test_complete_authorization_exchanges_code_and_reads_the_bank_account(stripe, recording_stripe):
    recording_stripe.answer("POST", "/oauth/token", (200, oauth_token("acct_9")))
    recording_stripe.answer("GET", "/v1/accounts/acct_9/external_accounts", (200, bank_accounts("acct_9")))
    account = stripe.complete_authorization(code="ac_code", idempotency_key="ptn_1:authorize:x")
    assert (account.account_id, account.method, account.bank_name, account.last4) == (
        "acct_9",
        "ach",
        "STRIPE TEST BANK",
        "6789",
    )
    token_call, bank_call = recording_stripe.requests
    assert token_call.url == "https://connect.stripe.com/oauth/token"
    assert token_call.params == {"grant_type": "authorization_code", "code": "ac_code"}
    assert token_call.headers["idempotency-key"] == "ptn_1:authorize:x"
    assert token_call.headers["content-type"] == "application/x-www-form-urlencoded"
    assert bank_call.query == [("object", "bank_account"), ("limit", "1")]


def test_oauth_error_becomes_authorization_failed(stripe, recording_stripe):
    recording_stripe.answer(
        "POST",
        "/oauth/token",
        (400, {"error": "invalid_grant", "error_description": "Authorization code expired: ac_old"}),
    )
    with pytest.raises(AuthorizationFailed, match="Authorization code expired"):
        stripe.complete_authorization(code="ac_old", idempotency_key="k")


def test_card_setup_creates_customer_and_checkout_session_in_setup_mode(stripe, recording_stripe):
    recording_stripe.answer("POST", "/v1/customers", (200, customer("cus_1", email="a@b.c")))
    recording_stripe.answer("POST", "/v1/checkout/sessions", (200, checkout_session("cs_1", status="open")))
    url = stripe.card_setup_url(
        state="st_2",
        return_url="https://p.example/portal/card",
        customer_reference="ptn_1",
        email="a@b.c",
        idempotency_key="ptn_1:card-setup:st_2",
    )
    assert url == "https://checkout.stripe.com/c/pay/cs_1"
    created, session = recording_stripe.requests
    assert created.headers["idempotency-key"] == "ptn_1:card-setup:st_2:customer"
    assert created.params["metadata[partner_id]"] == "ptn_1"
    assert created.params["email"] == "a@b.c"
    assert session.params["mode"] == "setup"
    assert session.params["customer"] == "cus_1"
    assert session.params["allowed_payment_method_types[0]"] == "card"
    assert (
        session.params["success_url"]
        == "https://p.example/portal/card?state=st_2&setup_id={CHECKOUT_SESSION_ID}"
    )
    assert session.params["cancel_url"] == "https://p.example/portal/card?state=st_2&error=canceled"
    assert session.headers["idempotency-key"] == "ptn_1:card-setup:st_2:session"


def test_card_setup_reuses_the_customer_of_the_card_on_file(stripe, recording_stripe):
    recording_stripe.answer("POST", "/v1/checkout/sessions", (200, checkout_session("cs_2", status="open")))
    stripe.card_setup_url(
        state="s",
        return_url="https://p/portal/c",
        customer_reference="ptn_1",
        existing_card_token="cus_7:pm_1",
        idempotency_key="k",
    )
    assert [r.path for r in recording_stripe.requests] == ["/v1/checkout/sessions"]
    assert recording_stripe.requests[0].params["customer"] == "cus_7"


def test_complete_card_setup_reads_brand_last4_expiry(stripe, recording_stripe):
    recording_stripe.answer(
        "GET", "/v1/checkout/sessions/cs_1", (200, checkout_session(setup_intent=setup_intent()))
    )
    card = stripe.complete_card_setup(setup_id="cs_1", customer_reference="ptn_1")
    assert (card.card_token, card.brand, card.last4, card.exp_month, card.exp_year) == (
        "cus_1:pm_1",
        "Visa",
        "4242",
        12,
        2030,
    )
    assert recording_stripe.requests[0].query == [("expand[0]", "setup_intent.payment_method")]


@pytest.mark.parametrize(
    "session",
    [
        checkout_session(status="open", setup_intent=None),
        checkout_session(setup_intent=setup_intent(status="requires_payment_method")),
        checkout_session(setup_intent=setup_intent(method={**card_payment_method(), "card": None})),
    ],
)
def test_an_unfinished_checkout_session_is_refused(stripe, recording_stripe, session):
    recording_stripe.answer("GET", "/v1/checkout/sessions/cs_1", (200, session))
    with pytest.raises(AuthorizationFailed):
        stripe.complete_card_setup(setup_id="cs_1", customer_reference="ptn_1")


@pytest.mark.parametrize(
    "session",
    [
        checkout_session(partner_id="ptn_other", customer_id="cus_other", setup_intent=setup_intent()),
        # Either mark of another partner is enough to refuse it.
        {**checkout_session(setup_intent=setup_intent()), "client_reference_id": "ptn_other"},
        {**checkout_session(setup_intent=setup_intent()), "metadata": {"partner_id": "ptn_other"}},
        {**checkout_session(setup_intent=setup_intent()), "client_reference_id": None, "metadata": {}},
    ],
)
def test_a_checkout_session_started_by_another_partner_is_refused(stripe, recording_stripe, session):
    recording_stripe.answer("GET", "/v1/checkout/sessions/cs_1", (200, session))
    with pytest.raises(AuthorizationFailed, match="another account"):
        stripe.complete_card_setup(setup_id="cs_1", customer_reference="ptn_1")


@pytest.mark.django_db
def test_a_partner_returning_with_another_partners_session_stores_nothing(recording_stripe):
    from payouts.models import CreditCard
    from payouts.services.methods import credit_card_save
    from tests.conftest import make_partner

    mallory = make_partner(name="Mallory", payment_methods=False, email="m@mallory.example")
    victim = make_partner(name="Victim", payment_methods=False, email="v@victim.example")
    recording_stripe.answer(
        "GET",
        "/v1/checkout/sessions/cs_victim",
        (
            200,
            checkout_session(
                "cs_victim",
                partner_id=victim.partner.public_id,
                customer_id="cus_victim",
                setup_intent=setup_intent(),
            ),
        ),
    )
    with pytest.raises(AuthorizationFailed):
        credit_card_save(partner=mallory.partner, setup_id="cs_victim")
    assert not CreditCard.objects.exists()
    # The partner who started it finishes it.
    card = credit_card_save(partner=victim.partner, setup_id="cs_victim")
    assert card.platform_card_token == "cus_victim:pm_1"


def test_charge_is_an_off_session_payment_intent_with_the_orders_idempotency_key(stripe, recording_stripe):
    recording_stripe.answer("POST", "/v1/payment_intents", (200, payment_intent("pi_1", amount=12030)))
    result = charge(stripe)
    assert (result.charge_id, result.status) == ("pi_1", "succeeded")
    [request] = recording_stripe.requests
    assert request.headers["idempotency-key"] == "ord_1"
    assert request.params == {
        "amount": "12030",
        "currency": "usd",
        "customer": "cus_1",
        "payment_method": "pm_1",
        "off_session": "true",
        "confirm": "true",
        # Unambiguous off the session: no redirect-based method, so Stripe needs no return_url.
        "automatic_payment_methods[enabled]": "true",
        "automatic_payment_methods[allow_redirects]": "never",
        "description": "Order ord_1",
        "metadata[idempotency_key]": "ord_1",
    }


def test_card_error_is_a_failed_charge_with_stripes_message(stripe, recording_stripe):
    recording_stripe.answer("POST", "/v1/payment_intents", (402, card_error(intent_id="pi_2", amount=500)))
    result = charge(stripe, key="ord_2", amount="5")
    assert (result.charge_id, result.status, result.failure_reason) == (
        "pi_2",
        "failed",
        "Your card was declined.",
    )
    assert len(recording_stripe.requests) == 1  # a decline is an answer: never retried


def test_a_network_fault_is_retried_with_the_same_idempotency_key_and_charges_once(stripe, recording_stripe):
    recording_stripe.answer(
        "POST",
        "/v1/payment_intents",
        NETWORK_FAULT,
        (500, error("api_error", "boom")),
        (200, payment_intent("pi_3")),
    )
    assert charge(stripe, key="ord_3").status == "succeeded"
    keys = [r.headers["idempotency-key"] for r in recording_stripe.requests]
    assert keys == ["ord_3", "ord_3", "ord_3"]
    assert len(recording_stripe.backoffs) == 2  # the library's own back-off, between the attempts
    assert [r.headers.get("stripe-should-retry") for r in recording_stripe.requests] == [None, None, None]


@pytest.mark.parametrize(
    "answer",
    [
        NETWORK_FAULT,
        (500, error("api_error", "boom")),
        (503, error("api_error", "down")),
        (409, error("invalid_request_error", "A request with this idempotency key is still in progress.")),
        (429, error("invalid_request_error", "Too many requests", code="rate_limit")),
    ],
)
def test_what_passes_is_unavailable_once_the_retries_are_spent(stripe, recording_stripe, settings, answer):
    recording_stripe.answer("POST", "/v1/payment_intents", answer)
    with pytest.raises(PlatformUnavailable):
        charge(stripe, key="ord_4")
    retried = answer is NETWORK_FAULT or answer[0] in (409, 500, 503)  # Stripe's rule; a 429 is not retried
    attempts = 1 + settings.STRIPE_MAX_NETWORK_RETRIES if retried else 1
    assert len(recording_stripe.requests) == attempts
    assert {r.headers["idempotency-key"] for r in recording_stripe.requests} == {"ord_4"}


def test_a_refused_api_key_is_unavailable_not_a_partners_failure(stripe, recording_stripe, caplog):
    recording_stripe.answer(
        "POST", "/v1/payment_intents", (401, error("invalid_request_error", "Invalid API Key"))
    )
    with pytest.raises(PlatformUnavailable):
        charge(stripe)
    assert "refused the service's API key" in caplog.text


def test_invalid_request_is_a_permanent_platform_error(stripe, recording_stripe):
    recording_stripe.answer(
        "POST",
        "/v1/payment_intents",
        (
            400,
            error(
                "invalid_request_error",
                "No such customer: 'cus_1'",
                code="resource_missing",
                param="customer",
            ),
        ),
    )
    with pytest.raises(PlatformError, match="No such customer") as raised:
        charge(stripe)
    assert not isinstance(raised.value, PlatformUnavailable)


def test_payout_is_a_transfer_then_a_payout_on_the_connected_account(stripe, recording_stripe):
    recording_stripe.answer(
        "POST", "/v1/transfers", (200, transfer("tr_1", amount=19990, destination="acct_9"))
    )
    recording_stripe.answer("POST", "/v1/payouts", (200, payout("po_1", status="pending", amount=19990)))
    state = stripe.create_payout(
        account_id="acct_9",
        amount=Decimal("199.90"),
        currency="USD",
        idempotency_key="ord_1:payout:1",
        description="Order ord_1",
    )
    assert (state.payout_id, state.status) == ("po_1", "in_process")
    moved, paid_out = recording_stripe.requests
    assert moved.params["destination"] == "acct_9"
    assert moved.params["amount"] == "19990"
    assert moved.headers["idempotency-key"] == "ord_1:payout:1:transfer"
    assert "stripe-account" not in moved.headers
    assert paid_out.headers["stripe-account"] == "acct_9"
    assert paid_out.headers["idempotency-key"] == "ord_1:payout:1:payout"


@pytest.mark.parametrize(
    ("stripe_status", "status"),
    [
        ("pending", "in_process"),
        ("in_transit", "scheduled"),
        ("paid", "paid"),
        ("failed", "failed"),
        ("canceled", "failed"),
    ],
)
def test_payout_states_map_onto_the_interface(stripe, recording_stripe, stripe_status, status):
    recording_stripe.answer(
        "GET",
        "/v1/payouts/po_1",
        (
            200,
            payout(
                "po_1",
                status=stripe_status,
                failure_code="account_closed" if status == "failed" else None,
                failure_message="The bank account has been closed." if status == "failed" else None,
            ),
        ),
    )
    state = stripe.get_payout(account_id="acct_9", payout_id="po_1")
    assert state.status == status
    if status == "scheduled":
        assert state.scheduled_for == datetime.fromtimestamp(1798761600, tz=UTC)  # the arrival_date above
    if status == "failed":
        assert state.failure_reason == "The bank account has been closed."


def test_every_post_the_backend_makes_carries_an_idempotency_key_of_our_ids(
    stripe, recording_stripe, settings
):
    recording_stripe.answer("POST", "/oauth/token", (200, oauth_token("acct_9")))
    recording_stripe.answer("GET", "/v1/accounts/acct_9/external_accounts", (200, bank_accounts("acct_9")))
    recording_stripe.answer("POST", "/v1/customers", (200, customer("cus_1")))
    recording_stripe.answer("POST", "/v1/checkout/sessions", (200, checkout_session(status="open")))
    recording_stripe.answer("POST", "/v1/payment_intents", (200, payment_intent("pi_1")))
    recording_stripe.answer("POST", "/v1/refunds", (200, refund("re_1", status="succeeded")))
    recording_stripe.answer(
        "POST", "/v1/transfers", (200, transfer("tr_1", amount=100, destination="acct_9"))
    )
    recording_stripe.answer("POST", "/v1/payouts", (200, payout("po_1", status="pending")))
    stripe.complete_authorization(code="ac", idempotency_key="ptn_1:authorize:a")
    stripe.card_setup_url(
        state="s", return_url="https://p/c", customer_reference="ptn_1", idempotency_key="ptn_1:cs"
    )
    charge(stripe, key="ord_1")
    stripe.refund_charge(
        charge_id="pi_1", amount=Decimal("1"), currency="USD", idempotency_key="ord_1:refund", reason=""
    )
    stripe.create_payout(
        account_id="acct_9",
        amount=Decimal("1"),
        currency="USD",
        idempotency_key="ord_1:payout:1",
        description="x",
    )
    assert {r.headers["stripe-version"] for r in recording_stripe.requests} == {settings.STRIPE_API_VERSION}
    assert [(r.path, r.headers.get("idempotency-key")) for r in recording_stripe.posts()] == [
        ("/oauth/token", "ptn_1:authorize:a"),
        ("/v1/customers", "ptn_1:cs:customer"),
        ("/v1/checkout/sessions", "ptn_1:cs:session"),
        ("/v1/payment_intents", "ord_1"),
        ("/v1/refunds", "ord_1:refund"),
        ("/v1/transfers", "ord_1:payout:1:transfer"),
        ("/v1/payouts", "ord_1:payout:1:payout"),
    ]


def test_stripe_without_keys_is_a_configuration_error(settings):
    settings.STRIPE_SECRET_KEY = ""
    with pytest.raises(ImproperlyConfigured):
        get_platform("stripe")
