"""Background work on orders: delivering notifications to subscribers, the outbox sweep and purge, the
cancel e-mail, expiry."""

import logging

from celery import shared_task

from config.core.retrying import TRANSIENT_ERRORS, RetryingTask

from . import delivery, dispatch, outbox, services, signals

logger = logging.getLogger(__name__)


class _ToSubscribers(RetryingTask):
    """A notification's delivery is tried again after the house's transient errors and those of each subscriber
    it goes to (the subscribers that already handled it skip it then)."""

    def transient_for(self, notification_pk: int, subscriber_names: list[str]) -> tuple:
        return signals.transient_errors(subscriber_names)


@shared_task(base=_ToSubscribers, name="orders.tasks.notifications_deliver", acks_late=True)
def notifications_deliver(notification_pk: int, subscriber_names: list[str]) -> list[str]:
    """One notification to each of its subscribers, in turn: the message of the outbox before its deliveries were
    batched (still in queues), and of a caller that publishes one notification alone (``dispatch.notification_dispatch``)."""
    delivered = delivery.notifications_deliver(deliveries=[(notification_pk, subscriber_names)], alone=True)
    return delivered.get(int(notification_pk), [])


class _ToSubscribersInBatches(RetryingTask):
    """A batched delivery is tried again after a transient error with only the notifications it had not
    delivered yet (``delivery.DeliveryInterrupted``): those before it are not run again, nor read."""

    def transient_for(self, deliveries: list | None = None) -> tuple:
        return (delivery.DeliveryInterrupted, *TRANSIENT_ERRORS)

    def retry(self, args=None, kwargs=None, exc=None, **options):
        if isinstance(exc, delivery.DeliveryInterrupted):
            args, kwargs = [exc.remaining], {}
        return super().retry(args=args, kwargs=kwargs, exc=exc, **options)


@shared_task(base=_ToSubscribersInBatches, name="orders.tasks.notifications_deliver_many", acks_late=True)
def notifications_deliver_many(deliveries: list | None = None) -> int:
    """Many notifications, each to its subscribers in turn (``[notification_pk, subscriber_names]`` each): those
    written together (a confirmation batch's), or, without ``deliveries``, those written one at a time that
    wait in Redis for a batched delivery (``dispatch.notification_dispatch_coalesced``), up to
    ``dispatch.DELIVERY_BATCH``."""
    if deliveries is None:
        deliveries = [(pk, None) for pk in delivery.notifications_pending_take()]
    return len(delivery.notifications_deliver(deliveries=deliveries)) if deliveries else 0


@shared_task(name="orders.tasks.notifications_dispatch_pending")
def notifications_dispatch_pending() -> int:
    dispatched = dispatch.notifications_dispatch_pending()
    if dispatched:
        logger.info("Handed over %d notification(s) that had not reached the broker", dispatched)
    return dispatched


@shared_task(name="orders.tasks.notifications_purge")
def notifications_purge() -> int:
    purged = outbox.notifications_purge()
    if purged:
        logger.info("Purged %d notification(s) past their retention", purged)
    return purged


@shared_task(base=RetryingTask, name="orders.tasks.order_canceled_email", acks_late=True)
def order_canceled_email(order_pk: int) -> None:
    services.order_canceled_email(order_pk=order_pk)


@shared_task(name="orders.tasks.orders_expire_overdue")
def orders_expire_overdue() -> int:
    expired = services.orders_expire_overdue()
    if expired:
        logger.info("Expired %d overdue order(s): %s", len(expired), ", ".join(expired[:20]))
    orders_cancel_for_canceled_events()
    return len(expired)


@shared_task(name="orders.tasks.orders_cancel_for_canceled_events")
def orders_cancel_for_canceled_events(event_pk: int | None = None) -> int:
    canceled = services.orders_cancel_for_canceled_events(event_pk=event_pk)
    if canceled:
        logger.info("Canceled %d order(s) of canceled events: %s", len(canceled), ", ".join(canceled[:20]))
    return len(canceled)
