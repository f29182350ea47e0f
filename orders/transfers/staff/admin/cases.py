"""Staff pages of transfer detection: the "Transfers" queue of cases, and the inbound messages and evidence
behind them, read-only.

A case page shows the mail as text (never its HTML rendered), the authentication summary and the evidence
against the order side by side, with the case's actions as buttons (``actions``: a confirmation with a
reason, its own permission, then back to the case with a GET). The raw message is downloaded by staff who
may resolve cases. Live data by default, as every staff view."""

from __future__ import annotations

from functools import partial

from django import forms
from django.contrib import admin, messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404
from django.urls import path, reverse
from django.utils.html import format_html

from config.core.admin_permissions import require, staff_may
from config.core.confirmation import AcceptedForm, ConfirmationForm, confirm, staff_actor
from config.core.history_admin import ReadOnly, StatusHistoryInline
from orders.transfers.models import TransferCase, TransferCaseHistory
from orders.transfers.staff.admin import display as show
from orders.transfers.staff.admin import platform_templates as platform_admin
from orders.transfers.staff.admin.actions import ACTIONS, CaseAction, applies
from orders.transfers.staff.admin.order import ORDER_COLUMNS, accept_links, link_html, order_cells
from orders.transfers.staff.admin.records import OrderModeFilter
from orders.transfers.staff.services import Refused, case_act

CS = TransferCase.State


class SellerMessageForm(ConfirmationForm):
    """ "Ask the seller": the message staff write (it starts from ``default_question``)."""

    message = forms.CharField(
        label="Message to the seller",
        widget=forms.Textarea(attrs={"rows": 6}),
        error_messages={"required": "Write the message to the seller."},
    )


def form_for(action: CaseAction) -> type[ConfirmationForm]:
    if action.ask_message:
        return SellerMessageForm
    return AcceptedForm if action.ask_accepted else ConfirmationForm


class CaseStateFilter(admin.SimpleListFilter):
    """The queue shows the cases still to decide (open or in review) unless asked otherwise."""

    title = "state"
    parameter_name = "state"
    UNRESOLVED = "unresolved"
    CHOICES = [(UNRESOLVED, "To decide (open or in review)"), *CS.choices, ("all", "All")]

    def lookups(self, request, model_admin):
        return self.CHOICES

    def _selected(self) -> str:
        return self.value() if self.value() in dict(self.CHOICES) else self.UNRESOLVED

    def choices(self, changelist):
        for value, label in self.lookup_choices:
            yield {
                "selected": self._selected() == value,
                "query_string": changelist.get_query_string({self.parameter_name: value}),
                "display": label,
            }

    def queryset(self, request, queryset):
        selected = self._selected()
        if selected == "all":
            return queryset
        if selected == self.UNRESOLVED:
            return queryset.filter(state__in=TransferCase.OPEN_STATES)
        return queryset.filter(state=selected)


class TransferCaseHistoryInline(StatusHistoryInline):
    model = TransferCaseHistory
    verbose_name_plural = "Case history"


