"""Sections (with their rows inline), rows, and the quantity adjustments of rows."""

from django import forms
from django.contrib import admin, messages
from django.core.exceptions import ValidationError
from django.http import HttpRequest
from django.shortcuts import get_object_or_404
from django.template.response import TemplateResponse
from django.urls import path, reverse
from django.utils.html import format_html

from config.core.admin_permissions import require, staff_may
from config.core.confirmation import ConfirmationForm, confirm, staff_actor

from .. import services
from ..models import Row, RowQuantityAdjustment, Section


class QuantityDisplay(forms.Widget):
    """The quantity as text, not an input: nothing on the page suggests it can be typed over."""

    def render(self, name, value, attrs=None, renderer=None) -> str:
        return format_html('<span class="readonly" id="{}">{}</span>', (attrs or {}).get("id", ""), value)


class RowForm(forms.ModelForm):
    """The quantity can be set when a row is added, and is read-only after (see ``services.row_save``)."""

    class Meta:
        model = Row
        fields = (
            "section",
            "name",
            "name_display",
            "available_quantity",
            "offer_price",
            "face_value",
            "restrictions",
            "restriction_detail",
        )

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        quantity = self.fields.get("available_quantity")
        if quantity is not None and self.instance.pk is not None:
            # Disabled: the posted value is ignored, and row_save never writes the field anyway.
            quantity.disabled = True
            quantity.widget = QuantityDisplay()
            quantity.help_text = "Changed by orders; correct it with “Adjust quantity”."


def _adjust_link(row: Row) -> str:
    if row.pk is None:
        return "—"
    return format_html(
        '<a href="{}">Adjust quantity</a>', reverse("admin:catalog_row_adjust_quantity", args=[row.pk])
    )


class RowInline(admin.TabularInline):
    model = Row
    form = RowForm
    fields = (
        "name",
        "name_display",
        "available_quantity",
        "adjust",
        "offer_price",
        "face_value",
        "restrictions",
        "restriction_detail",
    )
    readonly_fields = ("adjust",)
    extra = 0

    def get_fields(self, request, obj=None):
        fields = super().get_fields(request, obj)
        # The link leads to a page staff without the permission could not use.
        if not staff_may(request, "catalog.adjust_row_quantity"):
            return [f for f in fields if f != "adjust"]
        return fields

    @admin.display(description="Quantity")
    def adjust(self, obj: Row) -> str:
        return _adjust_link(obj)


def _save_row_formsets(formset) -> None:
    """Rows edited inline go through ``services.row_save`` (never their quantity once they exist)."""
    for row in formset.save(commit=False):
        services.row_save(row=row)
    for row in formset.deleted_objects:
        row.delete()
    formset.save_m2m()


@admin.register(Section)
class SectionAdmin(admin.ModelAdmin):
    list_display = ("name", "name_display", "event", "general_admission")
    search_fields = ("name", "event__name", "event__event_id")
    list_filter = ("general_admission",)
    list_select_related = ("event",)
    autocomplete_fields = ("event",)
    inlines = (RowInline,)

    def save_formset(self, request, form, formset, change: bool) -> None:
        if formset.model is Row:
            _save_row_formsets(formset)
        else:
            super().save_formset(request, form, formset, change)

    def save_related(self, request, form, formsets, change: bool) -> None:
        super().save_related(request, form, formsets, change)
        services.catalog_changed()


class RowQuantityAdjustmentInline(admin.TabularInline):
    """The row's adjustment history, newest first; adjustments are made with "Adjust quantity" only."""

    model = RowQuantityAdjustment
    fields = ("at", "delta", "quantity_after", "reason", "actor")
    readonly_fields = fields
    extra = 0
    can_delete = False
    verbose_name_plural = "Quantity adjustments"

    def has_add_permission(self, request, obj=None) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False


class QuantityAdjustmentForm(ConfirmationForm):
    delta = forms.IntegerField(
        label="Change",
        min_value=-1_000_000,
        max_value=1_000_000,
        help_text="Tickets to add (e.g. 5) or to remove (e.g. -5), relative to the quantity when you confirm.",
    )
    reason = forms.CharField(
        max_length=500, help_text="Why: kept with the adjustment.", widget=forms.TextInput(attrs={"size": 60})
    )
    field_order = ("delta", "reason")

    def clean_delta(self) -> int:
        delta = self.cleaned_data["delta"]
        if delta == 0:
            raise forms.ValidationError("An adjustment of 0 changes nothing.")
        return delta


