"""Staff admin for orders: find and inspect them, download the ticket PDF, move them through the life cycle.

Every status change here goes through ``orders.services.order_transition``; orders are never added or edited
as raw rows. The order page has the list's actions as buttons ("Cancel order", "Mark tickets received"): a confirmation
with a reason for the history, then back to the order (a reload repeats nothing). Each needs its own named
permission (``orders.cancel_order``, ``orders.mark_received``), checked again on the confirming POST.
"""

from django.contrib import admin
from django.core.exceptions import PermissionDenied
from django.core.files.storage import default_storage
from django.db.models import Q
from django.http import FileResponse, Http404, HttpRequest
from django.shortcuts import get_object_or_404
from django.urls import NoReverseMatch, path, reverse
from django.utils import formats, timezone
from django.utils.html import format_html, format_html_join

from config.core import mail_once
from config.core.admin_permissions import staff_may
from config.core.admin_scale import LargeTableAdmin, RelatedWithRowsFilter
from config.core.history_admin import StatusHistoryInline
from config.core.models import MailOnce
from config.core.modes import ModeFilter
from quotes.models import ORDER_SNAPSHOT_FIELDS

from . import extensions, seller_mail, services
from .admin_lifecycle import OrderLifecycleAdminMixin
from .models import Notification, Order, OrderStatusHistory
from .selectors import DUE_SOON, OVERDUE, transfer_deadline_filter


class TransferStateFilter(admin.SimpleListFilter):
    """The order's transfer state (transfer detection's progress row, joined); an order without one is ``none``."""

    title = "transfer state"
    parameter_name = "transfer_state"

    def lookups(self, request, model_admin):
        return Order.TransferState.choices

    def queryset(self, request, queryset):
        value = self.value()
        if value not in Order.TransferState.values:
            return queryset
        if value == Order.TransferState.NONE:
            return queryset.filter(
                Q(transfer_progress__isnull=True) | Q(transfer_progress__state=Order.TransferState.NONE)
            )
        return queryset.filter(transfer_progress__state=value)


class TransferDeadlineFilter(admin.SimpleListFilter):
    """Orders awaiting transfer due within 48 hours or overdue, by the in-hand date at their venue (the staff
    dashboard's queues count the same orders: ``orders.selectors.transfer_deadline``)."""

    title = "transfer deadline"
    parameter_name = "transfer_deadline"

    def lookups(self, request, model_admin):
        return ((DUE_SOON, "Due within 48 hours"), (OVERDUE, "Overdue"))

    def queryset(self, request, queryset):
        if self.value() not in (DUE_SOON, OVERDUE):
            return queryset
        return queryset.filter(transfer_deadline_filter(self.value(), now=timezone.now()))


class OrderStatusHistoryInline(StatusHistoryInline):
    model = OrderStatusHistory


class NotificationInline(admin.TabularInline):
    """The notifications the order produced (what partners got on the feed and their webhooks), read-only."""

    model = Notification
    fields = ("notification_id", "type", "created_at", "dispatched_at")
    readonly_fields = fields
    extra = 0
    can_delete = False
    ordering = ("id",)
    verbose_name_plural = "Notifications"

    def has_add_permission(self, request, obj=None) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False


