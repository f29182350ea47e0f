"""The Stripe backend's requests, checked against a local fake Stripe started by the test (no patching)."""

import json
import threading
from datetime import UTC, datetime
from decimal import Decimal
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, parse_qsl, urlsplit

import pytest

from payouts.errors import AuthorizationFailed, PlatformError, PlatformUnavailable
from payouts.platform import get_platform
from payouts.platform.stripe import StripePlatform, to_minor_units
from payouts.platform.stripe_http import encode_params

pytestmark = pytest.mark.embedded


class FakeStripe:
    """Records every request; answers from ``routes[(method, path)] = (status, body)``."""

    def __init__(self) -> None:
        self.routes: dict[tuple[str, str], tuple[int, dict]] = {}
        self.requests: list[dict] = []
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def _serve(self) -> None:
                parts = urlsplit(self.path)
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length).decode() if length else ""
                fake.requests.append(
                    {
                        "method": self.command,
                        "path": parts.path,
                        "query": parse_qsl(parts.query),
                        "headers": {k.lower(): v for k, v in self.headers.items()},
                        "form": parse_qsl(body),
                    }
                )
                status, payload = fake.routes.get(
                    (self.command, parts.path),
                    (404, {"error": {"type": "invalid_request_error", "message": "No such route"}}),
                )
                raw = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(raw)))
                self.end_headers()
                self.wfile.write(raw)

            do_GET = do_POST = _serve

            def log_message(self, *args) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(
            target=self.server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )
        self.thread.start()

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def fake_stripe():
    fake = FakeStripe()
    yield fake
    fake.stop()


@pytest.fixture
def stripe(fake_stripe):
    return StripePlatform(
        secret_key="sk_test_abc",
        connect_client_id="ca_123",
        api_base=fake_stripe.url,
        connect_base=fake_stripe.url,
        timeout=2,
    )


def test_form_encoding_follows_stripe_conventions():
    assert encode_params(
        {"amount": 1050, "metadata": {"order_id": "ord_1"}, "expand": ["a.b"], "confirm": True, "skip": None}
    ) == [("amount", "1050"), ("metadata[order_id]", "ord_1"), ("expand[]", "a.b"), ("confirm", "true")]
    assert to_minor_units(Decimal("120.30")) == 12030
    assert to_minor_units(Decimal("0.005")) == 1


def test_authorize_url_is_connect_oauth_with_state(stripe, fake_stripe):
    url = stripe.authorize_url(
        state="st_1", return_url="https://p.example/portal/cb", account_reference="ptn_1", email="a@b.c"
    )
    parts = urlsplit(url)
    assert url.startswith(f"{fake_stripe.url}/oauth/authorize?")
    assert parse_qs(parts.query) == {
        "response_type": ["code"],
        "client_id": ["ca_123"],
        "scope": ["read_write"],
        "state": ["st_1"],
        "redirect_uri": ["https://p.example/portal/cb"],
        "stripe_user[email]": ["a@b.c"],
    }
    assert fake_stripe.requests == []  # building the URL calls nothing


def test_complete_authorization_exchanges_code_and_reads_the_bank_account(stripe, fake_stripe):
    fake_stripe.routes[("POST", "/oauth/token")] = (200, {"stripe_user_id": "acct_9", "scope": "read_write"})
    fake_stripe.routes[("GET", "/v1/accounts/acct_9/external_accounts")] = (
        200,
        {"data": [{"id": "ba_1", "bank_name": "STRIPE TEST BANK", "last4": "6789"}]},
    )
    account = stripe.complete_authorization(code="ac_code", idempotency_key="ptn_1:authorize:x")
    assert (account.account_id, account.method, account.bank_name, account.last4) == (
        "acct_9",
        "ach",
        "STRIPE TEST BANK",
        "6789",
    )
    token_call, bank_call = fake_stripe.requests
    assert token_call["method"] == "POST"
    assert token_call["form"] == [("grant_type", "authorization_code"), ("code", "ac_code")]
    assert token_call["headers"]["authorization"] == "Bearer sk_test_abc"
    assert token_call["headers"]["idempotency-key"] == "ptn_1:authorize:x"
    assert token_call["headers"]["content-type"] == "application/x-www-form-urlencoded"
    assert bank_call["query"] == [("object", "bank_account"), ("limit", "1")]
    assert bank_call["headers"]["stripe-version"] == "2024-06-20"


