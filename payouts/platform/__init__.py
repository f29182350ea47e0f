"""``get_platform()``: the payment-platform backend chosen by ``settings.PAYMENT_PLATFORM``.

Every call goes through ``LoggedPlatform``, which writes one log line per call with its operation,
idempotency key, outcome and duration, and nothing else from the arguments (no card or account data).
"""

from __future__ import annotations

import logging
import time
from typing import Any

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured

from ..errors import PlatformError, PlatformUnavailable
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
    "ChargeResult",
    "ConnectedAccount",
    "LoggedPlatform",
    "PaymentPlatform",
    "PayoutState",
    "RefundResult",
    "SavedCard",
    "get_platform",
]

logger = logging.getLogger("payouts.platform")

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


class LoggedPlatform:
    """Wraps a backend: one structured log line per platform call."""

    def __init__(self, backend: PaymentPlatform) -> None:
        self.backend = backend
        self.name = backend.name

    def __getattr__(self, operation: str) -> Any:
        target = getattr(self.backend, operation)
        if not callable(target) or operation.startswith("_") or operation == "form_action_origins":
            return target

        def call(**kwargs: Any) -> Any:
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

        return call


def get_platform(name: str | None = None) -> LoggedPlatform:
    name = name or settings.PAYMENT_PLATFORM
    if name == "sandbox":
        from .sandbox import SandboxPlatform

        return LoggedPlatform(SandboxPlatform())
    if name == "stripe":
        from .stripe import StripePlatform

        return LoggedPlatform(StripePlatform.from_settings())
    raise ImproperlyConfigured(f"Unknown PAYMENT_PLATFORM {name!r}: use 'sandbox' or 'stripe'.")
