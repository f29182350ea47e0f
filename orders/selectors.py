"""Reads on orders and notifications, always scoped to the calling partner and the mode of its token
(``ModeScopedQuerySet.for_principal``): an object of the other mode is as unknown as a missing one."""

import functools
from dataclasses import dataclass
from datetime import date, datetime, time, timedelta
from zoneinfo import ZoneInfo

from django.db.models import Q, QuerySet
from django.utils import timezone

from config.api.pagination import Page, paginate
from config.core.modes import Principal

from . import errors
from .models import Notification, Order, OrderStatusHistory

LIST_ORDERING = ("-created_at", "-id")


@dataclass(frozen=True)
class OrderFilters:
    """The filters of the API's order list and of the portal's orders page and CSV."""

    status: str | None = None
    event_id: str | None = None
    created_from: datetime | None = None  # inclusive
    created_before: datetime | None = None  # exclusive
    updated_from: datetime | None = None  # inclusive, on status_changed_at
    # The portal's: the order id exactly, or a fragment of the partner's reference or the event's name.
    search: str = ""
    # The portal's: days in the active time zone (the portal activates the partner's), both inclusive.
    created_on_or_after: date | None = None
    created_on_or_before: date | None = None


def order_get_for_partner(*, principal: Principal, order_id: str) -> Order:
    """The partner's order of the principal's mode; another partner's order, or one of the other mode, is as
    unknown as a missing one (ORDER_NOT_FOUND)."""
    order = (
        Order.objects.for_principal(principal)
        .select_related("event", "transfer_progress")
        .filter(order_id=order_id)
        .first()
    )
    if order is None:
        raise errors.OrderNotFound(details={"order_id": order_id})
    return order


def order_filter(*, principal: Principal, filters: OrderFilters) -> QuerySet[Order]:
    """The partner's orders of the principal's mode that match ``filters``, unordered.

    The day filters are built in the active time zone, so the SQL must be evaluated while that zone is active.
    """
    qs = Order.objects.for_principal(principal)
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
    if search := filters.search.strip():
        qs = qs.filter(
            Q(order_id__iexact=search)
            | Q(partner_reference__icontains=search)
            | Q(event__name__icontains=search)
        )
    # Days as a range of instants (a midnight of the active time zone each), so the list's index answers.
    if filters.created_on_or_after is not None:
        qs = qs.filter(created_at__gte=_midnight(filters.created_on_or_after))
    if filters.created_on_or_before is not None and filters.created_on_or_before < date.max:
        qs = qs.filter(created_at__lt=_midnight(filters.created_on_or_before + timedelta(days=1)))
    return qs


def _midnight(day: date) -> datetime:
    """The instant ``day`` starts in the active time zone."""
    return datetime.combine(day, time.min, tzinfo=timezone.get_current_timezone())


def order_list(*, principal: Principal, filters: OrderFilters, limit: int, cursor: str | None) -> Page:
    """The partner's orders of the principal's mode, newest first, cursor-paginated."""
    qs = order_filter(principal=principal, filters=filters).select_related("event", "transfer_progress")
    return paginate(qs, ordering=LIST_ORDERING, limit=limit, cursor=cursor)


def order_list_for_portal(*, principal: Principal, filters: OrderFilters | None = None) -> QuerySet[Order]:
    """The portal's orders page and CSV, in the mode of the portal's Test/Live switch: newest first, with the event and the payout (``order.payout``) each
    row shows."""
    qs = order_filter(principal=principal, filters=filters or OrderFilters())
    return qs.select_related("event", "payout", "transfer_progress").order_by(*LIST_ORDERING)


def order_get_for_portal(*, principal: Principal, order_id: str) -> Order:
    """One order of the partner in the portal's mode, with its event, card charge and payout
    (``order.charge``, ``order.payout``)."""
    order = (
        Order.objects.for_principal(principal)
        .select_related("event", "charge", "payout", "transfer_progress")
        .filter(order_id=order_id)
        .first()
    )
    if order is None:
        raise errors.OrderNotFound(details={"order_id": order_id})
    return order