def test_oauth_error_becomes_authorization_failed(stripe, fake_stripe):
    fake_stripe.routes[("POST", "/oauth/token")] = (
        400,
        {"error": "invalid_grant", "error_description": "Authorization code expired"},
    )
    with pytest.raises(AuthorizationFailed, match="Authorization code expired"):
        stripe.complete_authorization(code="old", idempotency_key="k")


def test_card_setup_creates_customer_and_checkout_session_in_setup_mode(stripe, fake_stripe):
    fake_stripe.routes[("POST", "/v1/customers")] = (200, {"id": "cus_1"})
    fake_stripe.routes[("POST", "/v1/checkout/sessions")] = (
        200,
        {"id": "cs_1", "url": "https://checkout.stripe.com/c/pay/cs_1"},
    )
    url = stripe.card_setup_url(
        state="st_2",
        return_url="https://p.example/portal/card",
        customer_reference="ptn_1",
        email="a@b.c",
        idempotency_key="ptn_1:card-setup:st_2",
    )
    assert url == "https://checkout.stripe.com/c/pay/cs_1"
    customer, session = fake_stripe.requests
    assert customer["headers"]["idempotency-key"] == "ptn_1:card-setup:st_2:customer"
    assert ("metadata[partner_id]", "ptn_1") in customer["form"]
    form = dict(session["form"])
    assert form["mode"] == "setup"
    assert form["customer"] == "cus_1"
    assert form["payment_method_types[]"] == "card"
    assert form["success_url"] == "https://p.example/portal/card?state=st_2&setup_id={CHECKOUT_SESSION_ID}"
    assert form["cancel_url"] == "https://p.example/portal/card?state=st_2&error=canceled"
    assert session["headers"]["idempotency-key"] == "ptn_1:card-setup:st_2:session"


def test_card_setup_reuses_the_customer_of_the_card_on_file(stripe, fake_stripe):
    fake_stripe.routes[("POST", "/v1/checkout/sessions")] = (
        200,
        {"id": "cs_2", "url": "https://checkout.stripe.com/x"},
    )
    stripe.card_setup_url(
        state="s",
        return_url="https://p/portal/c",
        customer_reference="ptn_1",
        existing_card_token="cus_7:pm_1",
        idempotency_key="k",
    )
    assert [r["path"] for r in fake_stripe.requests] == ["/v1/checkout/sessions"]
    assert dict(fake_stripe.requests[0]["form"])["customer"] == "cus_7"


def _completed_session(
    session_id: str = "cs_1", *, partner_id: str = "ptn_1", customer: str = "cus_1"
) -> dict:
    """A finished Checkout session in setup mode, as card_setup_url started it for ``partner_id``."""
    return {
        "id": session_id,
        "status": "complete",
        "customer": customer,
        "client_reference_id": partner_id,
        "metadata": {"partner_id": partner_id},
        "setup_intent": {
            "id": "seti_1",
            "status": "succeeded",
            "payment_method": {
                "id": "pm_1",
                "card": {"brand": "visa", "last4": "4242", "exp_month": 12, "exp_year": 2030},
            },
        },
    }


def test_complete_card_setup_reads_brand_last4_expiry(stripe, fake_stripe):
    fake_stripe.routes[("GET", "/v1/checkout/sessions/cs_1")] = (200, _completed_session())
    card = stripe.complete_card_setup(setup_id="cs_1", customer_reference="ptn_1")
    assert (card.card_token, card.brand, card.last4, card.exp_month, card.exp_year) == (
        "cus_1:pm_1",
        "Visa",
        "4242",
        12,
        2030,
    )
    assert fake_stripe.requests[0]["query"] == [("expand[]", "setup_intent.payment_method")]


