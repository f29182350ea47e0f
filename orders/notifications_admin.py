"""Staff admin for the notification outbox: read-only, live notifications unless test ones are asked for."""

from django.contrib import admin

from config.core.history_admin import ReadOnlyAdmin
from config.core.modes import ModeFilter

from .models import Notification


@admin.register(Notification)
class NotificationAdmin(ReadOnlyAdmin):
    list_display = ("notification_id", "type", "partner", "order", "livemode", "created_at", "dispatched_at")
    list_filter = (ModeFilter, "type", "created_at")
    search_fields = ("=notification_id", "=order__order_id", "partner__name", "partner__public_id")
    list_select_related = ("partner", "order")
    date_hierarchy = "created_at"
    readonly_fields = ("notification_id", "partner", "livemode", "type", "order", "payload", "created_at")
    fields = readonly_fields + ("dispatched_at",)
