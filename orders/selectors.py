"""Reads on orders and notifications, always scoped to the calling partner and the mode of its token
(``ModeScopedQuerySet.for_principal``): an object of the other mode is as unknown as a missing one."""

from dataclasses import dataclass
from datetime import datetime

from config.api.pagination import Page, paginate
from config.modes import Principal

from . import errors
from .models import Notification, Order, OrderStatusHistory

LIST_ORDERING = ("-created_at", "-id")


@dataclass(frozen=True)
class OrderFilters:
    status: str | None = None
    event_id: str | None = None
    created_from: datetime | None = None  # inclusive
    created_before: datetime | None = None  # exclusive
    updated_from: datetime | None = None  # inclusive, on status_changed_at


def order_get_for_partner(*, principal: Principal, order_id: str) -> Order:
    """The partner's order of the principal's mode; another partner's order, or one of the other mode, is as
    unknown as a missing one (ORDER_NOT_FOUND)."""
    order = Order.objects.for_principal(principal).select_related("event").filter(order_id=order_id).first()
    if order is None:
        raise errors.OrderNotFound(details={"order_id": order_id})
    return order


def order_list(*, principal: Principal, filters: OrderFilters, limit: int, cursor: str | None) -> Page:
    """The partner's orders of the principal's mode, newest first, cursor-paginated."""
    qs = Order.objects.for_principal(principal).select_related("event")
    if filters.status:
        qs = qs.filter(status=filters.status)
    if filters.event_id:
        qs = qs.filter(event__event_id=filters.event_id)
    if filters.created_from is not None:
        qs = qs.filter(created_at__gte=filters.created_from)
    if filters.created_before is not None:
        qs = qs.filter(created_at__lt=filters.created_before)
    if filters.updated_from is not None:
        qs = qs.filter(status_changed_at__gte=filters.updated_from)
    return paginate(qs, ordering=LIST_ORDERING, limit=limit, cursor=cursor)


def order_status_history(*, order: Order) -> list[OrderStatusHistory]:
    return list(OrderStatusHistory.objects.filter(order=order).order_by("at", "id"))


# --- notifications ----------------------------------------------------------------------------------------
NOTIFICATION_ORDERING = ("id",)


@dataclass(frozen=True)
class NotificationFilters:
    type: str | None = None
    order_id: str | None = None
    after: str | None = None  # a notification id of the caller's


def notification_get_for_partner(*, principal: Principal, notification_id: str) -> Notification:
    """One of the partner's notifications of the principal's mode; anything else is NOTIFICATION_NOT_FOUND."""
    notification = (
        Notification.objects.for_principal(principal).filter(notification_id=notification_id).first()
    )
    if notification is None:
        raise errors.NotificationNotFound(details={"notification_id": notification_id})
    return notification


def notification_list(
    *, principal: Principal, filters: NotificationFilters, limit: int, cursor: str | None
) -> Page:
    """The partner's notifications of one mode, oldest first, cursor-paginated.

    ``after`` must name one of the caller's notifications of that mode; anything else (unknown, purged,
    another partner's) is VALIDATION_ERROR on ``after``, so a poller learns its bookmark is gone.
    """
    qs = Notification.objects.for_principal(principal)
    if filters.after:
        after_pk = qs.filter(notification_id=filters.after).values_list("pk", flat=True).first()
        if after_pk is None:
            raise errors.ValidationFailed(
                "after is not one of your notification ids.", field="after", issue="invalid"
            )
        qs = qs.filter(pk__gt=after_pk)
    if filters.type:
        qs = qs.filter(type=filters.type)
    if filters.order_id:
        qs = qs.filter(order__order_id=filters.order_id)
    return paginate(qs.only("id", "payload"), ordering=NOTIFICATION_ORDERING, limit=limit, cursor=cursor)
