"""Stripe for the tests: the library's own HTTP client replaced by a recording one, answering with objects in
the shapes of Stripe's API reference (each with its ``object`` field, so the library builds its own typed
objects from them), and events signed the way Stripe signs them.

Everything above the HTTP client is the real thing: the library builds each request (form encoding, headers,
``Stripe-Version``, ``Idempotency-Key``, ``Stripe-Account``), decides and runs its retries, and raises its
typed errors from the answers; the backend maps them. The client only records what would have gone over the
wire and answers from ``routes``. Its back-off waits are recorded instead of slept.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qsl, urlsplit

import pytest
import stripe

from payouts.platform.stripe import client as stripe_backend

WEBHOOK_SECRET = "whsec_test_c2VjcmV0IGZvciB0aGUgdGVzdHM"
NOW = 1_800_000_000  # a fixed Unix time for the objects' ``created`` fields
NETWORK_FAULT = object()  # an answer that is a dropped connection instead


@dataclass
class Recorded:
    method: str
    url: str
    path: str
    query: list[tuple[str, str]]
    headers: dict[str, str]  # lower-cased names
    form: list[tuple[str, str]]

    @property
    def params(self) -> dict[str, str]:
        return dict(self.form or self.query)


@dataclass
class RecordingHTTPClient(stripe.HTTPClient):
    """Answers ``routes[(METHOD, path)]``: a list of ``(status, body)`` or ``NETWORK_FAULT``, used in turn,
    the last one again for every later call."""

    name = "recording"
    routes: dict[tuple[str, str], list[Any]] = field(default_factory=dict)
    requests: list[Recorded] = field(default_factory=list)
    backoffs: list[float] = field(default_factory=list)

    def __post_init__(self) -> None:
        super().__init__()

    def answer(self, method: str, path: str, *answers: Any) -> None:
        self.routes[(method.upper(), path)] = list(answers)

    def request(self, method, url, headers, post_data=None, *, _usage=None):
        parts = urlsplit(url)
        body = post_data.decode() if isinstance(post_data, bytes) else (post_data or "")
        self.requests.append(
            Recorded(
                method=method.upper(),
                url=url,
                path=parts.path,
                query=parse_qsl(parts.query),
                headers={k.lower(): v for k, v in (headers or {}).items()},
                form=parse_qsl(body),
            )
        )
        queue = self.routes.get((method.upper(), parts.path))
        if not queue:
            answer: Any = (404, error("invalid_request_error", f"Unrecognized request URL ({parts.path})."))
        else:
            answer = queue.pop(0) if len(queue) > 1 else queue[0]
        if answer is NETWORK_FAULT:
            raise stripe.APIConnectionError("Connection reset by peer", should_retry=True)
        status, payload = answer
        return (
            json.dumps(payload),
            status,
            {"request-id": f"req_{len(self.requests)}", "content-type": "application/json"},
        )

    def request_stream(self, method, url, headers, post_data=None, *, _usage=None):
        raise NotImplementedError("the backend never streams")

    def close(self) -> None:
        pass

    def _sleep_time_seconds(self, num_retries: int) -> float:
        self.backoffs.append(super()._sleep_time_seconds(num_retries))
        return 0.0

    def posts(self) -> list[Recorded]:
        return [r for r in self.requests if r.method == "POST"]


@pytest.fixture
def recording_stripe(settings, monkeypatch):
    """``PAYMENT_PLATFORM=stripe`` with the library's HTTP client recording; the webhook secret set."""
    recorder = RecordingHTTPClient()
    settings.PAYMENT_PLATFORM = "stripe"
    settings.STRIPE_SECRET_KEY = "sk_test_recording"
    settings.STRIPE_CONNECT_CLIENT_ID = "ca_recording"
    settings.STRIPE_WEBHOOK_SECRET = [WEBHOOK_SECRET]
    monkeypatch.setattr(stripe_backend, "http_client_factory", lambda timeout: recorder)
    stripe_backend.stripe_client.cache_clear()
    yield recorder
    stripe_backend.stripe_client.cache_clear()


# --- signing, as Stripe signs a delivery ------------------------------------------------------------------------------
def sign(body: bytes, *, secret: str = WEBHOOK_SECRET, at: int | None = None) -> str:
    """``Stripe-Signature``: ``t=<unix time>,v1=<hex HMAC-SHA256 of "<t>.<body>" keyed with the secret>``."""
    timestamp = int(time.time()) if at is None else at
    mac = hmac.new(secret.encode(), f"{timestamp}.".encode() + body, hashlib.sha256).hexdigest()
    return f"t={timestamp},v1={mac}"


# --- objects, in the shapes of Stripe's API reference -----------------------------------------------------------------
def error(kind: str, message: str, **fields: Any) -> dict:
    return {"error": {"type": kind, "message": message, **fields}}


