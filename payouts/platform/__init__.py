"""``get_platform()``: the payment-platform backend chosen by ``settings.PAYMENT_PLATFORM``.

Every call goes through ``LoggedPlatform``, which writes one log line per call with its operation,
idempotency key, outcome and duration, and nothing else from the arguments (no card or account data).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from decimal import Decimal
from typing import Any, TypeVar

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured

from ..errors import PaymentError, PlatformError, PlatformUnavailable
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
    ChargeRequest,
    ChargeResult,
    ConnectedAccount,
    PaymentPlatform,
    PayoutState,
    RefundResult,
    SavedCard,
    TestPaymentMethods,
)

__all__ = [
    "CHARGE_FAILED",
    "CHARGE_SUCCEEDED",
    "PAYOUT_FAILED",
    "PAYOUT_IN_PROCESS",
    "PAYOUT_PAID",
    "PAYOUT_SCHEDULED",
    "REFUND_FAILED",
    "REFUND_PENDING",
    "REFUND_SUCCEEDED",
    "ChargeRequest",
    "ChargeResult",
    "ConnectedAccount",
    "LoggedPlatform",
    "PaymentPlatform",
    "PayoutState",
    "RefundResult",
    "SavedCard",
    "TestPaymentMethods",
    "get_platform",
]

logger = logging.getLogger("payouts.platform")
T = TypeVar("T")

# Arguments that are safe to put in a log line: identifiers and amounts, never card or bank data.
_LOGGED_ARGS = (
    "idempotency_key",
    "amount",
    "currency",
    "account_id",
    "payout_id",
    "account_reference",
    "charge_id",
    "refund_id",
)


class LoggedPlatform(PaymentPlatform):
    """Wraps a backend: one structured log line per platform call."""

    def __init__(self, backend: PaymentPlatform) -> None:
        self.backend = backend
        self.name = backend.name

    def authorize_url(self, *, state: str, return_url: str, account_reference: str, email: str = "") -> str:
        return self._call(
            "authorize_url",
            self.backend.authorize_url,
            state=state,
            return_url=return_url,
            account_reference=account_reference,
            email=email,
        )

    def complete_authorization(self, *, code: str, idempotency_key: str) -> ConnectedAccount:
        return self._call(
            "complete_authorization",
            self.backend.complete_authorization,
            code=code,
            idempotency_key=idempotency_key,
        )

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
        return self._call(
            "card_setup_url",
            self.backend.card_setup_url,
            state=state,
            return_url=return_url,
            customer_reference=customer_reference,
            email=email,
            existing_card_token=existing_card_token,
            idempotency_key=idempotency_key,
        )

    def complete_card_setup(self, *, setup_id: str, customer_reference: str) -> SavedCard:
        return self._call(
            "complete_card_setup",
            self.backend.complete_card_setup,
            setup_id=setup_id,
            customer_reference=customer_reference,
        )

    def charge_card(
        self, *, card_token: str, amount: Decimal, currency: str, idempotency_key: str, description: str
    ) -> ChargeResult:
        return self._call(
            "charge_card",
            self.backend.charge_card,
            card_token=card_token,
            amount=amount,
            currency=currency,
            idempotency_key=idempotency_key,
            description=description,
        )

    def charge_cards(self, requests: Sequence[ChargeRequest]) -> list[ChargeResult | PaymentError]:
        """The batch in one call to the backend, and one log line per charge as ``charge_card`` writes."""
        started = time.monotonic()
        answers = self.backend.charge_cards(requests)
        duration_ms = round((time.monotonic() - started) * 1000 / max(len(requests), 1), 1)
        for request, answer in zip(requests, answers, strict=True):
            if isinstance(answer, PlatformUnavailable):
                outcome = "unavailable"
            elif isinstance(answer, ChargeResult):
                outcome = "declined" if answer.status == CHARGE_FAILED else "ok"
            else:
                outcome = "refused"
            fields = {
                "idempotency_key": request.idempotency_key,
                "amount": str(request.amount),
                "currency": request.currency,
            }
            logger.info(
                "payment platform call %s %s idempotency_key=%s",
                "charge_card",
                outcome,
                request.idempotency_key,
                extra={
                    "platform": self.name,
                    "operation": "charge_card",
                    "outcome": outcome,
                    "duration_ms": duration_ms,
                    **{f"platform_{k}": v for k, v in fields.items()},
                },
            )
        return answers

    def refund_charge(
        self, *, charge_id: str, amount: Decimal, currency: str, idempotency_key: str, reason: str
    ) -> RefundResult:
        return self._call(
            "refund_charge",
            self.backend.refund_charge,
            charge_id=charge_id,
            amount=amount,
            currency=currency,
            idempotency_key=idempotency_key,
            reason=reason,
        )

    def get_refund(self, *, refund_id: str) -> RefundResult:
        return self._call("get_refund", self.backend.get_refund, refund_id=refund_id)

    def create_payout(
        self, *, account_id: str, amount: Decimal, currency: str, idempotency_key: str, description: str
    ) -> PayoutState:
        return self._call(
            "create_payout",
            self.backend.create_payout,
            account_id=account_id,
            amount=amount,
            currency=currency,
            idempotency_key=idempotency_key,
            description=description,
        )

    def get_payout(self, *, account_id: str, payout_id: str) -> PayoutState:
        return self._call("get_payout", self.backend.get_payout, account_id=account_id, payout_id=payout_id)

    def create_test_methods(
        self, *, reference: str, holder_name: str, card_number: str, account_number: str
    ) -> TestPaymentMethods:
        return self._call(
            "create_test_methods",
            self.backend.create_test_methods,
            reference=reference,
            holder_name=holder_name,
            card_number=card_number,
            account_number=account_number,
        )

    def test_mode_card(self, *, reference: str, declines: bool) -> str:
        return self.backend.test_mode_card(reference=reference, declines=declines)

    def test_mode_cards(self, *, wanted: Sequence[tuple[str, bool]]) -> dict[tuple[str, bool], str]:
        return self.backend.test_mode_cards(wanted=wanted)

    def form_action_origins(self) -> list[str]:
        return self.backend.form_action_origins()

    def _call(self, operation: str, target: Callable[..., T], **kwargs: Any) -> T:
        fields = {k: str(kwargs[k]) for k in _LOGGED_ARGS if k in kwargs}
        started = time.monotonic()
        outcome = "ok"
        try:
            result = target(**kwargs)
            if isinstance(result, ChargeResult) and result.status == CHARGE_FAILED:
                outcome = "declined"
            elif isinstance(result, RefundResult) and result.status == REFUND_FAILED:
                outcome = "refund_failed"
            return result
        except PlatformUnavailable:
            outcome = "unavailable"
            raise
        except PlatformError:
            outcome = "refused"
            raise
        except Exception:
            outcome = "error"
            raise
        finally:
            logger.info(
                "payment platform call %s %s idempotency_key=%s",
                operation,
                outcome,
                fields.get("idempotency_key", "-"),
                extra={
                    "platform": self.name,
                    "operation": operation,
                    "outcome": outcome,
                    "duration_ms": round((time.monotonic() - started) * 1000, 1),
                    **{f"platform_{k}": v for k, v in fields.items()},
                },
            )


def get_platform(name: str | None = None) -> PaymentPlatform:
    """The backend ``name`` (default: ``settings.PAYMENT_PLATFORM``), wrapped in ``LoggedPlatform``."""
    name = name or settings.PAYMENT_PLATFORM
    if name == "sandbox":
        from .sandbox_backend import SandboxPlatform

        return LoggedPlatform(SandboxPlatform())
    if name == "stripe":
        from .stripe import StripePlatform

        return LoggedPlatform(StripePlatform.from_settings())
    raise ImproperlyConfigured(f"Unknown PAYMENT_PLATFORM {name!r}: use 'sandbox' or 'stripe'.")
