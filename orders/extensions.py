"""What the order's sub-apps add to the order core, registered from their ``AppConfig.ready()``.

The order core (every module of ``orders`` outside ``orders/transfers/`` and ``orders/webhooks/``) never
imports its sub-apps: import-linter's contract in pyproject.toml says so. A sub-app hangs off the core the
way webhooks subscribe to the order's notifications (``orders.signals.subscribe``) and transfer detection
holds the in-hand expiry (``orders.services.expiry_hold_register``): it registers here what it adds.

- ``ticket_receipt_register``: the one writer of the tickets' arrival and their acceptance on the platform
  (transfer detection's ``orders.transfers.decision.state``), which the order admin's "Mark ticket received"
  and test mode's advance go through, so that the order's transfer moves with its status.
- ``order_admin_extend``: a mixin whose displays, permissions and list actions the order admin offers
  (transfer detection's panel and bulk "Mark accepted on platform").
- ``testmode_routes_add``: test-mode endpoints under ``/v1/test/`` (transfer detection's ``simulate_transfer``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from django.core.exceptions import ImproperlyConfigured


# --- the tickets' arrival -------------------------------------------------------------------------------------
@dataclass(frozen=True)
class TicketReceipt:
    """``receive(*, order, source, actor, reason, accepted=False)``: ``awaiting_transfer → ticket_received``
    with the transfer recorded (raises ``orders.errors.IllegalTransition`` when the order is not awaiting it);
    ``accept(*, order, actor, reason, reason_code)``: the tickets were accepted on the platform."""

    receive: Callable[..., Any]
    accept: Callable[..., Any]


_receipt: TicketReceipt | None = None


def ticket_receipt_register(*, receive: Callable[..., Any], accept: Callable[..., Any]) -> None:
    global _receipt
    _receipt = TicketReceipt(receive=receive, accept=accept)


def ticket_receipt() -> TicketReceipt:
    """The registered writer; the service cannot record a ticket's arrival without one."""
    if _receipt is None:
        raise ImproperlyConfigured(
            "No app registered the tickets' arrival (orders.transfers is not installed)."
        )
    return _receipt


# --- the order admin --------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class OrderAdminExtension:
    """``mixin``: a class whose methods the order admin answers for (``admin.display`` columns and panels,
    ``has_<name>_permission`` checks, list actions); ``fieldsets``: the order page's sections it adds (after
    "Delivery"); ``actions``: the names of its list actions (on ``mixin``)."""

    mixin: type
    fieldsets: tuple = ()
    actions: tuple[str, ...] = ()


ORDER_ADMIN_EXTENSIONS: list[OrderAdminExtension] = []


def order_admin_extend(mixin: type, *, fieldsets: tuple = (), actions: tuple[str, ...] = ()) -> None:
    """Add ``mixin``'s sections, displays and actions to the order admin (once per mixin)."""
    if any(extension.mixin is mixin for extension in ORDER_ADMIN_EXTENSIONS):
        return
    ORDER_ADMIN_EXTENSIONS.append(OrderAdminExtension(mixin=mixin, fieldsets=fieldsets, actions=actions))


def order_admin_attribute(name: str) -> Any:
    """The unbound attribute ``name`` of a registered mixin; ``AttributeError`` when none has it."""
    for extension in ORDER_ADMIN_EXTENSIONS:
        if not hasattr(object, name) and hasattr(extension.mixin, name):
            return getattr(extension.mixin, name)
    raise AttributeError(name)


# --- test mode's endpoints -----------------------------------------------------------------------------------
TESTMODE_ROUTES: list = []


def testmode_routes_add(*patterns) -> None:
    """URL patterns mounted under ``/v1/`` beside test mode's advance (``orders/urls.py``)."""
    for pattern in patterns:
        if all(pattern.name != existing.name for existing in TESTMODE_ROUTES):
            TESTMODE_ROUTES.append(pattern)