def orders_active(*, principal: Principal) -> QuerySet[Order]:
    """The partner's orders of the principal's mode that are not yet paid, canceled or expired."""
    return Order.objects.for_principal(principal).exclude(status__in=Order.SETTLED_STATUSES)


def order_status_history(*, order: Order) -> list[OrderStatusHistory]:
    return list(OrderStatusHistory.objects.filter(order=order).order_by("at", "id"))


# --- notifications ----------------------------------------------------------------------------------------
NOTIFICATION_ORDERING = ("id",)
NOTIFICATION_PORTAL_ORDERING = ("-id",)  # the portal's page: newest first


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


def notifications_for_portal(*, principal: Principal, type: str = "") -> QuerySet[Notification]:
    """The portal's notifications page: the partner's notifications of the portal's mode, newest first, with
    their orders; ``type`` narrows to one notification type."""
    qs = Notification.objects.for_principal(principal).select_related("order")
    if type:
        qs = qs.filter(type=type)
    return qs.only("notification_id", "type", "created_at", "payload", "order__order_id").order_by(
        *NOTIFICATION_PORTAL_ORDERING
    )


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


# --- transfer deadlines (the staff's queues) --------------------------------------------------------------------
TRANSFER_DUE_DAYS = 2
DUE_SOON, OVERDUE = "due_soon", "overdue"


def _deadline_dates(deadline: str, local_today: date) -> tuple[date | None, date]:
    """The in-hand dates (first, last; ``None``: no first) at ``deadline`` on a venue's ``local_today``."""
    if deadline == OVERDUE:
        return None, local_today - timedelta(days=1)
    return local_today, local_today + timedelta(days=TRANSFER_DUE_DAYS)


@functools.lru_cache(maxsize=1024)
def _zone(name: str) -> ZoneInfo:
    """A venue's time zone, kept: ``ZoneInfo`` keeps only the last eight zones for sure, so a count over the
    orders of venues in more zones than that read their files again and again."""
    return ZoneInfo(name)


def transfer_deadline(*, in_hand: date, zone: str, now: datetime) -> str | None:
    """Where an order awaiting transfer stands by its in-hand date at its venue (the venue's date, as the expiry
    run reads it, never UTC's): ``OVERDUE`` once the date is past, ``DUE_SOON`` on it or in the two days before
    it, else ``None``."""
    local_today = now.astimezone(_zone(zone)).date()
    for deadline in (OVERDUE, DUE_SOON):
        first, last = _deadline_dates(deadline, local_today)
        if (first is None or in_hand >= first) and in_hand <= last:
            return deadline
    return None


def awaiting_transfer_by_deadline(*, now: datetime) -> QuerySet[Order]:
    """Orders awaiting transfer (of either mode) that may be due soon or overdue: no venue's date is later than
    UTC's tomorrow, so a later in-hand date is neither."""
    horizon = (now + timedelta(days=1)).date() + timedelta(days=TRANSFER_DUE_DAYS)
    return Order.objects.filter(status=Order.Status.AWAITING_TRANSFER, in_hand_date__lte=horizon)


def transfer_deadline_filter(deadline: str, *, now: datetime) -> Q:
    """The orders :func:`transfer_deadline` puts at ``deadline``, as a filter: one condition per venue time zone
    of the orders awaiting transfer (a short list, read first)."""
    zones = (
        awaiting_transfer_by_deadline(now=now).order_by().values_list("event__timezone", flat=True).distinct()
    )
    condition = Q(pk__in=[])
    for zone in zones:
        first, last = _deadline_dates(deadline, now.astimezone(_zone(zone)).date())
        dates = Q(in_hand_date__lte=last) if first is None else Q(in_hand_date__range=(first, last))
        condition |= Q(event__timezone=zone) & dates
    return Q(status=Order.Status.AWAITING_TRANSFER) & condition
