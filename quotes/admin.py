"""Staff admin for quotes: read-only (quotes change only through the API and the purge task)."""

from django.contrib import admin
from django.utils import timezone

from config.core.history_admin import ReadOnlyAdmin
from config.core.modes import ModeFilter

from . import services
from .codec import decode_quote_id, encode_quote_id
from .models import Quote


class StatusFilter(admin.SimpleListFilter):
    title = "status"
    parameter_name = "status"

    def lookups(self, request, model_admin):
        return Quote.Status.choices

    def queryset(self, request, queryset):
        now = timezone.now()
        if self.value() == Quote.Status.CONSUMED:
            return queryset.filter(consumed_at__isnull=False)
        if self.value() == Quote.Status.EXPIRED:
            return queryset.filter(consumed_at__isnull=True, expires_at__lte=now)
        if self.value() == Quote.Status.ACTIVE:
            return queryset.filter(consumed_at__isnull=True, expires_at__gt=now)
        return queryset


@admin.register(Quote)
class QuoteAdmin(ReadOnlyAdmin):
    def _quotes_written(self, request) -> None:
        # Quotes kept in Redis first are listed once the batched writer copied them: a page shown to someone
        # allowed to see it runs the writer first, so it lists the quote made a second ago.
        if request.method == "GET" and self.has_view_or_change_permission(request):
            services.quotes_flush()

    def changelist_view(self, request, extra_context=None):
        self._quotes_written(request)
        return super().changelist_view(request, extra_context)

    def change_view(self, request, object_id, form_url="", extra_context=None):
        self._quotes_written(request)
        return super().change_view(request, object_id, form_url, extra_context)

    # The primary key of a quote made now is a random 19-digit number, of no use to staff: a quote is found by
    # the quote_id a partner sends (the search box) or by partner, event and time.
    # The list fits a 1280 px screen beside the filters: section and row share a column, and the prices are
    # the total with its per-ticket offer.
    list_display = ("created_at", "partner_name", "event_name", "seats", "price", "status", "expires_at")
    list_display_links = ("created_at",)
    list_filter = (ModeFilter, StatusFilter, "created_at")
    search_fields = ("event_name", "partner__name", "partner__public_id", "event__event_id")
    list_select_related = ("partner",)
    date_hierarchy = "created_at"
    readonly_fields = ("quote_id", "status")

    @admin.display(description="Partner", ordering="partner__name")
    def partner_name(self, obj: Quote) -> str:
        return obj.partner.name

    @admin.display(description="Seats")
    def seats(self, obj: Quote) -> str:
        return f"{obj.quantity} × {obj.section_name} / {obj.row_name}"

    @admin.display(description="Price (USD)", ordering="total_price")
    def price(self, obj: Quote) -> str:
        return f"{obj.total_price} ({obj.offer_price} each)"

    @admin.display(description="quote_id (as partners see it)")
    def quote_id(self, obj: Quote) -> str:
        return encode_quote_id(obj) if obj.pk else "—"

    def get_search_results(self, request, queryset, search_term):
        # Support pastes the quote_id a partner sent: find the quote behind it.
        pk = decode_quote_id(search_term.strip())
        if pk is not None:
            return queryset.filter(pk=pk), False
        return super().get_search_results(request, queryset, search_term)
