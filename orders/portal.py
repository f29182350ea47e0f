"""The partner portal's orders pages: the list with its filters, its CSV export, and one order's page with its
card charge, refund and payout."""

from __future__ import annotations

from django.conf import settings
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from partners.portal.access import portal_page
from partners.portal.exports import dated_filename, queryset_csv_response
from partners.portal.paging import portal_page_of

from .errors import OrderNotFound
from .forms import OrderFilterForm
from .models import Notification, Order
from .selectors import (
    LIST_ORDERING,
    NOTIFICATION_PORTAL_ORDERING,
    OrderFilters,
    notifications_for_portal,
    order_get_for_portal,
    order_list_for_portal,
    order_status_history,
)

TS = Order.TransferState
# The order's transfer in words (docs/partners/orders.md "Transfer"): states, counts and times only.
TRANSFER_WORDS = {
    TS.NONE: "No tickets have arrived yet.",
    TS.PARTIAL: "Some of the tickets arrived: {detected} of {quantity}.",
    TS.DETECTED: "All {quantity} tickets arrived and match the order.",
    TS.ACCEPTED: "The tickets were accepted on the ticketing platform.",
    TS.MISMATCH: "Tickets arrived that do not match the order: our staff are looking at it.",
    TS.RECALLED: "The seller recalled the transfer: the tickets have to be sent again.",
}
PAYOUT_HOLD_WORDS = {
    Order.DeliveryType.MOBILE_TRANSFER: "The payout starts once the tickets are accepted on the platform.",
    Order.DeliveryType.PDF: "The payout starts {hours} hours after the tickets arrived.",
    Order.DeliveryType.MOBILE_QR: "The payout starts {hours} hours after the tickets arrived.",
}


def transfer_words(order: Order) -> str:
    return TRANSFER_WORDS[order.transfer.state].format(
        detected=order.transfer.quantity_detected, quantity=order.quantity
    )


def payout_wait_words(order: Order) -> str:
    """Why a received order has no payout yet; empty when it is not waiting for its transfer."""
    if order.status != Order.Status.TICKET_RECEIVED or order.transfer.state == TS.ACCEPTED:
        return ""
    return PAYOUT_HOLD_WORDS[order.delivery_type].format(hours=settings.TRANSFER_FILE_PAYOUT_HOLD_HOURS)


# The CSV's columns and the fields they are read from, in order: read as plain values, no model per row.
ORDER_CSV_COLUMNS = (
    ("order_id", "order_id"),
    ("partner_reference", "partner_reference"),
    ("status", "status"),
    ("created_at", "created_at"),
    ("event_name", "event__name"),
    ("event_date", "event__event_date"),
    ("section", "section_name_display"),
    ("row", "row_name_display"),
    ("quantity", "quantity"),
    ("offer_price", "offer_price"),
    ("total_price", "total_price"),
    ("delivery_type", "delivery_type"),
    ("in_hand_date", "in_hand_date"),
    ("seller_email", "seller_email"),
    ("payout_status", "payout__status"),  # empty while the order has no payout
    ("payout_amount", "payout__amount"),
    ("payout_paid_at", "payout__paid_at"),
)
ORDER_CSV_HEADER = [column for column, _ in ORDER_CSV_COLUMNS]


def _order_filters(request: HttpRequest) -> tuple[OrderFilterForm, OrderFilters | None]:
    """The page's filter form and, when it is valid, its filters (the page and the CSV share both)."""
    form = OrderFilterForm(request.GET or None)
    return form, (form.filters() if form.is_bound and form.is_valid() else None)


def _orders_page(
    request: HttpRequest, *, form: OrderFilterForm, filters: OrderFilters | None, status: int = 200
) -> HttpResponse:
    queryset = order_list_for_portal(principal=request.mode, filters=filters)
    page = portal_page_of(request, queryset, ordering=LIST_ORDERING)
    return render(request, "portal/orders.html", {"nav": "orders", "form": form, "page": page}, status=status)


@portal_page
@require_GET
def orders(request: HttpRequest) -> HttpResponse:
    form, filters = _order_filters(request)
    return _orders_page(request, form=form, filters=filters)


@portal_page
@require_GET
def orders_csv(request: HttpRequest) -> HttpResponse:
    """The orders page's rows, all of them, under the same filters; invalid filters get the page back with
    their errors (400) rather than an export of everything."""
    form, filters = _order_filters(request)
    if form.is_bound and filters is None:
        return _orders_page(request, form=form, filters=None, status=400)
    mode = request.mode
    return queryset_csv_response(
        filename=dated_filename("orders", tz=request.partner_tz),
        columns=ORDER_CSV_COLUMNS,
        queryset=lambda: order_list_for_portal(principal=mode, filters=filters),
        ordering=LIST_ORDERING,
        tz=request.partner_tz,
    )


@portal_page
@require_GET
def order_detail(request: HttpRequest, order_id: str) -> HttpResponse:
    try:
        order = order_get_for_portal(principal=request.mode, order_id=order_id)
    except OrderNotFound:
        raise Http404("No such order.")
    return render(
        request,
        "portal/order_detail.html",
        {
            "nav": "orders",
            "order": order,
            "history": order_status_history(order=order),
            "transfer_words": transfer_words(order),
            "payout_wait": payout_wait_words(order),
            # Selected with the order: no query, None when there is none yet.
            "charge": getattr(order, "charge", None),
            "payout": getattr(order, "payout", None),
        },
    )


@portal_page
@require_GET
def notifications(request: HttpRequest) -> HttpResponse:
    """What the feed and the webhooks carried, newest first, in the mode of the Test/Live switch."""
    type = request.GET.get("type", "")
    if type not in Notification.Type.values:
        type = ""
    queryset = notifications_for_portal(principal=request.mode, type=type)
    page = portal_page_of(request, queryset, ordering=NOTIFICATION_PORTAL_ORDERING)
    return render(
        request,
        "portal/notifications.html",
        {"nav": "notifications", "page": page, "type": type, "types": Notification.Type.choices},
    )
