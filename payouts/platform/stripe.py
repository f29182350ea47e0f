"""The ``stripe`` payment platform: Stripe Connect (payout accounts) + Checkout in setup mode / SetupIntents
(cards) + PaymentIntents (charges) + Transfers and Payouts (payouts), over Stripe's HTTP API (``stripe_http``).

Mapping onto ``PaymentPlatform``:
- payout account: Connect OAuth (``/oauth/authorize`` → ``/oauth/token``), then the connected account's
  bank account (``/v1/accounts/{id}/external_accounts``) gives bank name and last 4; method ``ach``.
- card: a Customer per partner and a Checkout Session in ``setup`` mode (Stripe's hosted card page, so the
  number never touches the service); the finished session's SetupIntent names the PaymentMethod. The card
  token kept by the service is ``"<customer id>:<payment method id>"``.
- charge: an off-session, confirmed PaymentIntent; a ``card_error`` (HTTP 402) is a declined charge.
- refund: a Refund of that PaymentIntent (``pending``/``requires_action`` → pending, ``succeeded``,
  ``failed``/``canceled`` → failed with Stripe's ``failure_reason``).
- payout: a Transfer to the connected account, then a Payout on that account to its bank; the payout's
  ``pending → in_transit (arrival_date) → paid | failed`` maps to in process → scheduled → paid | failed.
Every POST carries an ``Idempotency-Key``.
"""

from __future__ import annotations

import logging
from datetime import UTC, datetime
from decimal import ROUND_HALF_UP, Decimal
from typing import Any
from urllib.parse import quote, urlencode, urlsplit

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured

from ..errors import AuthorizationFailed, PlatformError
from .base import (
    CHARGE_FAILED,
    CHARGE_SUCCEEDED,
    PAYOUT_FAILED,
    PAYOUT_IN_PROCESS,
    PAYOUT_PAID,
    PAYOUT_SCHEDULED,
    REFUND_FAILED,
    REFUND_PENDING,
    REFUND_SUCCEEDED,
    ChargeResult,
    ConnectedAccount,
    PaymentPlatform,
    PayoutState,
    RefundResult,
    SavedCard,
)
from .stripe_http import StripeApiError, stripe_request, with_query

logger = logging.getLogger(__name__)

CHECKOUT_ORIGIN = "https://checkout.stripe.com"
BRANDS = {
    "visa": "Visa",
    "mastercard": "Mastercard",
    "amex": "American Express",
    "discover": "Discover",
    "diners": "Diners Club",
    "jcb": "JCB",
    "unionpay": "UnionPay",
}


def to_minor_units(amount: Decimal) -> int:
    return int((amount.quantize(Decimal("0.01"), rounding=ROUND_HALF_UP) * 100).to_integral_exact())


def _timestamp(value: Any) -> datetime | None:
    return datetime.fromtimestamp(int(value), tz=UTC) if value else None