@admin.register(TransferCase)
class TransferCaseAdmin(ReadOnly, admin.ModelAdmin):
    list_display = ("case", "kind", "state_shown", "order_link", "partner", "why", "created", "age")
    list_filter = (OrderModeFilter, CaseStateFilter, "kind", "resolution", "created_at")
    search_fields = ("=order__order_id", "order__transfer_address", "message__recipient")
    search_help_text = "An order id (exactly), or a transfer address or a part of it."
    list_select_related = ("order", "order__partner")
    ordering = ("created_at", "id")  # the queue: the oldest first
    actions = ("accept_on_platform",)
    inlines = (TransferCaseHistoryInline,)
    change_form_template = "admin/transfers/transfercase/change_form.html"
    fieldsets = (
        (None, {"fields": ("kind", "state", "order_link", "partner", "summary", "created_at", "age")}),
        ("The mail, as text", {"fields": ("mail",)}),
        ("Authentication", {"fields": ("authentication",)}),
        ("Evidence against the order", {"fields": ("evidence", "order_transfer", "accept_links")}),
        ("Resolution", {"fields": ("resolution_shown", "resolved_by", "resolved_at", "resolution_reason")}),
    )

    def get_readonly_fields(self, request, obj=None):
        return [f for fieldset in self.fieldsets for f in fieldset[1]["fields"]]

    def get_queryset(self, request):
        return (
            super().get_queryset(request).select_related("order", "order__partner", "order__event", "message")
        )

    # --- display -----------------------------------------------------------------------------------------------
    @admin.display(description="Case", ordering="id")
    def case(self, obj: TransferCase) -> str:
        return f"#{obj.pk}"

    @admin.display(description="State", ordering="state")
    def state_shown(self, obj: TransferCase) -> str:
        if obj.state != CS.RESOLVED:
            return obj.get_state_display()
        return "Closed by the service" if obj.details.get("decided_by") else obj.get_resolution_display()

    @admin.display(description="Resolution")
    def resolution_shown(self, obj: TransferCase) -> str:
        return show.resolution(obj)

    @admin.display(description="Order", ordering="order__order_id")
    def order_link(self, obj: TransferCase) -> str:
        if obj.order is None:
            return "—"
        url = reverse("admin:orders_order_change", args=[obj.order_id])
        test = " (test)" if not obj.order.livemode else ""
        return format_html('<a href="{}">{}</a>{}', url, obj.order.order_id, test)

    @admin.display(description="Partner", ordering="order__partner__name")
    def partner(self, obj: TransferCase) -> str:
        return obj.order.partner.name if obj.order else "—"

    @admin.display(description="Why")
    def why(self, obj: TransferCase) -> str:
        return obj.summary if len(obj.summary) <= 70 else obj.summary[:69] + "…"

    @admin.display(description="Created", ordering="created_at")
    def created(self, obj: TransferCase) -> str:
        return format_html(
            '<span style="white-space: nowrap">{}</span>', f"{obj.created_at:%Y-%m-%d %H:%M} UTC"
        )

    @admin.display(description="Age", ordering="created_at")
    def age(self, obj: TransferCase) -> str:
        return format_html('<span style="white-space: nowrap">{}</span>', show.age(obj.created_at))

    @admin.display(description="Mail")
    def mail(self, obj: TransferCase):
        return show.message_as_text(obj.message)

    @admin.display(description="Summary")
    def authentication(self, obj: TransferCase):
        return show.auth_summary(obj.message)

    @admin.display(description="Field by field")
    def evidence(self, obj: TransferCase):
        return show.evidence_table(obj)

    @admin.display(description="The order's transfer")
    def order_transfer(self, obj: TransferCase):
        if obj.order is None:
            return "—"
        o = obj.order
        return format_html(
            "{} · {} of {} tickets detected · {} · section {} row {}",
            o.transfer.get_state_display(),
            o.transfer.quantity_detected,
            o.quantity,
            o.get_status_display(),
            o.section_name_display,
            o.row_name_display,
        )

    @admin.display(description="Accept links")
    def accept_links(self, obj: TransferCase):
        if obj.order is None:
            return "—"
        links = [link_html(link) for link in accept_links([obj.order]).get(obj.order.pk, [])]
        return format_html("<br>".join(["{}"] * len(links)), *links) if links else "—"

    # --- the case page's buttons ---------------------------------------------------------------------------------
    def changelist_view(self, request, extra_context=None):
        extra_context = {"title": "Transfers: the cases to decide", **(extra_context or {})}
        return super().changelist_view(request, extra_context)

    def render_change_form(self, request, context, add=False, change=False, form_url="", obj=None):
        context["case_actions"] = self.case_actions(request, obj) if obj is not None else []
        context["learn_url"] = platform_admin.learn_link(request, obj) if obj is not None else ""
        context["new_platform"] = platform_admin.new_platform_link(request, obj) if obj is not None else None
        if obj is not None:
            order = f" · order {obj.order.order_id}" if obj.order else ""
            context.update(
                title=f"Transfer case #{obj.pk}",
                subtitle=f"{obj.get_kind_display()} · {obj.get_state_display()}{order}",
            )
        return super().render_change_form(request, context, add, change, form_url, obj)

    def case_actions(self, request: HttpRequest, case: TransferCase) -> list[tuple[str, str, str]]:
        """(label, URL, kind) of each action staff may take on the case now."""
        return [
            (action.label, reverse(f"admin:transfers_transfercase_{name}", args=[case.pk]), action.kind)
            for name, action in ACTIONS.items()
            if applies(action, case) and all(staff_may(request, p) for p in action.permissions)
        ]

    def get_urls(self):
        custom = [
            path(
                f"<int:pk>/{name}/",
                self.admin_site.admin_view(partial(self.action_view, name=name)),
                name=f"transfers_transfercase_{name}",
            )
            for name in ACTIONS
        ]
        return custom + super().get_urls()

    def action_view(self, request: HttpRequest, pk: int, *, name: str) -> HttpResponse:
        """A case button: its confirmation until it comes back confirmed with a reason, the action, then the
        case page with a GET. Its permissions are checked on every request, the confirming POST included."""
        action = ACTIONS[name]
        for permission in action.permissions:
            require(request, permission)
        case = get_object_or_404(self.get_queryset(request), pk=pk)
        case_url = reverse("admin:transfers_transfercase_change", args=[pk])

        def act(data: dict) -> None:
            try:
                done = case_act(
                    case_pk=case.pk,
                    action=action,
                    actor=staff_actor(request),
                    reason=data["reason"],
                    accepted=data.get("accepted", False),
                    message=data.get("message", ""),
                )
            except Refused as exc:
                self.message_user(request, str(exc), messages.ERROR)
            else:
                self.message_user(request, f"{done}. Case #{case.pk} resolved.", messages.SUCCESS)

        summary = f" — {case.summary}" if case.summary else ""
        return confirm(
            request,
            self,
            permissions=action.permissions,
            objects=[case.order] if case.order else [],
            describe=order_cells([case.order]),
            columns=ORDER_COLUMNS,
            title=action.title,
            lead=f"Case #{case.pk} · {case.get_kind_display()} · {case.get_state_display()}{summary}",
            effects=action.effects,
            submit=action.submit,
            reason_label="Reason (kept in the case's history)",
            form_class=form_for(action),
            initial={"message": default_question(case)} if action.ask_message else None,
            testid=f"confirm-{name}",
            act=act,
            back_url=case_url,
            done_url=case_url,
            record_label=f"Case #{case.pk}",
            arrives_by_post=True,
        )

    # --- bulk: accepted on the platform ----------------------------------------------------------------------------
    def has_mark_accepted_on_platform_permission(self, request: HttpRequest, obj=None) -> bool:
        return staff_may(request, "transfers.mark_accepted_on_platform")

    @admin.action(description="Mark accepted on platform", permissions=["mark_accepted_on_platform"])
    def accept_on_platform(self, request, queryset):
        cases = list(queryset.select_related("order", "order__partner", "order__event").order_by("pk"))

        def act(data: dict) -> None:
            for case in cases:
                try:
                    done = case_act(
                        case_pk=case.pk,
                        action=ACTIONS["accept"],
                        actor=staff_actor(request),
                        reason=data["reason"],
                    )
                except Refused as exc:
                    self.message_user(request, f"Case #{case.pk}: {exc}", messages.ERROR)
                else:
                    self.message_user(request, f"{done}. Case #{case.pk} resolved.", messages.SUCCESS)

        cells = order_cells([c.order for c in cases])
        return confirm(
            request,
            self,
            permissions=ACTIONS["accept"].permissions,
            objects=cases,
            describe=lambda case: cells(case.order),
            columns=ORDER_COLUMNS,
            title="Record these transfers as accepted on the platform?",
            effects=ACTIONS["accept"].effects,
            submit=ACTIONS["accept"].submit,
            reason_label="Reason (kept in each case's history)",
            testid="confirm-accept",
            act=act,
        )


def default_question(case: TransferCase) -> str:
    """The message "Ask the seller" starts from: staff edit it before it is sent."""
    order = case.order
    if order is None:
        return ""
    differs = [name for name, v in show._fields_of(case).items() if v.get("ok") is False]
    detail = f" The transfer we received differs in: {', '.join(differs)}." if differs else ""
    return (
        f"We received a ticket transfer for order {order.order_id}, but we could not confirm it matches the "
        f"tickets you sold ({order.quantity} × section {order.section_name_display}, row {order.row_name_display})."
        f"{detail} Could you check the transfer and send the tickets you sold to the order's transfer address?"
    )
