"""The ``stripe`` payment platform: Stripe Connect (payout accounts) + Checkout in setup mode / SetupIntents
(cards) + PaymentIntents (charges) + Transfers and Payouts (payouts), through Stripe's own library.

Mapping onto ``PaymentPlatform``:
- payout account: Connect OAuth (``/oauth/authorize`` → ``/oauth/token``), then the connected account's
  bank account (``/v1/accounts/{id}/external_accounts``) gives bank name and last 4; method ``ach``.
- card: a Customer per partner and a Checkout Session in ``setup`` mode (Stripe's hosted card page, so the
  number never touches the service); the finished session's SetupIntent names the PaymentMethod. The card
  token kept by the service is ``"<customer id>:<payment method id>"``.
- charge: an off-session, confirmed PaymentIntent of the saved card, with ``automatic_payment_methods`` enabled and
  ``allow_redirects=never`` (no redirect-based method can be chosen, so no ``return_url`` is ever needed, whatever
  the account enables in its dashboard); a ``CardError`` is a declined charge.
- refund: a Refund of that PaymentIntent (``pending``/``requires_action`` → pending, ``succeeded``,
  ``failed``/``canceled`` → failed with Stripe's ``failure_reason``).
- payout: a Transfer to the connected account, then a Payout on that account to its bank; the payout's
  ``pending → in_transit (arrival_date) → paid | failed`` maps to in process → scheduled → paid | failed.

One ``StripeClient`` per process and configuration (``client.stripe_client``): the API version of the settings on every
call, the library's own retries of network faults, 409s and 5xx (``STRIPE_MAX_NETWORK_RETRIES``), and on every
POST an ``Idempotency-Key`` derived from the service's own ids, so a retried call never charges or pays twice.
Every call's parameters are typed with the library's own ``TypedDict`` s (``make lint`` runs mypy, strict here).
Stripe's errors become the interface's: ``PlatformUnavailable`` for what passes (no connection, rate limits, 5xx,
a key Stripe refuses: a configuration to fix, never a partner's failure), ``PlatformError`` for a refusal.
"""

from __future__ import annotations

import logging
from datetime import UTC, datetime
from decimal import ROUND_HALF_UP, Decimal
from urllib.parse import urlencode, urlsplit

import stripe
from stripe.checkout import Session as CheckoutSession
from stripe.params import (
    AccountExternalAccountListParams,
    CustomerCreateParams,
    PaymentIntentCreateParams,
    PayoutCreateParams,
    RefundCreateParams,
    TransferCreateParams,
)
from stripe.params.checkout import SessionCreateParams, SessionRetrieveParams

