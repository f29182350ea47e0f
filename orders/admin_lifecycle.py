"""The order admin's life-cycle actions: the list's bulk actions and the order page's buttons ("Cancel order",
"Mark tickets received"), each behind the staff confirmation (``config.core.confirmation``: the orders listed, a
reason for the history, its own named permission checked on every request). Every move goes through
``orders.services.order_transition`` (marking received through the registered ticket receipt,
``orders.extensions.ticket_receipt``: transfer detection's ``order_receive``, which records the transfer too: staff are asked whether the tickets were accepted on the platform); after it, staff
land on a GET, so a reload repeats nothing."""

from django.contrib import admin, messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404
from django.urls import reverse

from config.core.confirmation import AcceptedForm, confirm, staff_actor

from . import errors, extensions, outbox, services
from .models import Order

COLUMNS = ("Order", "Status", "Partner", "Event", "Tickets")
CANCEL_EFFECTS = (
    "for each order the life cycle allows to cancel (accepted or awaiting transfer): its quantity goes back to "
    "the row, so the tickets can be quoted again;",
    "a charged card is refunded in full;",
    "the seller is e-mailed that the sale is canceled, if they were e-mailed about it;",
    "the partner gets an order.status_changed notification with reason canceled_by_staff;",
    "orders further along are left alone and named afterwards.",
)
RECEIVED_EFFECTS = (
    "confirm only once the tickets have reached us;",
    "each order awaiting transfer moves to ticket received (reason received_by_staff), with your reason in its "
    "status history;",
    "the partner gets order.status_changed and order.transfer_updated notifications;",
    "the payout of the order's total to the partner's payout account starts at the next payout run, and the "
    "order goes on to payout in process, scheduled and paid (a mobile transfer only once it is accepted on the "
    "platform);",
    "the order can no longer be canceled; orders in another status are left alone and named afterwards.",
)


def describe(order: Order) -> tuple:
    return (
        order.order_id,
        order.get_status_display(),
        order.partner.name,
        order.event.name,
        f"{order.quantity} × {order.offer_price} (total {order.total_price})",
    )


class OrderLifecycleAdminMixin:
    """Mixed into ``OrderAdmin`` (a ``ModelAdmin``)."""

    # --- the moves ----------------------------------------------------------------------------------------------
    def _report(self, request, moved: list[str], refused: list[str], *, verb: str, also: str = "") -> None:
        if moved:
            self.message_user(request, f"{verb}{also}: {', '.join(moved)}.", messages.SUCCESS)
        if refused:
            self.message_user(
                request,
                f"Not {verb.lower()}, the life cycle does not allow it from: {', '.join(refused)}.",
                messages.ERROR,
            )

    def _cancel_selected(self, request, orders: list[Order], *, reason: str) -> None:
        moved, refused = [], []
        for order in orders:
            try:
                services.order_transition(
                    order=order,
                    to=Order.Status.CANCELED,
                    actor=staff_actor(request),
                    reason=reason,
                    reason_code=outbox.REASON_CANCELED_BY_STAFF,
                )
            except errors.IllegalTransition as exc:
                refused.append(f"{order.order_id} ({exc.from_status})")
            else:
                moved.append(order.order_id)
        self._report(request, moved, refused, verb="Canceled")

    def _receive_selected(self, request, orders: list[Order], *, reason: str, accepted: bool) -> None:
        """Staff saw the tickets arrive: ``awaiting_transfer → ticket_received`` (reason ``received_by_staff``),
        the transfer detected, or accepted when staff say the tickets were accepted on the platform."""
        moved, refused = [], []
        for order in orders:
            try:
                extensions.ticket_receipt().receive(
                    order=order,
                    source=Order.TransferSource.STAFF,
                    actor=staff_actor(request),
                    reason=reason,
                    accepted=accepted,
                )
            except errors.IllegalTransition as exc:
                refused.append(f"{order.order_id} ({exc.from_status})")
            else:
                moved.append(order.order_id)
        also = " (accepted on the platform)" if accepted else ""
        self._report(request, moved, refused, verb="Marked ticket received", also=also)

    # --- the confirmations --------------------------------------------------------------------------------------
    def _confirm_cancel(self, request: HttpRequest, queryset, **page) -> HttpResponse | None:
        # A cancellation refunds a card and e-mails a seller, so staff first see what it does and give a reason;
        # the reason goes into each order's status history.
        orders = list(queryset.select_related("partner", "event").order_by("pk"))
        return confirm(
            request,
            self,
            permissions=("orders.cancel_order",),
            objects=orders,
            describe=describe,
            columns=COLUMNS,
            title="Cancel this order?" if page else "Cancel these orders?",
            effects=CANCEL_EFFECTS,
            submit="Yes, cancel this order" if len(orders) == 1 else "Yes, cancel these orders",
            reason_label="Reason (kept in each order's status history)",
            testid="confirm-cancel",
            act=lambda data: self._cancel_selected(request, orders, reason=data["reason"]),
            **page,
        )

    def _confirm_receive(self, request: HttpRequest, queryset, **page) -> HttpResponse | None:
        orders = list(queryset.select_related("partner", "event").order_by("pk"))
        return confirm(
            request,
            self,
            permissions=("orders.mark_received",),
            objects=orders,
            describe=describe,
            columns=COLUMNS,
            title=(
                "Mark the tickets of this order received?"
                if page
                else "Mark the tickets of these orders received?"
            ),
            effects=RECEIVED_EFFECTS,
            submit="Yes, mark the tickets received" if page else "Yes, mark these tickets received",
            reason_label="Reason (kept in the order's status history)",
            form_class=AcceptedForm,
            testid="confirm-mark-received",
            act=lambda data: self._receive_selected(
                request, orders, reason=data["reason"], accepted=data["accepted"]
            ),
            **page,
        )

    def _page(self, order: Order) -> dict:
        """Where the order page's buttons come back to, with a GET: so a reload repeats nothing."""
        url = reverse("admin:orders_order_change", args=[order.pk])
        return {"back_url": url, "done_url": url, "record_label": order.order_id, "arrives_by_post": True}

    # --- the list's actions -------------------------------------------------------------------------------------
    @admin.action(description="Mark ticket received", permissions=["mark_received"])
    def mark_ticket_received(self, request, queryset):
        return self._confirm_receive(request, queryset)

    @admin.action(description="Cancel orders", permissions=["cancel_order"])
    def cancel_orders(self, request, queryset):
        return self._confirm_cancel(request, queryset)

    # --- the order page's buttons -------------------------------------------------------------------------------
    def cancel_view(self, request: HttpRequest, pk: int) -> HttpResponse:
        """The order page's "Cancel order" button: the list action's confirmation, then back to the order. A
        second POST (a resubmitted form, a second tab) finds the order canceled: the life cycle refuses it."""
        order = get_object_or_404(Order, pk=pk)
        return self._confirm_cancel(request, Order.objects.filter(pk=pk), **self._page(order))

    def mark_received_view(self, request: HttpRequest, pk: int) -> HttpResponse:
        """The order page's "Mark tickets received" button: a confirmation with a reason, the move, then back to
        the order with a GET."""
        order = get_object_or_404(Order, pk=pk)
        return self._confirm_receive(request, Order.objects.filter(pk=pk), **self._page(order))
