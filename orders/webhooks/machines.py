"""The three statuses of webhooks and their one writer each: an endpoint's ``status``, a delivery's ``state``
and an attempt's ``status``.

An endpoint's moves are kept (who disabled or enabled it, and why: the partner, staff, or the service giving
up on it); a delivery's are not, its attempts are its history; an attempt moves once, from ``pending`` to its
outcome.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from config.core.statemachine import StateMachine

from .models import WebhookAttempt, WebhookDelivery, WebhookEndpoint, WebhookEndpointStatusHistory

E = WebhookEndpoint.Status
D = WebhookDelivery.State
A = WebhookAttempt.Status

ENDPOINT_TRANSITIONS = {
    E.ENABLED: frozenset({E.DISABLED}),
    E.DISABLED: frozenset({E.ENABLED}),
}
ENDPOINT_MACHINE = StateMachine(
    name="webhook endpoint",
    field="status",
    moves=ENDPOINT_TRANSITIONS,
    history=WebhookEndpointStatusHistory,
    history_fk="endpoint",
)

# A failed attempt with attempts left keeps the delivery ``retrying`` (a move to itself, with a new due time).
DELIVERY_TRANSITIONS = {
    D.PENDING: frozenset({D.RETRYING, D.SUCCEEDED, D.FAILED}),
    D.RETRYING: frozenset({D.RETRYING, D.SUCCEEDED, D.FAILED}),
    D.SUCCEEDED: frozenset(),
    D.FAILED: frozenset(),
}
DELIVERY_MACHINE = StateMachine(
    name="webhook delivery", field="state", moves=DELIVERY_TRANSITIONS, history=None
)

# An attempt is claimed ``pending`` and its outcome recorded once: it succeeded, failed with another attempt
# scheduled (``retrying``), or failed for good; one a worker left pending when it died is recorded failed by the
# next claim (``worker_lost``).
ATTEMPT_TRANSITIONS = {
    A.PENDING: frozenset({A.SUCCEEDED, A.RETRYING, A.FAILED}),
    A.SUCCEEDED: frozenset(),
    A.RETRYING: frozenset(),
    A.FAILED: frozenset(),
}
ATTEMPT_MACHINE = StateMachine(
    name="webhook attempt", field="status", moves=ATTEMPT_TRANSITIONS, history=None
)

Changes = Mapping[str, Any] | Callable[[Any], Mapping[str, Any]] | None


def endpoint_transition(
    *, endpoint: WebhookEndpoint, to: str, actor: str, reason: str = "", changes: Changes = None
) -> WebhookEndpoint:
    """Move ``endpoint`` to ``to`` under its row lock with a history row; return the locked row. Raises
    ``IllegalStateMove`` (and writes nothing) for a move ``ENDPOINT_TRANSITIONS`` does not have."""
    locked, _ = ENDPOINT_MACHINE.move(obj=endpoint, to=to, actor=actor, reason=reason, changes=changes)
    return locked


def delivery_transition(
    *, delivery: WebhookDelivery, to: str, changes: Changes = None, actor: str = "system:webhooks"
) -> WebhookDelivery:
    """Move ``delivery`` to ``to`` under its row lock; return the locked row. Raises ``IllegalStateMove``
    (and writes nothing) for a move ``DELIVERY_TRANSITIONS`` does not have: a delivery that succeeded or
    failed for good never moves again."""
    locked, _ = DELIVERY_MACHINE.move(obj=delivery, to=to, actor=actor, changes=changes)
    return locked


def attempt_transition(
    *, attempt: WebhookAttempt, to: str, changes: Changes = None, actor: str = "system:webhooks"
) -> WebhookAttempt:
    """Record the outcome ``to`` of a pending ``attempt`` (with its other fields, ``changes``) under its row
    lock; return the locked row. Raises ``IllegalStateMove`` (and writes nothing) for an attempt whose outcome
    is recorded already."""
    locked, _ = ATTEMPT_MACHINE.move(obj=attempt, to=to, actor=actor, changes=changes)
    return locked