class QuantityAdjustmentConfirmationForm(QuantityAdjustmentForm):
    """The staff confirmation of an adjustment: the change as entered (carried along), the reason editable."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["delta"].widget = forms.HiddenInput()


@admin.register(Row)
class RowAdmin(admin.ModelAdmin):
    form = RowForm
    list_display = ("name", "section", "available_quantity", "offer_price", "face_value")
    search_fields = ("name", "section__name", "section__event__name")
    list_select_related = ("section", "section__event")
    autocomplete_fields = ("section",)
    inlines = (RowQuantityAdjustmentInline,)

    def save_model(self, request, obj, form, change: bool) -> None:
        services.row_save(row=obj)

    def has_adjust_row_quantity_permission(self, request, obj: Row | None = None) -> bool:
        return staff_may(request, "catalog.adjust_row_quantity")

    def render_change_form(self, request, context, add=False, change=False, form_url="", obj=None):
        context["can_adjust"] = self.has_adjust_row_quantity_permission(request)
        return super().render_change_form(request, context, add, change, form_url, obj)

    def get_urls(self):
        custom = [
            path(
                "<int:pk>/adjust-quantity/",
                self.admin_site.admin_view(self.adjust_quantity_view),
                name="catalog_row_adjust_quantity",
            )
        ]
        return custom + super().get_urls()

    def adjust_quantity_view(self, request: HttpRequest, pk: int):
        """Two steps: the change and its reason, then the staff confirmation; applied relatively on confirm."""
        require(request, "catalog.adjust_row_quantity")  # on the form, the confirmation and its POST alike
        row = get_object_or_404(Row.objects.select_related("section__event"), pk=pk)
        if request.method == "POST" and request.POST.get("confirmed") == "yes":
            return self._confirm_adjustment(request, row, delta=request.POST.get("delta", ""))
        form = QuantityAdjustmentForm(request.POST if request.method == "POST" else None)
        if form.is_valid():
            delta = form.cleaned_data["delta"]
            if row.available_quantity + delta < 0:
                form.add_error(
                    "delta",
                    f"Cannot remove {-delta} tickets: the row has only {row.available_quantity} available.",
                )
            else:
                return self._confirm_adjustment(request, row, delta=delta, initial=form.cleaned_data)
        context = {
            **self.admin_site.each_context(request),
            "title": f"Adjust the quantity of {row.section.event.name} — {row.section} — {row}",
            "row": row,
            "form": form,
            "opts": self.model._meta,
            "original": row,
        }
        return TemplateResponse(request, "admin/catalog/row/adjust_quantity.html", context)

    def _confirm_adjustment(self, request: HttpRequest, row: Row, *, delta, initial=None):
        row_url = reverse("admin:catalog_row_change", args=[row.pk])

        def act(data: dict) -> None:
            delta, reason = data["delta"], data["reason"]
            try:
                adjustment = services.row_quantity_adjust(
                    row_pk=row.pk, delta=delta, reason=reason, actor=staff_actor(request)
                )
            except services.QuantityAdjustmentRefused as exc:
                row.refresh_from_db(fields=["available_quantity"])
                raise ValidationError(str(exc)) from None
            self.log_change(
                request, row, f"Quantity {delta:+d} ({reason}); {adjustment.quantity_after} available"
            )
            messages.success(
                request,
                f"Quantity of {row} adjusted by {delta:+d}: {adjustment.quantity_after} available now.",
            )

        try:
            title = _question(row, int(delta))
        except ValueError:
            title = f"Adjust the quantity of {row.section.event.name}, {row.section}, {row}?"
        return confirm(
            request,
            self,
            permissions=("catalog.adjust_row_quantity",),
            objects=[row],
            describe=lambda r: (r.section.event.name, r.section, r, r.available_quantity),
            columns=("Event", "Section", "Row", "Available now"),
            title=title,
            effects=(
                "the tickets are added or removed relative to the quantity at the moment you confirm, so "
                "orders taken meanwhile stay taken; it can never take the quantity below zero;",
                "the read API shows the new quantity at once; the adjustment is listed on the row and its event.",
            ),
            submit="Yes, adjust",
            reason_label="Reason (kept with the adjustment)",
            form_class=QuantityAdjustmentConfirmationForm,
            initial=initial,
            testid="confirm-adjust-quantity",
            act=act,
            back_url=reverse("admin:catalog_row_adjust_quantity", args=[row.pk]),
            done_url=row_url,
            record_label=str(row),
        )


def _question(row: Row, delta: int) -> str:
    change = f"Add {delta} tickets to" if delta > 0 else f"Remove {-delta} tickets from"
    return (
        f"{change} {row.section.event.name}, {row.section}, {row}? {row.available_quantity} are available now, "
        f"so about {row.available_quantity + delta} after, depending on the orders taken until you confirm."
    )


@admin.register(RowQuantityAdjustment)
class RowQuantityAdjustmentAdmin(admin.ModelAdmin):
    """Every adjustment, read-only: search by event id or name, section or row."""

    list_display = ("at", "row", "section", "event", "delta", "quantity_after", "reason", "actor")
    list_select_related = ("row__section__event",)
    search_fields = (
        "row__section__event__event_id",
        "row__section__event__name",
        "row__section__name",
        "reason",
    )
    date_hierarchy = "at"

    @admin.display(description="Section")
    def section(self, obj: RowQuantityAdjustment) -> str:
        return str(obj.row.section)

    @admin.display(description="Event")
    def event(self, obj: RowQuantityAdjustment) -> str:
        return str(obj.row.section.event)

    def has_add_permission(self, request) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False

    def has_delete_permission(self, request, obj=None) -> bool:
        return False
