"""The transfer on the order's admin page and list: the "Transfer" panel (state, quantity detected, source,
when detected and accepted, the open cases), and the bulk "Mark accepted on platform" for orders whose
transfer was detected, its confirmation listing each order's accept links.

Added to ``orders.admin.OrderAdmin`` through ``orders.extensions.order_admin_extend``; every change goes through
``orders.transfers.staff.services``."""

from __future__ import annotations

from collections.abc import Callable

from django.contrib import admin, messages
from django.http import HttpRequest
from django.urls import reverse
from django.utils.html import format_html, format_html_join
from django.utils.safestring import SafeString, mark_safe

from config.core.admin_permissions import staff_may
from config.core.confirmation import confirm, staff_actor
from orders.models import Order
from orders.transfers.staff import selectors
from orders.transfers.staff.services import Refused, order_accept

TS = Order.TransferState


def accept_links(orders) -> dict[int, list[str]]:
    """Each order's accept links, from its evidence, oldest first and without repeats."""
    return selectors.orders_accept_links(orders=orders)


def link_html(link: str) -> SafeString:
    """An accept link staff open in a new tab (the service itself never fetches it). Only http(s) links are
    links: anything else from a mail is shown as text."""
    if link.lower().startswith(("https://", "http://")):
        return format_html(
            '<a href="{}" target="_blank" rel="noopener noreferrer nofollow">{}</a>', link, link
        )
    return format_html("<code>{}</code>", link)


ORDER_COLUMNS = ("Order", "Status", "Transfer", "Partner · event", "Tickets", "Accept links")


def order_cells(orders) -> Callable[[Order | None], tuple]:
    """What a confirmation lists of each of ``orders``: what it is, and its accept links (read once for all)."""
    links = accept_links([o for o in orders if o is not None])

    def cells(order: Order | None) -> tuple:
        if order is None:
            return ("no order", "", "", "", "", "")
        test = " (test)" if not order.livemode else ""
        url = reverse("admin:orders_order_change", args=[order.pk])
        received = [link_html(link) for link in links.get(order.pk, [])]
        return (
            format_html('<a href="{}"><code>{}</code></a>{}', url, order.order_id, test),
            order.get_status_display(),
            order.transfer.get_state_display(),
            f"{order.partner.name} · {order.event.name}",
            f"{order.quantity} × {order.section_name_display} / {order.row_name_display}",
            format_html_join(mark_safe("<br>"), "{}", ((link,) for link in received)) or "none received",
        )

    return cells


class OrderTransferAdminMixin:
    """Mixed into ``OrderAdmin`` (a ``ModelAdmin``)."""

    @admin.display(description="Transfer")
    def transfer_panel(self, obj: Order) -> SafeString:
        if obj is None or obj.pk is None:
            return format_html("{}", "—")
        cases = selectors.order_open_cases(order=obj)
        open_cases = (
            format_html_join(
                ", ",
                '<a href="{}">{} ({})</a>',
                (
                    (
                        reverse("admin:transfers_transfercase_change", args=[c.pk]),
                        c.get_kind_display(),
                        c.get_state_display(),
                    )
                    for c in cases
                ),
            )
            if cases
            else "none"
        )

        transfer = obj.transfer

        def when(value) -> str:
            return value.strftime("%Y-%m-%d %H:%M UTC") if value else "—"

        rows = (
            ("State", transfer.get_state_display()),
            ("Quantity detected", f"{transfer.quantity_detected} of {obj.quantity}"),
            ("Source", transfer.get_source_display() if transfer.source else "—"),
            ("Detected at", when(transfer.detected_at)),
            ("Accepted at", when(transfer.accepted_at)),
        )
        return format_html(
            '<table data-testid="transfer-panel">{}<tr><th>Open cases</th><td>{}</td></tr></table>',
            format_html_join("", "<tr><th>{}</th><td>{}</td></tr>", rows),
            open_cases,
        )

    def has_mark_accepted_on_platform_permission(self, request: HttpRequest, obj=None) -> bool:
        return staff_may(request, "transfers.mark_accepted_on_platform")

    @admin.action(description="Mark accepted on platform", permissions=["mark_accepted_on_platform"])
    def mark_accepted_on_platform(self, request, queryset):
        """Staff accepted these orders' transfers on the platform: recorded once each, after a confirmation that
        lists the accept links and asks for a reason."""
        orders = list(queryset.select_related("partner", "event").order_by("pk"))

        def act(data: dict) -> None:
            done, refused = [], []
            for order in orders:
                try:
                    order_accept(order=order, actor=staff_actor(request), reason=data["reason"])
                except Refused as exc:
                    refused.append(str(exc))
                else:
                    done.append(order.order_id)
            if done:
                self.message_user(
                    request, f"Recorded as accepted on the platform: {', '.join(done)}.", messages.SUCCESS
                )
            for text in refused:
                self.message_user(request, f"Not recorded: {text}", messages.ERROR)

        return confirm(
            request,
            self,
            permissions=("transfers.mark_accepted_on_platform",),
            objects=orders,
            describe=order_cells(orders),
            columns=ORDER_COLUMNS,
            title="Record these transfers as accepted on the platform?",
            effects=(
                "confirm only once you accepted each transfer on the platform, from the accept links below;",
                "each order whose tickets were received gets its transfer accepted (reason accepted_by_staff), "
                "so its payout may start, and the partner an order.transfer_updated notification;",
                "orders not received yet, or already accepted, are left alone and named afterwards.",
            ),
            submit="Yes, they were accepted on the platform",
            testid="confirm-accept",
            act=act,
        )