def card_error(*, intent_id: str, amount: int) -> dict:
    return error(
        "card_error",
        "Your card was declined.",
        code="card_declined",
        decline_code="generic_decline",
        doc_url="https://stripe.com/docs/error-codes/card-declined",
        payment_intent=payment_intent(intent_id, status="requires_payment_method", amount=amount),
    )


def oauth_token(account_id: str) -> dict:
    return {
        "access_token": "sk_test_connected",
        "livemode": False,
        "refresh_token": "rt_connected",
        "token_type": "bearer",
        "stripe_publishable_key": "pk_test_connected",
        "stripe_user_id": account_id,
        "scope": "read_write",
    }


def bank_accounts(account_id: str, *, bank_name: str = "STRIPE TEST BANK", last4: str = "6789") -> dict:
    return {
        "object": "list",
        "url": f"/v1/accounts/{account_id}/external_accounts",
        "has_more": False,
        "data": [
            {
                "id": "ba_1",
                "object": "bank_account",
                "account": account_id,
                "account_holder_name": "Harbour Tickets",
                "account_holder_type": "company",
                "account_type": None,
                "available_payout_methods": ["standard"],
                "bank_name": bank_name,
                "country": "US",
                "currency": "usd",
                "default_for_currency": True,
                "fingerprint": "1JWtPxqbdX5Gamtc",
                "last4": last4,
                "metadata": {},
                "routing_number": "110000000",
                "status": "new",
            }
        ],
    }


def customer(customer_id: str, *, email: str | None = None) -> dict:
    return {
        "id": customer_id,
        "object": "customer",
        "address": None,
        "balance": 0,
        "created": NOW,
        "currency": None,
        "default_source": None,
        "delinquent": False,
        "description": None,
        "email": email,
        "invoice_prefix": "0759376C",
        "livemode": False,
        "metadata": {},
        "name": None,
        "phone": None,
        "preferred_locales": [],
        "shipping": None,
        "tax_exempt": "none",
        "test_clock": None,
    }


def card_payment_method(method_id: str = "pm_1", *, customer_id: str = "cus_1") -> dict:
    return {
        "id": method_id,
        "object": "payment_method",
        "billing_details": {"address": None, "email": None, "name": None, "phone": None},
        "card": {
            "brand": "visa",
            "checks": {"address_line1_check": None, "address_postal_code_check": None, "cvc_check": "pass"},
            "country": "US",
            "display_brand": "visa",
            "exp_month": 12,
            "exp_year": 2030,
            "fingerprint": "Xt5EWLLDS7FJjR1c",
            "funding": "credit",
            "last4": "4242",
            "networks": {"available": ["visa"], "preferred": None},
            "wallet": None,
        },
        "created": NOW,
        "customer": customer_id,
        "livemode": False,
        "metadata": {},
        "type": "card",
    }


def checkout_session(
    session_id: str = "cs_1",
    *,
    partner_id: str = "ptn_1",
    customer_id: str = "cus_1",
    status: str = "complete",
    setup_intent: dict | None = None,
) -> dict:
    """A Checkout session in setup mode, as ``card_setup_url`` starts it for ``partner_id``."""
    return {
        "id": session_id,
        "object": "checkout.session",
        "cancel_url": "https://p.example/portal/card?state=s&error=canceled",
        "client_reference_id": partner_id,
        "created": NOW,
        "currency": "usd",
        "customer": customer_id,
        "expires_at": NOW + 86400,
        "livemode": False,
        "metadata": {"partner_id": partner_id},
        "mode": "setup",
        "payment_intent": None,
        "payment_status": "no_payment_required",
        "setup_intent": setup_intent,
        "status": status,
        "success_url": "https://p.example/portal/card?state=s&setup_id={CHECKOUT_SESSION_ID}",
        "url": None if status == "complete" else f"https://checkout.stripe.com/c/pay/{session_id}",
    }


def setup_intent(*, status: str = "succeeded", method: dict | None = None) -> dict:
    return {
        "id": "seti_1",
        "object": "setup_intent",
        "created": NOW,
        "customer": "cus_1",
        "livemode": False,
        "metadata": {},
        "payment_method": method if method is not None else card_payment_method(),
        "payment_method_types": ["card"],
        "status": status,
        "usage": "off_session",
    }


def payment_intent(intent_id: str, *, status: str = "succeeded", amount: int = 1000) -> dict:
    return {
        "id": intent_id,
        "object": "payment_intent",
        "amount": amount,
        "amount_capturable": 0,
        "amount_received": amount if status == "succeeded" else 0,
        "capture_method": "automatic_async",
        "client_secret": f"{intent_id}_secret_abc",
        "confirmation_method": "automatic",
        "created": NOW,
        "currency": "usd",
        "customer": "cus_1",
        "description": None,
        "last_payment_error": None,
        "latest_charge": f"ch_{intent_id[3:]}",
        "livemode": False,
        "metadata": {},
        "next_action": None,
        "payment_method": "pm_1",
        "payment_method_types": ["card"],
        "status": status,
    }


