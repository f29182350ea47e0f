"""Staff admin for webhooks: endpoints and deliveries (with their attempts), read-only.

Secrets never appear here, not even encrypted. Search by partner (name or id), endpoint id or URL, and
notification id. Staff allowed to change endpoints may enable again one that was disabled for failing (410 Gone,
or 3 days of failures) once its partner has fixed it; one its partner disabled stays the partner's to enable.
"""

from django.contrib import admin, messages

from config.core.admin_permissions import staff_may
from config.core.admin_scale import LargeTableAdmin
from config.core.confirmation import confirm, staff_actor
from config.core.history_admin import ReadOnlyAdmin, StatusHistoryInline

from . import services
from .models import WebhookAttempt, WebhookDelivery, WebhookEndpoint, WebhookEndpointStatusHistory


class EndpointStatusHistoryInline(StatusHistoryInline):
    model = WebhookEndpointStatusHistory
    verbose_name_plural = "Status history (who disabled or enabled it, and why)"


@admin.register(WebhookEndpoint)
class WebhookEndpointAdmin(ReadOnlyAdmin):
    list_display = ("endpoint_id", "partner", "url", "status", "disabled_reason", "livemode", "created_at")
    list_filter = ("status", "livemode", "disabled_reason")
    search_fields = ("endpoint_id", "url", "partner__name", "partner__public_id")
    list_select_related = ("partner",)
    fields = (
        "endpoint_id",
        "partner",
        "livemode",
        "url",
        "event_types",
        "description",
        "status",
        "disabled_reason",
        "disabled_at",
        "failing_since",
        "last_success_at",
        "previous_secret_expires_at",
        "created_at",
        "updated_at",
    )
    readonly_fields = fields
    actions = ("enable_endpoints",)
    inlines = (EndpointStatusHistoryInline,)

    def has_enable_endpoint_permission(self, request, obj: WebhookEndpoint | None = None) -> bool:
        # The model's change permission: the endpoint's fields stay read-only (partners edit them), turning
        # it back on is the one change staff make.
        return staff_may(request, "webhooks.change_webhookendpoint")

    @admin.action(
        description="Enable again (endpoints disabled for failing; not those their partner disabled)",
        permissions=["enable_endpoint"],
    )
    def enable_endpoints(self, request, queryset):
        endpoints = list(queryset.select_related("partner").order_by("pk"))

        def act(data: dict) -> None:
            enabled = 0
            for endpoint in endpoints:
                if endpoint.status != WebhookEndpoint.Status.DISABLED or (
                    endpoint.disabled_reason == WebhookEndpoint.DisabledReason.BY_PARTNER
                ):
                    continue
                was = endpoint.get_disabled_reason_display()
                services.endpoint_update(
                    endpoint=endpoint, status=WebhookEndpoint.Status.ENABLED, actor=staff_actor(request)
                )
                self.log_change(request, endpoint, f"Enabled again (was: {was}): {data['reason']}")
                enabled += 1
            self.message_user(request, f"Enabled {enabled} endpoint(s).", messages.SUCCESS)
            if left := len(endpoints) - enabled:
                self.message_user(
                    request,
                    f"{left} left alone: already enabled, or disabled by their partner (theirs to enable).",
                    messages.WARNING,
                )

        return confirm(
            request,
            self,
            permissions=("webhooks.change_webhookendpoint",),
            objects=endpoints,
            describe=lambda e: (
                e.endpoint_id,
                e.partner.name,
                e.url,
                e.get_status_display(),
                e.disabled_reason,
            ),
            columns=("Endpoint", "Partner", "URL", "Status", "Disabled for"),
            title="Enable these endpoints again?",
            effects=(
                "each endpoint disabled for failing (410 Gone, or 3 days of failures) is enabled: deliveries to "
                "it start again with the next notification;",
                "endpoints already enabled, or disabled by their partner (theirs to enable), are left alone.",
            ),
            submit="Yes, enable them again",
            reason_label="Reason (kept in the audit log)",
            testid="confirm-enable-endpoints",
            act=act,
        )


class WebhookAttemptInline(admin.TabularInline):
    model = WebhookAttempt
    fields = (
        "number",
        "status",
        "attempted_at",
        "response_status",
        "error",
        "duration_ms",
        "next_attempt_at",
        "request_body",
        "response_body_excerpt",
    )
    readonly_fields = fields
    extra = 0
    can_delete = False
    ordering = ("number",)

    def has_add_permission(self, request, obj=None) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False


@admin.register(WebhookDelivery)
class WebhookDeliveryAdmin(LargeTableAdmin, ReadOnlyAdmin):
    list_display = (
        "delivery_id",
        "notification_id",
        "endpoint_id",
        "partner",
        "kind",
        "state",
        "attempts_count",
        "next_attempt_at",
        "created_at",
    )
    list_filter = ("state", "kind", "endpoint__livemode")
    # A delivery, notification or endpoint id whole, or the endpoints of a partner named by its id or a fragment
    # of its name (config/core/admin_scale.py).
    search_fields = ("delivery_id",)
    exact_search = ("delivery_id",)
    related_search = {
        "notification": ("notification_id",),
        "endpoint": ("endpoint_id", "partner__public_id", "partner__name__icontains"),
    }
    list_select_related = ("notification", "endpoint__partner")
    fields = (
        "delivery_id",
        "endpoint",
        "notification",
        "kind",
        "state",
        "attempts_count",
        "next_attempt_at",
        "last_error",
        "created_at",
        "updated_at",
    )
    readonly_fields = fields
    inlines = [WebhookAttemptInline]

    @admin.display(description="notification", ordering="notification__notification_id")
    def notification_id(self, delivery: WebhookDelivery) -> str:
        return delivery.notification.notification_id

    @admin.display(description="endpoint", ordering="endpoint__endpoint_id")
    def endpoint_id(self, delivery: WebhookDelivery) -> str:
        return delivery.endpoint.endpoint_id

    @admin.display(description="partner")
    def partner(self, delivery: WebhookDelivery) -> str:
        return delivery.endpoint.partner.name