# Not registered here: the back office at the top of the house registers it once, with the order's money.
class OrderAdmin(LargeTableAdmin, OrderLifecycleAdminMixin, admin.ModelAdmin):
    """The order's list and page. The sub-apps add their sections, displays and list actions through
    ``orders.extensions.order_admin_extend`` (transfer detection's panel and "Mark accepted on platform"), looked
    up when a page is drawn: the order core never imports them."""

    list_display = (
        "order_id",
        "status",
        "partner_name",
        "reference",
        "event_name",
        "event_date",
        "tickets",
        "total",
        "in_hand",
    )
    # The list fits a 1280 px screen beside the filters: quantity and seat share a column, and the creation time
    # is left to the "created at" filter and the newest-first order.
    list_filter = (
        ModeFilter,
        "status",
        TransferStateFilter,
        TransferDeadlineFilter,
        ("partner", RelatedWithRowsFilter),
        ("event", RelatedWithRowsFilter),
        "delivery_type",
        "is_ready_to_deliver",
        "created_at",
        "in_hand_date",
    )
    # What staff paste from an e-mail or a partner's ticket matches whole, through an index: the order id, the
    # partner's reference, the transfer address, the seller's e-mail (any case). A partner or an event is found by
    # its id or a fragment of its name (config/core/admin_scale.py).
    search_fields = ("order_id",)  # the search box; the search itself is exact_search and related_search
    search_help_text = (
        "An order id, partner reference, transfer address or seller e-mail, whole; or a partner's or an event's id "
        "or a part of its name."
    )
    exact_search = ("order_id", "partner_reference", "transfer_address", "seller_email__iexact")
    related_search = {"partner": ("public_id", "name__icontains"), "event": ("event_id", "name__icontains")}
    list_select_related = ("partner", "event")
    ordering = ("-created_at", "-id")
    inlines = (OrderStatusHistoryInline, NotificationInline)
    change_form_template = "admin/orders/order/change_form.html"
    fieldsets = (
        (
            None,
            {
                "fields": (
                    "order_id",
                    "status",
                    "status_changed_at",
                    "partner",
                    "event_link",
                    "partner_reference",
                )
            },
        ),
        (
            "Delivery",
            {
                "fields": (
                    "delivery_type",
                    "is_ready_to_deliver",
                    "in_hand_date",
                    "transfer_address",
                    "ticket_pdf",
                    "seller_email",
                    "seller_name",
                )
            },
        ),
        (
            "Quote snapshot",
            {
                "fields": (
                    "quote_id_display",
                    "quote_expires_at",
                    *ORDER_SNAPSHOT_FIELDS,
                    "seller_metadata",
                )
            },
        ),
        (
            "Confirmation",
            {
                "fields": (
                    "confirmation_started_at",
                    "confirmation_requeued_at",
                    "confirmation_email_claimed_at",
                    "confirmation_email_handed_over_at",
                    "confirmation_email_sent_at",
                    "confirmation_email_unconfirmed",
                    "confirmation_email_to",
                )
            },
        ),
        ("Record", {"fields": ("created_at", "updated_at")}),
    )

    @property
    def actions(self) -> tuple:  # type: ignore[override]
        added = tuple(name for extension in extensions.ORDER_ADMIN_EXTENSIONS for name in extension.actions)
        return ("mark_ticket_received", *added, "cancel_orders")

    def get_action(self, action):
        if isinstance(action, str) and not hasattr(self.__class__, action):
            try:
                func = extensions.order_admin_attribute(action)
            except AttributeError:
                return super().get_action(action)
            return func, action, self._get_action_description(func, action)
        return super().get_action(action)

    def __getattr__(self, name: str):
        # A display or permission check a sub-app added (``orders.extensions``), bound to this admin.
        if name.startswith("__"):
            raise AttributeError(name)
        attribute = extensions.order_admin_attribute(name)
        return attribute.__get__(self, type(self)) if hasattr(attribute, "__get__") else attribute

    def get_fieldsets(self, request, obj=None):
        fieldsets = list(self.fieldsets)
        at = next(i for i, (title, _) in enumerate(fieldsets) if title == "Delivery") + 1
        for extension in extensions.ORDER_ADMIN_EXTENSIONS:
            fieldsets[at:at] = extension.fieldsets
            at += len(extension.fieldsets)
        return fieldsets

    def get_readonly_fields(self, request, obj=None):
        # Everything is read-only: orders change only through the life-cycle actions.
        return [f for fieldset in self.get_fieldsets(request, obj) for f in fieldset[1]["fields"]]

    def has_add_permission(self, request) -> bool:
        return False

    def has_delete_permission(self, request, obj=None) -> bool:
        return False

    def get_queryset(self, request):
        return super().get_queryset(request).select_related("partner", "event", "quote")

    # --- display -------------------------------------------------------------------------------------------
    # The seller's confirmation e-mail, as the e-mails sent at most once record it (config.core.mail_once).
    def _confirmation_email(self, obj: Order) -> MailOnce | None:
        if not hasattr(obj, "_confirmation_email"):
            obj._confirmation_email = mail_once.rows(seller_mail.CONFIRMATION_MAIL, [obj.pk]).first()
        return obj._confirmation_email

    @admin.display(description="Confirmation e-mail claimed at")
    def confirmation_email_claimed_at(self, obj: Order):
        row = self._confirmation_email(obj)
        return _when(row.claimed_at) if row else None

    @admin.display(description="Confirmation e-mail handed over at")
    def confirmation_email_handed_over_at(self, obj: Order):
        row = self._confirmation_email(obj)
        return _when(row.handed_over_at) if row else None

    @admin.display(description="Confirmation e-mail sent at")
    def confirmation_email_sent_at(self, obj: Order):
        row = self._confirmation_email(obj)
        return _when(row.sent_at) if row else None

    @admin.display(
        description="Confirmation e-mail unconfirmed (handed to the mail server, acceptance never recorded: "
        "probably sent, never sent again automatically)",
        boolean=True,
    )
    def confirmation_email_unconfirmed(self, obj: Order) -> bool:
        row = self._confirmation_email(obj)
        return bool(row and row.unconfirmed)

    @admin.display(description="Confirmation e-mail to")
    def confirmation_email_to(self, obj: Order) -> str:
        row = self._confirmation_email(obj)
        return row.recipient if row else ""

    @admin.display(description="Partner", ordering="partner__name")
    def partner_name(self, obj: Order) -> str:
        return obj.partner.name

    @admin.display(description="Event", ordering="event__starts_at")
    def event_name(self, obj: Order) -> str:
        return obj.event.name

    # Short headers and ISO dates keep the list within 1280 px (Django's headers do not wrap).
    @admin.display(description="Partner ref.", ordering="partner_reference")
    def reference(self, obj: Order) -> str:
        return obj.partner_reference or "—"

    @admin.display(description="Event date", ordering="event__event_date")
    def event_date(self, obj: Order) -> str:
        return obj.event.event_date.isoformat()

    @admin.display(description="Total", ordering="total_price")
    def total(self, obj: Order) -> str:
        return str(obj.total_price)

    @admin.display(description="In hand", ordering="in_hand_date")
    def in_hand(self, obj: Order) -> str:
        return obj.in_hand_date.isoformat() if obj.in_hand_date else "—"

    @admin.display(description="Event")
    def event_link(self, obj: Order) -> str:
        label = f"{obj.event.name} ({obj.event.event_id})"
        try:
            url = reverse("admin:catalog_event_change", args=[obj.event_id])
        except NoReverseMatch:
            return label
        return format_html('<a href="{}">{}</a>', url, label)

    @admin.display(description="Tickets", ordering="quantity")
    def tickets(self, obj: Order) -> str:
        return f"{obj.quantity} × {obj.section_name_display} / {obj.row_name_display}"

    @admin.display(description="quote_id")
    def quote_id_display(self, obj: Order) -> str:
        return obj.quote_token

    @admin.display(description="Seller (quote user_metadata)")
    def seller_metadata(self, obj: Order) -> str:
        metadata = obj.quote.user_metadata if isinstance(obj.quote.user_metadata, dict) else {}
        if not metadata:
            return "—"
        return format_html_join(", ", "{}: {}", sorted(metadata.items()))

    @admin.display(description="Ticket PDF")
    def ticket_pdf(self, obj: Order) -> str:
        if not obj.has_ticket_file:
            return "—"
        url = reverse("admin:orders_order_ticket_pdf", args=[obj.pk])
        return format_html('<a href="{}">Download {}.pdf</a>', url, obj.order_id)

    # --- the order page's buttons ------------------------------------------------------------------------------
    def render_change_form(self, request, context, add=False, change=False, form_url="", obj=None):
        context["order_actions"] = self.order_actions(request, obj) if obj is not None else []
        # Every field is read-only: the page changes an order only through its buttons, never by saving.
        context.update(show_save=False, show_save_and_continue=False, show_save_and_add_another=False)
        return super().render_change_form(request, context, add, change, form_url, obj)

    def order_actions(self, request: HttpRequest, order: Order) -> list[tuple[str, str, str]]:
        """The buttons of the order's page, as (label, URL, kind): each leads to its confirmation, and only staff
        with its permission see it. The kind ``cancel`` is drawn as a destructive button, the others as ordinary
        ones."""
        actions = []
        if order.status == Order.Status.AWAITING_TRANSFER and self.has_mark_received_permission(request):
            url = reverse("admin:orders_order_mark_received", args=[order.pk])
            actions.append(("Mark tickets received", url, "received"))
        if order.status in services.CANCELABLE and self.has_cancel_order_permission(request):
            actions.append(("Cancel order", reverse("admin:orders_order_cancel", args=[order.pk]), "cancel"))
        return actions

    # --- permissions: each life-cycle action asks for its own (docs/staff-guide.md "Staff permissions and groups") ----------------------
    def has_cancel_order_permission(self, request: HttpRequest, obj: Order | None = None) -> bool:
        return staff_may(request, "orders.cancel_order")

    def has_mark_received_permission(self, request: HttpRequest, obj: Order | None = None) -> bool:
        return staff_may(request, "orders.mark_received")

    # --- PDF download and the order page's actions ------------------------------------------------------------
    def get_urls(self):
        urls = super().get_urls()
        custom = [
            path(
                "<int:pk>/ticket.pdf",
                self.admin_site.admin_view(self.ticket_pdf_view),
                name="orders_order_ticket_pdf",
            ),
            path(
                "<int:pk>/cancel/", self.admin_site.admin_view(self.cancel_view), name="orders_order_cancel"
            ),
            path(
                "<int:pk>/mark-received/",
                self.admin_site.admin_view(self.mark_received_view),
                name="orders_order_mark_received",
            ),
        ]
        return custom + urls

    def ticket_pdf_view(self, request: HttpRequest, pk: int) -> FileResponse:
        """Streams the PDF from storage to staff who may view orders; the file itself is never public."""
        if not self.has_view_permission(request):
            raise PermissionDenied
        order = get_object_or_404(Order, pk=pk)
        if not order.has_ticket_file:
            raise Http404("This order has no ticket PDF.")
        handle = default_storage.open(order.ticket_file.name, "rb")
        response = FileResponse(
            handle, content_type="application/pdf", as_attachment=True, filename=f"{order.order_id}.pdf"
        )
        response["Cache-Control"] = "private, no-store"
        return response


from . import notifications_admin  # noqa: E402, F401  (registers the notifications' admin)


def _when(value):
    """A time shown as the admin shows the order's own times (the staff's time zone, the site's format)."""
    return formats.localize(timezone.template_localtime(value)) if value else None
