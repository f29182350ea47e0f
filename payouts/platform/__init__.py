"""``get_platform()``: the payment-platform backend chosen by ``settings.PAYMENT_PLATFORM`` among the platforms
of the registry (``registry.py``: each one folder under payouts/platform/).

Every call goes through ``LoggedPlatform`` (``logged.py``), which writes one log line per call with its
operation, idempotency key, outcome and duration, and nothing else from the arguments (no card or account data).
"""

from __future__ import annotations

from collections.abc import Callable

from django.conf import settings

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
from .logged import LoggedPlatform
from .registry import platform_module

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


def get_platform(name: str | None = None) -> PaymentPlatform:
    """The backend ``name`` (default: ``settings.PAYMENT_PLATFORM``) of the registry, wrapped in ``LoggedPlatform``."""
    backend: Callable[[], PaymentPlatform] = platform_module(name or settings.PAYMENT_PLATFORM).backend
    # Every method of the interface is built onto LoggedPlatform from PaymentPlatform itself (logged.py).
    return LoggedPlatform(backend())  # type: ignore[abstract]