def test_incomplete_checkout_session_is_refused(stripe, fake_stripe):
    fake_stripe.routes[("GET", "/v1/checkout/sessions/cs_1")] = (
        200,
        {"id": "cs_1", "status": "open", "setup_intent": None},
    )
    with pytest.raises(AuthorizationFailed):
        stripe.complete_card_setup(setup_id="cs_1", customer_reference="ptn_1")


@pytest.mark.parametrize(
    "session",
    [
        _completed_session(partner_id="ptn_other", customer="cus_other"),
        # Either mark of another partner is enough to refuse it.
        {**_completed_session(), "client_reference_id": "ptn_other"},
        {**_completed_session(), "metadata": {"partner_id": "ptn_other"}},
        {**_completed_session(), "client_reference_id": None, "metadata": {}},
    ],
)
def test_a_checkout_session_started_by_another_partner_is_refused(stripe, fake_stripe, session):
    fake_stripe.routes[("GET", "/v1/checkout/sessions/cs_1")] = (200, session)
    with pytest.raises(AuthorizationFailed, match="another account"):
        stripe.complete_card_setup(setup_id="cs_1", customer_reference="ptn_1")


@pytest.mark.django_db
def test_a_partner_returning_with_another_partners_session_stores_nothing(settings, fake_stripe):
    from payouts.models import CreditCard
    from payouts.services.methods import credit_card_save
    from tests.conftest import make_partner

    settings.PAYMENT_PLATFORM = "stripe"
    settings.STRIPE_SECRET_KEY = "sk_test_settings"
    settings.STRIPE_CONNECT_CLIENT_ID = "ca_settings"
    settings.STRIPE_API_BASE = fake_stripe.url
    settings.STRIPE_CONNECT_BASE = fake_stripe.url
    mallory = make_partner(name="Mallory", payment_methods=False, email="m@mallory.example")
    victim = make_partner(name="Victim", payment_methods=False, email="v@victim.example")
    fake_stripe.routes[("GET", "/v1/checkout/sessions/cs_victim")] = (
        200,
        _completed_session("cs_victim", partner_id=victim.partner.public_id, customer="cus_victim"),
    )
    with pytest.raises(AuthorizationFailed):
        credit_card_save(partner=mallory.partner, setup_id="cs_victim")
    assert not CreditCard.objects.exists()
    # The partner who started it finishes it.
    card = credit_card_save(partner=victim.partner, setup_id="cs_victim")
    assert card.platform_card_token == "cus_victim:pm_1"


def test_charge_is_an_off_session_payment_intent_with_the_idempotency_key(stripe, fake_stripe):
    fake_stripe.routes[("POST", "/v1/payment_intents")] = (200, {"id": "pi_1", "status": "succeeded"})
    result = stripe.charge_card(
        card_token="cus_1:pm_1",
        amount=Decimal("120.30"),
        currency="USD",
        idempotency_key="ord_1",
        description="Order ord_1",
    )
    assert (result.charge_id, result.status) == ("pi_1", "succeeded")
    request = fake_stripe.requests[0]
    assert request["headers"]["idempotency-key"] == "ord_1"
    form = dict(request["form"])
    assert form["amount"] == "12030"
    assert form["currency"] == "usd"
    assert (form["customer"], form["payment_method"]) == ("cus_1", "pm_1")
    assert (form["off_session"], form["confirm"]) == ("true", "true")


def test_card_error_is_a_failed_charge_with_stripes_message(stripe, fake_stripe):
    fake_stripe.routes[("POST", "/v1/payment_intents")] = (
        402,
        {
            "error": {
                "type": "card_error",
                "code": "card_declined",
                "decline_code": "generic_decline",
                "message": "Your card was declined.",
                "payment_intent": {"id": "pi_2"},
            }
        },
    )
    result = stripe.charge_card(
        card_token="cus_1:pm_1", amount=Decimal("5"), currency="USD", idempotency_key="ord_2", description="x"
    )
    assert (result.charge_id, result.status, result.failure_reason) == (
        "pi_2",
        "failed",
        "Your card was declined.",
    )


