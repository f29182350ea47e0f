"""The one interface the service uses to talk to the external business payment platform.

Every backend (``sandbox``, ``stripe``) implements ``PaymentPlatform``. Results are plain frozen dataclasses;
money is ``Decimal`` in major units (dollars). Backends raise ``PlatformUnavailable`` for transient
failures (retry) and ``PlatformError`` for permanent ones; a declined card is not an exception but a
``ChargeResult`` with ``status == "failed"``, and a refused refund a ``RefundResult`` with ``status == "failed"``.

A platform that tells the service of changes on its own (Stripe's events) reads each delivery into a
``VerifiedEvent`` in these terms; ``payouts.services.platform_events`` stores it once and acts on it, whatever
the platform.
"""

from __future__ import annotations

import abc
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal
from typing import Any, TypeVar

from ..errors import PaymentError, PlatformError, PlatformUnavailable

CHARGE_SUCCEEDED = "succeeded"
CHARGE_FAILED = "failed"

REFUND_PENDING = "pending"  # accepted by the platform, money not back on the card yet
REFUND_SUCCEEDED = "succeeded"
REFUND_FAILED = "failed"

PAYOUT_IN_PROCESS = "in_process"
PAYOUT_SCHEDULED = "scheduled"
PAYOUT_PAID = "paid"
PAYOUT_FAILED = "failed"


@dataclass(frozen=True)
class ConnectedAccount:
    """A payout account the partner authorized on the platform. Never a full account number."""

    account_id: str
    method: str  # "ach" | "wire"
    bank_name: str
    last4: str


@dataclass(frozen=True)
class SavedCard:
    """A card saved on the platform. ``card_token`` is what later charges use."""

    card_token: str
    brand: str
    last4: str
    exp_month: int
    exp_year: int


@dataclass(frozen=True)
class ChargeResult:
    charge_id: str
    status: str  # CHARGE_SUCCEEDED | CHARGE_FAILED
    failure_reason: str = ""


@dataclass(frozen=True)
class ChargeRequest:
    """One charge of a batch (``PaymentPlatform.charge_cards``): the arguments of ``charge_card``."""

    card_token: str
    amount: Decimal
    currency: str
    idempotency_key: str
    description: str


@dataclass(frozen=True)
class RefundResult:
    refund_id: str
    status: str  # REFUND_PENDING | REFUND_SUCCEEDED | REFUND_FAILED
    failure_reason: str = ""


@dataclass(frozen=True)
class PayoutState:
    payout_id: str
    status: str  # PAYOUT_IN_PROCESS | PAYOUT_SCHEDULED | PAYOUT_PAID | PAYOUT_FAILED
    scheduled_for: datetime | None = None  # when the platform expects to disburse
    paid_at: datetime | None = None
    failure_reason: str = ""


@dataclass(frozen=True)
class TestPaymentMethods:
    """A test bank account and card made directly on a platform that has them (the sandbox)."""

    account: ConnectedAccount
    card: SavedCard


# What an event of the platform asks of the service (``VerifiedEvent.kind``); any other event is stored and
# acknowledged, and does nothing.
EVENT_PAYOUT = "payout"  # a payout's new state
EVENT_REFUND = "refund"  # the refund of a charge settled: asked again at the platform
EVENT_DISPUTE_OPENED = "dispute_opened"
EVENT_DISPUTE_CLOSED = "dispute_closed"


@dataclass(frozen=True)
class DisputeInfo:
    dispute_id: str
    charge_id: str  # the platform's id of the disputed charge (``Charge.platform_charge_id``)
    amount: Decimal
    currency: str
    reason: str
    status: str  # the platform's own: needs_response, under_review, won, lost …
    evidence_due_by: datetime | None


@dataclass(frozen=True)
class VerifiedEvent:
    """A genuine event of the platform, read: what is stored of it and what it asks of the service."""

    event_id: str
    type: str  # the platform's own name of the event
    account: str  # the connected account it happened on; "" for the platform's own
    livemode: bool
    occurred_at: datetime
    payload: dict[str, Any]
    kind: str = ""  # EVENT_PAYOUT | EVENT_REFUND | EVENT_DISPUTE_OPENED | EVENT_DISPUTE_CLOSED | "" (none)
    payout: PayoutState | None = None  # EVENT_PAYOUT; None when its object could not be read
    charge_id: str = ""  # EVENT_REFUND, EVENT_DISPUTE_*: the platform's id of the charge
    dispute: DisputeInfo | None = None  # EVENT_DISPUTE_*; None when its object could not be read


F = TypeVar("F", bound=Callable[..., Any])