class StripePlatform(PaymentPlatform):
    name = "stripe"

    def __init__(
        self,
        *,
        secret_key: str,
        connect_client_id: str,
        api_base: str = "https://api.stripe.com",
        connect_base: str = "https://connect.stripe.com",
        api_version: str = "2024-06-20",
        timeout: float = 10.0,
    ) -> None:
        for base in (api_base, connect_base):
            if urlsplit(base).scheme not in ("https", "http"):
                raise ImproperlyConfigured(f"Stripe endpoint {base!r} must be an http(s) URL.")
        self.secret_key = secret_key
        self.connect_client_id = connect_client_id
        self.api_base = api_base.rstrip("/")
        self.connect_base = connect_base.rstrip("/")
        self.api_version = api_version
        self.timeout = timeout

    @classmethod
    def from_settings(cls) -> StripePlatform:
        if not settings.STRIPE_SECRET_KEY or not settings.STRIPE_CONNECT_CLIENT_ID:
            raise ImproperlyConfigured(
                "PAYMENT_PLATFORM=stripe needs STRIPE_SECRET_KEY and STRIPE_CONNECT_CLIENT_ID."
            )
        return cls(
            secret_key=settings.STRIPE_SECRET_KEY,
            connect_client_id=settings.STRIPE_CONNECT_CLIENT_ID,
            api_base=settings.STRIPE_API_BASE,
            connect_base=settings.STRIPE_CONNECT_BASE,
            api_version=settings.STRIPE_API_VERSION,
            timeout=settings.PAYMENT_PLATFORM_TIMEOUT_SECONDS,
        )

    # --- HTTP -------------------------------------------------------------------------------------------
    def _request(
        self,
        method: str,
        path: str,
        *,
        params: dict[str, Any] | None = None,
        idempotency_key: str | None = None,
        stripe_account: str | None = None,
        base: str | None = None,
    ) -> dict[str, Any]:
        return stripe_request(
            method,
            (base or self.api_base) + path,
            params=params,
            secret_key=self.secret_key,
            api_version=self.api_version,
            timeout=self.timeout,
            idempotency_key=idempotency_key,
            stripe_account=stripe_account,
        )

    # --- payout account -----------------------------------------------------------------------------------
    def authorize_url(self, *, state: str, return_url: str, account_reference: str, email: str = "") -> str:
        query = {
            "response_type": "code",
            "client_id": self.connect_client_id,
            "scope": "read_write",
            "state": state,
            "redirect_uri": return_url,
        }
        if email:
            query["stripe_user[email]"] = email
        return f"{self.connect_base}/oauth/authorize?{urlencode(query)}"

    def complete_authorization(self, *, code: str, idempotency_key: str) -> ConnectedAccount:
        try:
            token = self._request(
                "POST",
                "/oauth/token",
                params={"grant_type": "authorization_code", "code": code},
                idempotency_key=idempotency_key,
                base=self.connect_base,
            )
        except StripeApiError as exc:
            raise AuthorizationFailed(f"Stripe did not confirm the authorization: {exc.message}") from exc
        account_id = token.get("stripe_user_id")
        if not account_id:
            raise AuthorizationFailed("Stripe's answer named no connected account.")
        banks = self._request(
            "GET",
            f"/v1/accounts/{quote(account_id, safe='')}/external_accounts",
            params={"object": "bank_account", "limit": 1},
        )
        data = banks.get("data") or []
        if not data:
            raise AuthorizationFailed(
                "The Stripe account has no bank account for payouts yet. Add one in Stripe, then connect again."
            )
        bank = data[0]
        return ConnectedAccount(
            account_id=account_id,
            method="ach",
            bank_name=bank.get("bank_name") or "Bank account",
            last4=str(bank.get("last4", ""))[-4:],
        )

    # --- card -----------------------------------------------------------------------------------------------
    def card_setup_url(
        self,
        *,
        state: str,
        return_url: str,
        customer_reference: str,
        email: str = "",
        existing_card_token: str = "",
        idempotency_key: str,
    ) -> str:
        customer_id = existing_card_token.partition(":")[0] if existing_card_token else ""
        if not customer_id:
            customer = self._request(
                "POST",
                "/v1/customers",
                params={
                    "email": email or None,
                    "description": f"Partner {customer_reference}",
                    "metadata": {"partner_id": customer_reference},
                },
                idempotency_key=f"{idempotency_key}:customer",
            )
            customer_id = customer["id"]
        state_query = urlencode({"state": state})
        session = self._request(
            "POST",
            "/v1/checkout/sessions",
            params={
                "mode": "setup",
                "customer": customer_id,
                "currency": "usd",
                "payment_method_types": ["card"],
                "client_reference_id": customer_reference,
                # Stripe fills in {CHECKOUT_SESSION_ID}; the braces must stay literal.
                "success_url": with_query(return_url, state_query + "&setup_id={CHECKOUT_SESSION_ID}"),
                "cancel_url": with_query(return_url, state_query + "&error=canceled"),
                "metadata": {"partner_id": customer_reference},
            },
            idempotency_key=f"{idempotency_key}:session",
        )
        return session["url"]

    def complete_card_setup(self, *, setup_id: str, customer_reference: str) -> SavedCard:
        try:
            session = self._request(
                "GET",
                f"/v1/checkout/sessions/{quote(setup_id, safe='')}",
                params={"expand": ["setup_intent.payment_method"]},
            )
        except StripeApiError as exc:
            raise AuthorizationFailed(f"Stripe did not confirm the card: {exc.message}") from exc
        # The session must be the one this partner started (card_setup_url sets both): a partner returning
        # with someone else's session id would otherwise save that customer's card as their own.
        metadata = session.get("metadata") if isinstance(session.get("metadata"), dict) else {}
        if (
            session.get("client_reference_id") != customer_reference
            or metadata.get("partner_id") != customer_reference
        ):
            raise AuthorizationFailed(
                "This card setup belongs to another account. Please add the card again."
            )
        intent = session.get("setup_intent") or {}
        if (
            session.get("status") != "complete"
            or not isinstance(intent, dict)
            or intent.get("status") != "succeeded"
        ):
            raise AuthorizationFailed("The card was not saved on Stripe. Please add it again.")
        method = intent.get("payment_method") or {}
        card = method.get("card") if isinstance(method, dict) else None
        if not card:
            raise AuthorizationFailed("Stripe saved no card in this setup. Please add it again.")
        customer = session.get("customer")
        customer_id = customer.get("id") if isinstance(customer, dict) else customer
        return SavedCard(
            card_token=f"{customer_id}:{method['id']}",
            brand=BRANDS.get(card.get("brand", ""), str(card.get("brand", "Card")).title()),
            last4=str(card.get("last4", ""))[-4:],
            exp_month=int(card.get("exp_month", 0)),
            exp_year=int(card.get("exp_year", 0)),
        )

    # --- money --------------------------------------------------------------------------------------------------
    def charge_card(
        self, *, card_token: str, amount: Decimal, currency: str, idempotency_key: str, description: str
    ) -> ChargeResult:
        customer_id, _, payment_method_id = card_token.partition(":")
        if not customer_id or not payment_method_id:
            raise PlatformError("The card on file is not a Stripe card; add the card again.")
        try:
            intent = self._request(
                "POST",
                "/v1/payment_intents",
                params={
                    "amount": to_minor_units(amount),
                    "currency": currency.lower(),
                    "customer": customer_id,
                    "payment_method": payment_method_id,
                    "off_session": True,
                    "confirm": True,
                    "description": description,
                    "metadata": {"idempotency_key": idempotency_key},
                },
                idempotency_key=idempotency_key,
            )
        except StripeApiError as exc:
            if exc.type != "card_error":
                raise
            intent_id = (exc.error.get("payment_intent") or {}).get("id", "")
            return ChargeResult(charge_id=intent_id, status=CHARGE_FAILED, failure_reason=exc.message)
        if intent.get("status") in ("succeeded", "processing"):
            return ChargeResult(charge_id=intent["id"], status=CHARGE_SUCCEEDED)
        return ChargeResult(
            charge_id=intent.get("id", ""),
            status=CHARGE_FAILED,
            failure_reason="The card needs the cardholder's authentication; add the card again in the portal.",
        )

    def refund_charge(
        self, *, charge_id: str, amount: Decimal, currency: str, idempotency_key: str, reason: str
    ) -> RefundResult:
        if not charge_id:
            raise PlatformError("The charge has no Stripe PaymentIntent id; it cannot be refunded.")
        # The refund's currency is the PaymentIntent's: Stripe takes no currency here.
        refund = self._request(
            "POST",
            "/v1/refunds",
            params={
                "payment_intent": charge_id,
                "amount": to_minor_units(amount),
                "metadata": {"idempotency_key": idempotency_key, "reason": reason[:500] or None},
            },
            idempotency_key=idempotency_key,
        )
        return self._refund_result(refund)

    def get_refund(self, *, refund_id: str) -> RefundResult:
        return self._refund_result(self._request("GET", f"/v1/refunds/{quote(refund_id, safe='')}"))

    @staticmethod
    def _refund_result(refund: dict[str, Any]) -> RefundResult:
        status = refund.get("status")
        if status == "succeeded":
            return RefundResult(refund_id=refund["id"], status=REFUND_SUCCEEDED)
        if status in ("failed", "canceled"):
            code = refund.get("failure_reason") or status
            return RefundResult(
                refund_id=refund["id"],
                status=REFUND_FAILED,
                failure_reason=f"Stripe reported the refund as {status}: {str(code).replace('_', ' ')}.",
            )
        return RefundResult(refund_id=refund.get("id", ""), status=REFUND_PENDING)

    def create_payout(
        self, *, account_id: str, amount: Decimal, currency: str, idempotency_key: str, description: str
    ) -> PayoutState:
        minor = to_minor_units(amount)
        self._request(
            "POST",
            "/v1/transfers",
            params={
                "amount": minor,
                "currency": currency.lower(),
                "destination": account_id,
                "description": description,
                "metadata": {"idempotency_key": idempotency_key},
            },
            idempotency_key=f"{idempotency_key}:transfer",
        )
        payout = self._request(
            "POST",
            "/v1/payouts",
            params={
                "amount": minor,
                "currency": currency.lower(),
                "description": description,
                "metadata": {"idempotency_key": idempotency_key},
            },
            idempotency_key=f"{idempotency_key}:payout",
            stripe_account=account_id,
        )
        return self._payout_state(payout)

    def get_payout(self, *, account_id: str, payout_id: str) -> PayoutState:
        payout = self._request("GET", f"/v1/payouts/{quote(payout_id, safe='')}", stripe_account=account_id)
        return self._payout_state(payout)

    @staticmethod
    def _payout_state(payout: dict[str, Any]) -> PayoutState:
        status = payout.get("status")
        arrival = _timestamp(payout.get("arrival_date"))
        if status == "paid":
            return PayoutState(
                payout_id=payout["id"], status=PAYOUT_PAID, scheduled_for=arrival, paid_at=arrival
            )
        if status == "in_transit":
            return PayoutState(payout_id=payout["id"], status=PAYOUT_SCHEDULED, scheduled_for=arrival)
        if status in ("failed", "canceled"):
            return PayoutState(
                payout_id=payout["id"],
                status=PAYOUT_FAILED,
                failure_reason=payout.get("failure_message")
                or payout.get("failure_code")
                or f"Payout {status}.",
            )
        return PayoutState(payout_id=payout["id"], status=PAYOUT_IN_PROCESS)

    def form_action_origins(self) -> list[str]:
        parts = urlsplit(self.connect_base)
        return [f"{parts.scheme}://{parts.netloc}", CHECKOUT_ORIGIN]