@pytest.mark.parametrize("status", [500, 502, 503, 429, 409])
def test_server_errors_and_rate_limits_are_transient(stripe, fake_stripe, status):
    fake_stripe.routes[("POST", "/v1/payment_intents")] = (
        status,
        {"error": {"type": "api_error", "message": "boom"}},
    )
    with pytest.raises(PlatformUnavailable):
        stripe.charge_card(
            card_token="cus_1:pm_1", amount=Decimal("5"), currency="USD", idempotency_key="k", description="x"
        )


def test_invalid_request_is_a_permanent_platform_error(stripe, fake_stripe):
    fake_stripe.routes[("POST", "/v1/payment_intents")] = (
        400,
        {"error": {"type": "invalid_request_error", "message": "No such customer: 'cus_1'"}},
    )
    with pytest.raises(PlatformError, match="No such customer"):
        stripe.charge_card(
            card_token="cus_1:pm_1", amount=Decimal("5"), currency="USD", idempotency_key="k", description="x"
        )


def test_unreachable_stripe_is_transient():
    closed = StripePlatform(
        secret_key="sk",
        connect_client_id="ca",
        api_base="http://127.0.0.1:9",
        connect_base="http://127.0.0.1:9",
        timeout=1,
    )
    with pytest.raises(PlatformUnavailable):
        closed.get_payout(account_id="acct_1", payout_id="po_1")


def test_payout_is_a_transfer_then_a_payout_on_the_connected_account(stripe, fake_stripe):
    fake_stripe.routes[("POST", "/v1/transfers")] = (200, {"id": "tr_1"})
    fake_stripe.routes[("POST", "/v1/payouts")] = (
        200,
        {"id": "po_1", "status": "pending", "arrival_date": 1798761600},
    )
    state = stripe.create_payout(
        account_id="acct_9",
        amount=Decimal("199.90"),
        currency="USD",
        idempotency_key="ord_1:payout:1",
        description="Order ord_1",
    )
    assert (state.payout_id, state.status) == ("po_1", "in_process")
    transfer, payout = fake_stripe.requests
    assert dict(transfer["form"])["destination"] == "acct_9"
    assert dict(transfer["form"])["amount"] == "19990"
    assert transfer["headers"]["idempotency-key"] == "ord_1:payout:1:transfer"
    assert "stripe-account" not in transfer["headers"]
    assert payout["headers"]["stripe-account"] == "acct_9"
    assert payout["headers"]["idempotency-key"] == "ord_1:payout:1:payout"


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
def test_payout_states_map_onto_the_interface(stripe, fake_stripe, stripe_status, status):
    fake_stripe.routes[("GET", "/v1/payouts/po_1")] = (
        200,
        {
            "id": "po_1",
            "status": stripe_status,
            "arrival_date": 1798761600,
            "failure_message": "The bank account has been closed.",
        },
    )
    state = stripe.get_payout(account_id="acct_9", payout_id="po_1")
    assert state.status == status
    assert fake_stripe.requests[0]["headers"]["stripe-account"] == "acct_9"
    if status == "scheduled":
        assert state.scheduled_for == datetime.fromtimestamp(1798761600, tz=UTC)  # the arrival_date above
    if status == "failed":
        assert state.failure_reason == "The bank account has been closed."


def test_get_platform_builds_stripe_from_settings(settings, fake_stripe):
    settings.STRIPE_SECRET_KEY = "sk_test_settings"
    settings.STRIPE_CONNECT_CLIENT_ID = "ca_settings"
    settings.STRIPE_API_BASE = fake_stripe.url
    fake_stripe.routes[("GET", "/v1/payouts/po_1")] = (
        200,
        {"id": "po_1", "status": "paid", "arrival_date": 1798761600},
    )
    platform = get_platform("stripe")
    assert platform.name == "stripe"
    assert platform.get_payout(account_id="acct_1", payout_id="po_1").status == "paid"
    assert fake_stripe.requests[0]["headers"]["authorization"] == "Bearer sk_test_settings"


def test_stripe_without_keys_is_a_configuration_error(settings):
    from django.core.exceptions import ImproperlyConfigured

    settings.STRIPE_SECRET_KEY = ""
    with pytest.raises(ImproperlyConfigured):
        get_platform("stripe")
