"""``LoggedPlatform``: any backend wrapped so that every call to the platform writes one log line with its
operation, idempotency key, outcome and duration, and nothing else from the arguments (no card or account data).

The wrapper names none of the interface's methods: it is built from ``PaymentPlatform`` itself. Every abstract
method, and every optional one marked ``@platform_call``, is a call to the platform and is logged; any other
method of the interface (what a backend knows without asking the platform) goes to the backend as it is. The
batch of charges (``charge_cards``) is one call to the backend and one line per charge, as ``charge_card``
writes.
"""

from __future__ import annotations

import abc
import functools
import inspect
import logging
import time
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from ..errors import PaymentError, PlatformError, PlatformUnavailable
from .base import (
    CHARGE_FAILED,
    REFUND_FAILED,
    ChargeRequest,
    ChargeResult,
    PaymentPlatform,
    RefundResult,
    is_platform_call,
)

logger = logging.getLogger("payouts.platform")
T = TypeVar("T")
C = TypeVar("C", bound=type)

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


def _interface_methods() -> dict[str, Callable[..., Any]]:
    """Every public method of the interface, by name."""
    return {
        name: member
        for name, member in inspect.getmembers(PaymentPlatform, inspect.isfunction)
        if not name.startswith("_")
    }


def _logged_call(name: str, method: Callable[..., Any]) -> Callable[..., Any]:
    signature = inspect.signature(method)

    @functools.wraps(method)
    def call(self: LoggedPlatform, *args: Any, **kwargs: Any) -> Any:
        bound = signature.bind(self, *args, **kwargs)
        arguments = {k: v for k, v in bound.arguments.items() if k != "self"}
        return self._call(name, getattr(self.backend, name), **arguments)

    return call


def _forward(name: str, method: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(method)
    def forward(self: LoggedPlatform, *args: Any, **kwargs: Any) -> Any:
        return getattr(self.backend, name)(*args, **kwargs)

    return forward


def _every_method_of_the_interface(cls: C) -> C:
    """Give ``cls`` each interface method it does not define itself: logged if it is a call to the platform,
    forwarded otherwise."""
    for name, method in _interface_methods().items():
        if name in vars(cls):
            continue
        logged = name in PaymentPlatform.__abstractmethods__ or is_platform_call(method)
        wrapper = (_logged_call if logged else _forward)(name, method)
        wrapper.__isabstractmethod__ = False  # type: ignore[attr-defined]  # (``wraps`` copied the interface's)
        setattr(cls, name, wrapper)
    abc.update_abstractmethods(cls)
    return cls


@_every_method_of_the_interface
class LoggedPlatform(PaymentPlatform):
    """Wraps a backend: one structured log line per platform call."""

    def __init__(self, backend: PaymentPlatform) -> None:
        self.backend = backend
        self.name = backend.name

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
            self._log("charge_card", outcome, duration_ms, fields)
        return answers

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
            self._log(operation, outcome, round((time.monotonic() - started) * 1000, 1), fields)

    def _log(self, operation: str, outcome: str, duration_ms: float, fields: dict[str, str]) -> None:
        logger.info(
            "payment platform call %s %s idempotency_key=%s",
            operation,
            outcome,
            fields.get("idempotency_key", "-"),
            extra={
                "platform": self.name,
                "operation": operation,
                "outcome": outcome,
                "duration_ms": duration_ms,
                **{f"platform_{k}": v for k, v in fields.items()},
            },
        )