def platform_call(method: F) -> F:
    """Marks an optional method of the interface as a call to the platform, logged like the abstract ones
    (``LoggedPlatform``); every abstract method is one already."""
    method.__platform_call__ = True  # type: ignore[attr-defined]
    return method


def is_platform_call(method: Callable[..., Any]) -> bool:
    return getattr(method, "__platform_call__", False) is True


class PaymentPlatform(abc.ABC):
    """What the service asks of the payment platform."""

    name: str = ""

    # --- payout account: an OAuth-style authorize redirect ------------------------------------------
    @abc.abstractmethod
    def authorize_url(self, *, state: str, return_url: str, account_reference: str, email: str = "") -> str:
        """Where to send the partner to authorize a payout account; the platform comes back to
        ``return_url`` with ``code`` and the same ``state`` (or ``error``)."""

    @abc.abstractmethod
    def complete_authorization(self, *, code: str, idempotency_key: str) -> ConnectedAccount:
        """Exchange the one-time ``code`` for the connected account."""

    # --- credit card: the platform's own card page ----------------------------------------------------
    @abc.abstractmethod
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
        """Where to send the partner to type a card; the platform comes back to ``return_url`` with
        ``setup_id`` and the same ``state`` (or ``error``)."""

    @abc.abstractmethod
    def complete_card_setup(self, *, setup_id: str, customer_reference: str) -> SavedCard:
        """The card saved by a finished setup, which ``customer_reference`` (the partner) must have started:
        AuthorizationFailed for a setup of anyone else."""

    # --- money ------------------------------------------------------------------------------------------
    @abc.abstractmethod
    def charge_card(
        self, *, card_token: str, amount: Decimal, currency: str, idempotency_key: str, description: str
    ) -> ChargeResult:
        """Charge the card. The same ``idempotency_key`` always gives the same result, never a second charge."""

    def charge_cards(self, requests: Sequence[ChargeRequest]) -> list[ChargeResult | PaymentError]:
        """Charge many cards: one answer per request, in order. A request the platform refused
        (``PlatformError``) or could not answer (``PlatformUnavailable``) gets that error in its place and
        the others are unaffected; the idempotency of ``charge_card`` holds for each. One ``charge_card`` per
        request unless the backend can do better."""
        answers: list[ChargeResult | PaymentError] = []
        for request in requests:
            try:
                answers.append(
                    self.charge_card(
                        card_token=request.card_token,
                        amount=request.amount,
                        currency=request.currency,
                        idempotency_key=request.idempotency_key,
                        description=request.description,
                    )
                )
            except (PlatformError, PlatformUnavailable) as exc:
                answers.append(exc)
        return answers

    @abc.abstractmethod
    def refund_charge(
        self, *, charge_id: str, amount: Decimal, currency: str, idempotency_key: str, reason: str
    ) -> RefundResult:
        """Give ``amount`` of the charge ``charge_id`` back to the card. The same ``idempotency_key`` always
        gives the same refund, never a second one; a refund above what is left of the charge is refused."""

    @abc.abstractmethod
    def get_refund(self, *, refund_id: str) -> RefundResult:
        """The refund's state now (a ``pending`` refund later succeeds or fails)."""

    @abc.abstractmethod
    def create_payout(
        self, *, account_id: str, amount: Decimal, currency: str, idempotency_key: str, description: str
    ) -> PayoutState:
        """Send money to the connected account. Idempotent on ``idempotency_key``."""

    @abc.abstractmethod
    def get_payout(self, *, account_id: str, payout_id: str) -> PayoutState:
        """The payout's state now."""

    # --- test methods ---------------------------------------------------------------------------------------
    @platform_call
    def create_test_methods(
        self, *, reference: str, holder_name: str, card_number: str, account_number: str
    ) -> TestPaymentMethods:
        """A bank account and a card from the platform's test numbers, without its pages (demo partners)."""
        raise PlatformError(f"The {self.name} platform has no test payment methods.")

    def test_mode_card(self, *, reference: str, declines: bool) -> str:
        """The token of a platform test card for test-mode charges (one that succeeds, or one that declines),
        made on first use for ``reference``."""
        raise PlatformError(f"The {self.name} platform has no test cards.")

    def test_mode_cards(self, *, wanted: Sequence[tuple[str, bool]]) -> dict[tuple[str, bool], str]:
        """``test_mode_card`` for each ``(reference, declines)`` of ``wanted``: the tokens by that pair."""
        return {
            (reference, declines): self.test_mode_card(reference=reference, declines=declines)
            for reference, declines in dict.fromkeys(wanted)
        }

    def form_action_origins(self) -> list[str]:
        """Origins the portal's forms may redirect to (Content-Security-Policy ``form-action``)."""
        return []
