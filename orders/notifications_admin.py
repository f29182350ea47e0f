"""Staff admin for the notification outbox: read-only, live notifications unless test ones are asked for."""

from django.contrib import admin

from config.core.admin_scale import LargeTableAdmin
from config.core.history_admin import ReadOnlyAdmin
from config.core.modes import ModeFilter

from .models import Notification


@admin.register(Notification)
class NotificationAdmin(LargeTableAdmin, ReadOnlyAdmin):
    list_display = ("notification_id", "type", "partner", "order", "livemode", "created_at", "dispatched_at")
    list_filter = (ModeFilter, "type", "created_at")
    # A notification or order id whole, or a partner by its id or a fragment of its name (config/core/admin_scale.py).
    search_fields = ("notification_id",)
    exact_search = ("notification_id",)
    related_search = {"order": ("order_id",), "partner": ("public_id", "name__icontains")}
    list_select_related = ("partner", "order")
    readonly_fields = ("notification_id", "partner", "livemode", "type", "order", "payload", "created_at")
    fields = readonly_fields + ("dispatched_at",)