from ...errors import AuthorizationFailed, PlatformError
from ..base import (
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
from .client import StripeConfig, stripe_client, stripe_errors

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


def _timestamp(value: int | None) -> datetime | None:
    return datetime.fromtimestamp(int(value), tz=UTC) if value else None


def _with_query(url: str, query: str) -> str:
    return url + ("&" if "?" in url else "?") + query


def payout_state(payout: stripe.Payout) -> PayoutState:
    """A Stripe Payout (from the API or from an event) as the interface's state."""
    status = payout.status
    arrival = _timestamp(payout.arrival_date)
    if status == "paid":
        return PayoutState(payout_id=payout.id, status=PAYOUT_PAID, scheduled_for=arrival, paid_at=arrival)
    if status == "in_transit":
        return PayoutState(payout_id=payout.id, status=PAYOUT_SCHEDULED, scheduled_for=arrival)
    if status in ("failed", "canceled"):
        return PayoutState(
            payout_id=payout.id,
            status=PAYOUT_FAILED,
            failure_reason=payout.failure_message or payout.failure_code or f"Payout {status}.",
        )
    return PayoutState(payout_id=payout.id, status=PAYOUT_IN_PROCESS)


def refund_result(refund: stripe.Refund) -> RefundResult:
    status = refund.status
    if status == "succeeded":
        return RefundResult(refund_id=refund.id, status=REFUND_SUCCEEDED)
    if status in ("failed", "canceled"):
        # Stripe sends ``failure_reason`` only with a failed refund: a canceled one has none.
        code = (refund.failure_reason if "failure_reason" in refund else None) or status
        return RefundResult(
            refund_id=refund.id,
            status=REFUND_FAILED,
            failure_reason=f"Stripe reported the refund as {status}: {code.replace('_', ' ')}.",
        )
    return RefundResult(refund_id=refund.id, status=REFUND_PENDING)


class StripePlatform(PaymentPlatform):
    name = "stripe"

    def __init__(self, *, client: stripe.StripeClient, connect_base: str = stripe.DEFAULT_CONNECT_API_BASE):
        self.client = client
        self.connect_base = connect_base.rstrip("/")

    @classmethod
    def from_settings(cls) -> StripePlatform:
        config = StripeConfig.from_settings()
        return cls(client=stripe_client(config), connect_base=config.connect_base)

    # --- payout account -----------------------------------------------------------------------------------
    def authorize_url(self, *, state: str, return_url: str, account_reference: str, email: str = "") -> str:
        params: stripe.OAuth.OAuthAuthorizeUrlParams = {
            "response_type": "code",
            "scope": "read_write",
            "state": state,
            "redirect_uri": return_url,
        }
        if email:
            params["stripe_user"] = {"email": email}
        return self.client.oauth.authorize_url(params)

    def complete_authorization(self, *, code: str, idempotency_key: str) -> ConnectedAccount:
        try:
            with stripe_errors():
                token = self.client.oauth.token(
                    {"grant_type": "authorization_code", "code": code},
                    {"idempotency_key": idempotency_key},
                )
        except PlatformError as exc:
            if isinstance(exc.__cause__, stripe.oauth_error.OAuthError):
                raise AuthorizationFailed(f"Stripe did not confirm the authorization: {exc.message}") from exc
            raise
        account_id = token.stripe_user_id
        if not account_id:
            raise AuthorizationFailed("Stripe's answer named no connected account.")
        params: AccountExternalAccountListParams = {"object": "bank_account", "limit": 1}
        with stripe_errors():
            banks = self.client.v1.accounts.external_accounts.list(account_id, params)
        bank = next((item for item in banks.data if isinstance(item, stripe.BankAccount)), None)
        if bank is None:
            raise AuthorizationFailed(
                "The Stripe account has no bank account for payouts yet. Add one in Stripe, then connect again."
            )
        return ConnectedAccount(
            account_id=account_id,
            method="ach",
            bank_name=bank.bank_name or "Bank account",
            last4=bank.last4[-4:],
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
            customer_params: CustomerCreateParams = {
                "description": f"Partner {customer_reference}",
                "metadata": {"partner_id": customer_reference},
            }
            if email:
                customer_params["email"] = email
            with stripe_errors():
                customer = self.client.v1.customers.create(
                    customer_params, {"idempotency_key": f"{idempotency_key}:customer"}
                )
            customer_id = customer.id
        state_query = urlencode({"state": state})
        session_params: SessionCreateParams = {
            "mode": "setup",
            "customer": customer_id,
            "currency": "usd",
            "allowed_payment_method_types": ["card"],
            "client_reference_id": customer_reference,
            # Stripe fills in {CHECKOUT_SESSION_ID}; the braces must stay literal.
            "success_url": _with_query(return_url, state_query + "&setup_id={CHECKOUT_SESSION_ID}"),
            "cancel_url": _with_query(return_url, state_query + "&error=canceled"),
            "metadata": {"partner_id": customer_reference},
        }
        with stripe_errors():
            session = self.client.v1.checkout.sessions.create(
                session_params, {"idempotency_key": f"{idempotency_key}:session"}
            )
        if not session.url:
            raise PlatformError("Stripe's Checkout session has no page to send the partner to.")
        return session.url

    def complete_card_setup(self, *, setup_id: str, customer_reference: str) -> SavedCard:
        params: SessionRetrieveParams = {"expand": ["setup_intent.payment_method"]}
        try:
            with stripe_errors():
                session: CheckoutSession = self.client.v1.checkout.sessions.retrieve(setup_id, params)
        except PlatformError as exc:
            raise AuthorizationFailed(f"Stripe did not confirm the card: {exc.message}") from exc
        # The session must be the one this partner started (card_setup_url sets both): a partner returning
        # with someone else's session id would otherwise save that customer's card as their own.
        metadata = session.metadata.to_dict() if session.metadata else {}
        if (
            session.client_reference_id != customer_reference
            or metadata.get("partner_id") != customer_reference
        ):
            raise AuthorizationFailed(
                "This card setup belongs to another account. Please add the card again."
            )
        intent = session.setup_intent
        if (
            session.status != "complete"
            or not isinstance(intent, stripe.SetupIntent)
            or intent.status != "succeeded"
        ):
            raise AuthorizationFailed("The card was not saved on Stripe. Please add it again.")
        method = intent.payment_method
        card = method.card if isinstance(method, stripe.PaymentMethod) else None
        if method is None or not isinstance(method, stripe.PaymentMethod) or card is None:
            raise AuthorizationFailed("Stripe saved no card in this setup. Please add it again.")
        customer = session.customer
        customer_id = customer if isinstance(customer, str) else (customer.id if customer else "")
        return SavedCard(
            card_token=f"{customer_id}:{method.id}",
            brand=BRANDS.get(card.brand, card.brand.title() or "Card"),
            last4=card.last4[-4:],
            exp_month=card.exp_month,
            exp_year=card.exp_year,
        )

    # --- money --------------------------------------------------------------------------------------------------
    def charge_card(
        self, *, card_token: str, amount: Decimal, currency: str, idempotency_key: str, description: str
    ) -> ChargeResult:
        customer_id, _, payment_method_id = card_token.partition(":")
        if not customer_id or not payment_method_id:
            raise PlatformError("The card on file is not a Stripe card; add the card again.")
        params: PaymentIntentCreateParams = {
            "amount": to_minor_units(amount),
            "currency": currency.lower(),
            "customer": customer_id,
            "payment_method": payment_method_id,
            "off_session": True,
            "confirm": True,
            # The partner is not there to follow a redirect: without this, an account that enables a
            # redirect-based payment method makes Stripe refuse a confirm that has no return_url.
            "automatic_payment_methods": {"enabled": True, "allow_redirects": "never"},
            "description": description,
            "metadata": {"idempotency_key": idempotency_key},
        }
        try:
            with stripe_errors():
                intent = self.client.v1.payment_intents.create(params, {"idempotency_key": idempotency_key})
        except PlatformError as exc:
            declined = exc.__cause__
            if not isinstance(declined, stripe.CardError):
                raise
            failed_intent = declined.error.payment_intent if declined.error else None
            return ChargeResult(
                charge_id=failed_intent.id if failed_intent else "",
                status=CHARGE_FAILED,
                failure_reason=exc.message,
            )
        if intent.status in ("succeeded", "processing"):
            return ChargeResult(charge_id=intent.id, status=CHARGE_SUCCEEDED)
        return ChargeResult(
            charge_id=intent.id,
            status=CHARGE_FAILED,
            failure_reason="The card needs the cardholder's authentication; add the card again in the portal.",
        )

    def refund_charge(
        self, *, charge_id: str, amount: Decimal, currency: str, idempotency_key: str, reason: str
    ) -> RefundResult:
        if not charge_id:
            raise PlatformError("The charge has no Stripe PaymentIntent id; it cannot be refunded.")
        metadata: dict[str, str] = {"idempotency_key": idempotency_key}
        if reason:
            metadata["reason"] = reason[:500]
        # The refund's currency is the PaymentIntent's: Stripe takes no currency here.
        params: RefundCreateParams = {
            "payment_intent": charge_id,
            "amount": to_minor_units(amount),
            "metadata": metadata,
        }
        with stripe_errors():
            refund = self.client.v1.refunds.create(params, {"idempotency_key": idempotency_key})
        return refund_result(refund)

    def get_refund(self, *, refund_id: str) -> RefundResult:
        with stripe_errors():
            return refund_result(self.client.v1.refunds.retrieve(refund_id))

    def create_payout(
        self, *, account_id: str, amount: Decimal, currency: str, idempotency_key: str, description: str
    ) -> PayoutState:
        minor = to_minor_units(amount)
        transfer: TransferCreateParams = {
            "amount": minor,
            "currency": currency.lower(),
            "destination": account_id,
            "description": description,
            "metadata": {"idempotency_key": idempotency_key},
        }
        payout: PayoutCreateParams = {
            "amount": minor,
            "currency": currency.lower(),
            "description": description,
            "metadata": {"idempotency_key": idempotency_key},
        }
        with stripe_errors():
            self.client.v1.transfers.create(transfer, {"idempotency_key": f"{idempotency_key}:transfer"})
            created = self.client.v1.payouts.create(
                payout, {"idempotency_key": f"{idempotency_key}:payout", "stripe_account": account_id}
            )
        return payout_state(created)

    def get_payout(self, *, account_id: str, payout_id: str) -> PayoutState:
        with stripe_errors():
            return payout_state(
                self.client.v1.payouts.retrieve(payout_id, options={"stripe_account": account_id})
            )

    def form_action_origins(self) -> list[str]:
        parts = urlsplit(self.connect_base)
        return [f"{parts.scheme}://{parts.netloc}", CHECKOUT_ORIGIN]
