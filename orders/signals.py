"""The order signals: the registry through which a change of an order reaches the rest of the system.

``orders`` owns it and imports no subscriber; other apps subscribe in their ``AppConfig.ready``. A
subscriber receives the ``Notification`` the change wrote in its own transaction, the same object the feed
and the webhooks carry, so there is one way an order change travels (``orders.outbox`` hands it over).

A subscriber that reacts to what moved (``subscribe_transitions``) receives a ``Transition`` instead: the
typed record of one move of the order's state machine (its history row, which the ``order.status_changed``
notification points to), never the partner's payload, so the public payload may change without changing what
the reactions decide. It travels the same durable way, with the same guarantees.

Handlers run after commit, in a worker, at least once per notification: they must be idempotent. Once a
handler returns, its receipt is recorded and a repeat delivery of that notification to that subscriber is
skipped. A subscriber may also say, for a whole delivery batch at once (``idle``, one statement for the batch),
which notifications its handler would do nothing for: those are recorded as handled without calling it, so a
subscriber with nothing to do costs a batch one statement rather than one per notification. A handler that
raises one of its ``transient`` errors is retried with backoff; any other error is logged and left to the
subscriber's own periodic sweep.
"""

import logging
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import datetime

from config.core.retrying import TRANSIENT_ERRORS

from .models import Notification, Order, OrderStatusHistory

logger = logging.getLogger(__name__)

Handler = Callable[[Notification], None]
# The pks of the notifications among these that the handler would do nothing for (read once for a batch).
Idle = Callable[[list[Notification]], set[int]]


@dataclass(frozen=True)
class Transition:
    """One move of an order's status, as its state machine recorded it (``OrderStatusHistory``)."""

    order_pk: int
    from_status: str
    to_status: str
    at: datetime
    actor: str

    @classmethod
    def of(cls, row: OrderStatusHistory) -> "Transition":
        return cls(
            order_pk=row.order_id,
            from_status=row.from_status,
            to_status=row.to_status,
            at=row.at,
            actor=row.actor,
        )


def transition_of(notification: Notification) -> Transition | None:
    """The move an ``order.status_changed`` notification carries; ``None`` for any other notification."""
    if notification.type != Notification.Type.ORDER_STATUS_CHANGED or notification.transition_id is None:
        return None
    row = notification.transition
    return Transition.of(row) if row is not None else None


def notification_status(notification: Notification) -> str | None:
    """The status the notification leaves its order in, as far as the notification's type and its move say:
    ``accepted`` for ``order.created`` (every order is created in it), the move's target for
    ``order.status_changed``; ``None`` (not known here: any) otherwise."""
    if notification.type == Notification.Type.ORDER_CREATED:
        return Order.Status.ACCEPTED
    transition = transition_of(notification)
    return transition.to_status if transition is not None else None


TransitionHandler = Callable[[Transition], None]
# The pks of the orders among these moves that the handler would do nothing for (read once for a batch).
TransitionsIdle = Callable[[list[Transition]], set[int]]


@dataclass(frozen=True)
class Subscriber:
    name: str
    types: frozenset[str] | None  # None: every type
    handler: Handler
    transient: tuple[type[BaseException], ...] = TRANSIENT_ERRORS
    # None: every status. Otherwise only notifications whose order is now in one of these (``data.order.status``):
    # no delivery is published for the others, so a subscriber that ignores most changes costs them nothing.
    statuses: frozenset[str] | None = None
    # The handler for a caller that waits for the outcome rather than handing the work on (test mode's
    # advance, ``delivery.notification_deliver(now=True)``); None: ``handler``.
    now: Handler | None = None
    # The notifications of a batch the handler would do nothing for: recorded without calling it. None: none.
    idle: Idle | None = None

    def wants(self, notification_type: str, order_status: str | None = None) -> bool:
        """Whether a notification of this type, about an order now in ``order_status``, is for this subscriber
        (``None``: the status is not known here, so any)."""
        if self.types is not None and notification_type not in self.types:
            return False
        return self.statuses is None or order_status is None or order_status in self.statuses


_subscribers: dict[str, Subscriber] = {}


def subscribe(
    name: str,
    *,
    handler: Handler,
    types: Iterable[str] | None = None,
    transient: Iterable[type[BaseException]] = (),
    statuses: Iterable[str] | None = None,
    now: Handler | None = None,
    idle: Idle | None = None,
) -> None:
    """Register ``handler`` under ``name`` (unique; registering the same name again replaces it).

    ``transient``: the subscriber's own errors that mean "try again later", on top of the house's
    ``config.core.retrying.TRANSIENT_ERRORS``.
    ``statuses``: only the notifications whose order is now in one of these statuses reach the handler.
    ``now``: the handler for a caller that waits for the outcome, when ``handler`` only hands the work on.
    ``idle``: given a delivery batch's notifications for this subscriber, in the order they are delivered, the
    pks of those its handler would do nothing for, as the database stands as the batch starts; they are recorded
    as handled without calling it. It may only leave out a notification whose handler would neither write nor
    publish anything, or whose work the handler of one delivered before it in the batch does.
    """
    _subscribers[name] = Subscriber(
        name=name,
        types=frozenset(types) if types is not None else None,
        handler=handler,
        transient=TRANSIENT_ERRORS + tuple(transient),
        statuses=frozenset(statuses) if statuses is not None else None,
        now=now,
        idle=idle,
    )


def transient_errors(names: Iterable[str]) -> tuple[type[BaseException], ...]:
    """The errors worth another try for a delivery to the subscribers ``names``: the house's and each one's own."""
    own = {error for name in names if (s := _subscribers.get(name)) for error in s.transient}
    return TRANSIENT_ERRORS + tuple(own - set(TRANSIENT_ERRORS))


def unsubscribe(name: str) -> None:
    _subscribers.pop(name, None)


def subscribers_for(notification_type: str, order_status: str | None = None) -> list[Subscriber]:
    """The subscribers a notification of this type goes to; with ``order_status``, those that want it too."""
    return [s for s in _subscribers.values() if s.wants(notification_type, order_status)]


def subscriber(name: str) -> Subscriber | None:
    return _subscribers.get(name)


def subscribe_transitions(
    name: str,
    *,
    handler: TransitionHandler,
    to: Iterable[str] | None = None,
    transient: Iterable[type[BaseException]] = (),
    idle: TransitionsIdle | None = None,
) -> None:
    """Register ``handler`` under ``name`` for the moves of orders' statuses (to one of ``to``; ``None``: every
    move): it receives each move's ``Transition``, delivered as ``subscribe``'s handlers are (after commit, at
    least once, idempotent). ``idle``: given a batch's moves, the pks of the orders whose moves the handler would
    do nothing for (``subscribe``'s ``idle``)."""

    def on_notification(notification: Notification) -> None:
        transition = transition_of(notification)
        if transition is None:
            # A notification written before its move was recorded with it: the subscriber's sweep catches it.
            logger.warning(
                "notification pk=%s carries no transition; left to %s's sweep", notification.pk, name
            )
            return
        handler(transition)

    def idle_notifications(notifications: list[Notification]) -> set[int]:
        moves = {n.pk: move for n in notifications if (move := transition_of(n)) is not None}
        orders = idle(list(moves.values())) if moves else set()
        return {pk for pk, move in moves.items() if move.order_pk in orders}

    subscribe(
        name,
        handler=on_notification,
        types=[Notification.Type.ORDER_STATUS_CHANGED],
        transient=transient,
        statuses=to,
        idle=idle_notifications if idle is not None else None,
    )