def charge(*, intent_id: str, amount: int, amount_refunded: int = 0) -> dict:
    return {
        "id": f"ch_{intent_id[3:]}",
        "object": "charge",
        "amount": amount,
        "amount_captured": amount,
        "amount_refunded": amount_refunded,
        "balance_transaction": "txn_1",
        "captured": True,
        "created": NOW,
        "currency": "usd",
        "customer": "cus_1",
        "description": None,
        "disputed": False,
        "failure_code": None,
        "failure_message": None,
        "livemode": False,
        "metadata": {},
        "paid": True,
        "payment_intent": intent_id,
        "payment_method": "pm_1",
        "refunded": amount_refunded >= amount,
        "status": "succeeded",
    }


def refund(
    refund_id: str,
    *,
    status: str,
    amount: int = 1000,
    intent_id: str = "pi_1",
    failure_reason: str | None = None,
) -> dict:
    found = {
        "id": refund_id,
        "object": "refund",
        "amount": amount,
        "balance_transaction": "txn_2",
        "charge": f"ch_{intent_id[3:]}",
        "created": NOW,
        "currency": "usd",
        "metadata": {},
        "payment_intent": intent_id,
        "reason": None,
        "receipt_number": None,
        "source_transfer_reversal": None,
        "status": status,
        "transfer_reversal": None,
    }
    if failure_reason is not None:
        found["failure_reason"] = failure_reason
    return found


def transfer(transfer_id: str, *, amount: int, destination: str) -> dict:
    return {
        "id": transfer_id,
        "object": "transfer",
        "amount": amount,
        "amount_reversed": 0,
        "balance_transaction": "txn_3",
        "created": NOW,
        "currency": "usd",
        "description": None,
        "destination": destination,
        "destination_payment": "py_1",
        "livemode": False,
        "metadata": {},
        "reversals": {
            "object": "list",
            "data": [],
            "has_more": False,
            "url": f"/v1/transfers/{transfer_id}/reversals",
        },
        "reversed": False,
        "source_transaction": None,
        "source_type": "card",
        "transfer_group": None,
    }


def payout(
    payout_id: str,
    *,
    status: str,
    amount: int = 1000,
    arrival_date: int = 1798761600,
    failure_code: str | None = None,
    failure_message: str | None = None,
) -> dict:
    return {
        "id": payout_id,
        "object": "payout",
        "amount": amount,
        "application_fee": None,
        "application_fee_amount": None,
        "arrival_date": arrival_date,
        "automatic": False,
        "balance_transaction": "txn_4",
        "created": NOW,
        "currency": "usd",
        "description": None,
        "destination": "ba_1",
        "failure_balance_transaction": "txn_5" if status == "failed" else None,
        "failure_code": failure_code,
        "failure_message": failure_message,
        "livemode": False,
        "metadata": {},
        "method": "standard",
        "original_payout": None,
        "reconciliation_status": "not_applicable",
        "reversed_by": None,
        "source_type": "card",
        "statement_descriptor": None,
        "status": status,
        "type": "bank_account",
    }


def dispute(
    dispute_id: str,
    *,
    intent_id: str,
    amount: int,
    status: str = "needs_response",
    reason: str = "fraudulent",
    due_by: int = NOW + 7 * 86400,
) -> dict:
    return {
        "id": dispute_id,
        "object": "dispute",
        "amount": amount,
        "balance_transactions": [],
        "charge": f"ch_{intent_id[3:]}",
        "created": NOW,
        "currency": "usd",
        "evidence": {"customer_name": None, "product_description": None, "uncategorized_text": None},
        "evidence_details": {
            "due_by": due_by,
            "has_evidence": False,
            "past_due": False,
            "submission_count": 0,
        },
        "is_charge_refundable": True,
        "livemode": False,
        "metadata": {},
        "payment_intent": intent_id,
        "reason": reason,
        "status": status,
    }


def event(kind: str, obj: Mapping[str, Any], *, event_id: str = "evt_1", account: str | None = None) -> dict:
    """A snapshot event; ``account`` for a connected account's (Stripe leaves it out of the platform's own)."""
    found = {
        "id": event_id,
        "object": "event",
        "api_version": stripe.api_version,
        "created": int(time.time()),
        "data": {"object": dict(obj)},
        "livemode": False,
        "pending_webhooks": 1,
        "request": {"id": None, "idempotency_key": None},
        "type": kind,
    }
    if account is not None:
        found["account"] = account
    return found
