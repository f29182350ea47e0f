"""The catalog's signals: what the catalog tells the apps above it, without importing them.

The catalog sits below orders, so it cannot call orders when staff or an import cancel an event. Apps above
subscribe here in their ``AppConfig.ready`` (orders: cancel the event's open orders); the catalog calls the
subscribers after the cancellation commits. A subscriber that fails is logged and never undoes the
cancellation: the orders' periodic expiry run also cancels the open orders of canceled events.
"""

import logging
from collections.abc import Callable

from django.db import transaction

logger = logging.getLogger(__name__)

EventCanceledHandler = Callable[[int], None]
_on_canceled: dict[str, EventCanceledHandler] = {}


def subscribe_event_canceled(name: str, handler: EventCanceledHandler) -> None:
    """``handler(event_pk)`` runs after every committed cancellation of an event (registering a name again
    replaces its handler)."""
    _on_canceled[name] = handler


def event_canceled_after_commit(*, event_pk: int) -> None:
    def notify() -> None:
        for name, handler in list(_on_canceled.items()):
            try:
                handler(event_pk)
            except Exception:
                logger.warning(
                    "Subscriber %s failed on the cancellation of event pk=%s; the periodic run catches up",
                    name,
                    event_pk,
                    exc_info=True,
                )

    transaction.on_commit(notify)
