"""The order admin's life-cycle actions: the list's bulk actions and the order page's buttons ("Cancel order",
"Mark tickets received"), each behind a confirmation with a reason for the history and its own named
permission, checked again on the confirming POST. Every move goes through ``orders.services.order_transition``
(marking received through ``orders.transfers.state.order_receive``, which records the transfer too: staff are
asked whether the tickets were accepted on the platform); after it, staff land on a GET, so a reload repeats
nothing."""

from django.contrib import admin, messages
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import get_object_or_404
from django.template.response import TemplateResponse
from django.urls import reverse

from config.core.admin_permissions import require

from . import errors, outbox, services
from .models import Order
from .transfers import state as transfer_state


class OrderLifecycleAdminMixin:
    """Mixed into ``OrderAdmin`` (a ``ModelAdmin``)."""

    # --- life-cycle actions ----------------------------------------------------------------------------------
    def _transition_selected(self, request, queryset, *, to: str, verb: str, reason: str) -> None:
        actor = f"staff:{request.user.get_username()}"
        moved, refused = [], []
        for order in queryset.order_by("pk"):
            try:
                services.order_transition(
                    order=order,
                    to=to,
                    actor=actor,
                    reason=reason,
                    reason_code=outbox.REASON_CANCELED_BY_STAFF if to == Order.Status.CANCELED else None,
                )
            except errors.IllegalTransition as exc:
                refused.append(f"{order.order_id} ({exc.from_status})")
            else:
                moved.append(order.order_id)
        if moved:
            self.message_user(request, f"{verb}: {', '.join(moved)}.", messages.SUCCESS)
        if refused:
            self.message_user(
                request,
                f"Not {verb.lower()}, the life cycle does not allow it from: {', '.join(refused)}.",
                messages.ERROR,
            )

    def _receive_selected(self, request, queryset, *, reason: str, accepted: bool) -> None:
        """Staff saw the tickets arrive: ``awaiting_transfer → ticket_received`` (reason ``received_by_staff``),
        the transfer detected, or accepted when staff say the tickets were accepted on the platform."""
        actor = f"staff:{request.user.get_username()}"
        moved, refused = [], []
        for order in queryset.order_by("pk"):
            try:
                transfer_state.order_receive(
                    order=order,
                    source=Order.TransferSource.STAFF,
                    actor=actor,
                    reason=reason,
                    accepted=accepted,
                )
            except errors.IllegalTransition as exc:
                refused.append(f"{order.order_id} ({exc.from_status})")
            else:
                moved.append(order.order_id)
        if moved:
            also = " (accepted on the platform)" if accepted else ""
            self.message_user(request, f"Marked ticket received{also}: {', '.join(moved)}.", messages.SUCCESS)
        if refused:
            self.message_user(
                request,
                f"Not marked ticket received, the life cycle does not allow it from: {', '.join(refused)}.",
                messages.ERROR,
            )

    @admin.action(description="Mark ticket received", permissions=["mark_received"])
    def mark_ticket_received(self, request, queryset):
        return self._receive_confirmed(request, queryset, title="Mark the tickets of these orders received?")

    @admin.action(description="Cancel orders", permissions=["cancel_order"])
    def cancel_orders(self, request, queryset):
        # A cancellation refunds a card and e-mails a seller, so staff first see what it does and give a reason;
        # the reason goes into each order's status history.
        return self._cancel_confirmed(request, queryset, title="Cancel these orders?")

    def cancel_view(self, request: HttpRequest, pk: int) -> HttpResponse:
        """The order page's "Cancel order" button: the list action's confirmation, then back to the order."""
        require(request, "orders.cancel_order")
        get_object_or_404(Order, pk=pk)
        change_url = reverse("admin:orders_order_change", args=[pk])
        if request.method != "POST":
            self.message_user(
                request, "Canceling starts from the order's “Cancel order” button.", messages.ERROR
            )
            return HttpResponseRedirect(change_url)
        confirmation = self._cancel_confirmed(
            request, Order.objects.filter(pk=pk), title="Cancel this order?", back_url=change_url
        )
        # Done: back to the order's page with a GET, so that a reload cancels nothing twice.
        return confirmation or HttpResponseRedirect(change_url)

    def mark_received_view(self, request: HttpRequest, pk: int) -> HttpResponse:
        """The order page's "Mark tickets received" button: a confirmation with a reason, the move, then back to
        the order with a GET. A second POST (a resubmitted form, a second tab) finds the order moved already: the
        life cycle refuses it and the page says so."""
        require(request, "orders.mark_received")
        get_object_or_404(Order, pk=pk)
        change_url = reverse("admin:orders_order_change", args=[pk])
        if request.method != "POST":
            self.message_user(
                request, "Marking tickets received starts from the order's button.", messages.ERROR
            )
            return HttpResponseRedirect(change_url)
        confirmation = self._receive_confirmed(
            request,
            Order.objects.filter(pk=pk),
            title="Mark the tickets of this order received?",
            back_url=change_url,
        )
        return confirmation or HttpResponseRedirect(change_url)

    def _receive_confirmed(
        self, request: HttpRequest, queryset, *, title: str, back_url: str = ""
    ) -> TemplateResponse | None:
        """The confirmation (a reason, and "Were the tickets accepted on the platform?") until it comes back
        confirmed with a reason; then the move (``None``)."""
        reason = request.POST.get("reason", "").strip()[:255]
        if request.POST.get("confirmed") == "yes" and reason:
            self._receive_selected(
                request, queryset, reason=reason, accepted=request.POST.get("accepted") == "yes"
            )
            return None
        orders = list(queryset.select_related("partner", "event").order_by("pk"))
        context = {
            **self.admin_site.each_context(request),
            "title": title,
            "orders": orders,
            "order": orders[0] if len(orders) == 1 else None,
            "action_name": request.POST.get("action", ""),
            "select_across": request.POST.get("select_across", "0"),
            "reason": request.POST.get("reason", ""),
            "error": "Give a reason for the status history." if request.POST.get("confirmed") else "",
            "opts": self.model._meta,
            "back_url": back_url or reverse("admin:orders_order_changelist"),
        }
        return TemplateResponse(request, "admin/orders/order/confirm_mark_received.html", context)

    def _cancel_confirmed(
        self, request: HttpRequest, queryset, *, title: str, back_url: str = ""
    ) -> TemplateResponse | None:
        """The confirmation page until it comes back confirmed with a reason; then the cancellation (``None``)."""
        reason = request.POST.get("reason", "").strip()[:255]
        if request.POST.get("confirmed") == "yes" and reason:
            self._transition_selected(
                request, queryset, to=Order.Status.CANCELED, verb="Canceled", reason=reason
            )
            return None
        context = {
            **self.admin_site.each_context(request),
            "title": title,
            "orders": list(queryset.select_related("partner", "event").order_by("pk")),
            "action_name": request.POST.get("action", ""),
            "select_across": request.POST.get("select_across", "0"),
            "reason": request.POST.get("reason", ""),
            "error": "Give a reason for the cancellation." if request.POST.get("confirmed") else "",
            "opts": self.model._meta,
            "back_url": back_url or reverse("admin:orders_order_changelist"),
        }
        return TemplateResponse(request, "admin/orders/order/confirm_cancel.html", context)
