"""Webhook endpoints, deliveries (one notification to one endpoint) and the attempts of each delivery.

An endpoint's signing secrets are stored encrypted (``orders.webhooks.signing_secrets``): deliveries need them
in clear to sign, so a digest would not do, but a database dump alone must not reveal them.
"""

from django.db import models
from django.db.models import Q
from django.utils import timezone

from config.core.ids import new_public_id
from config.core.modes import ModeScopedQuerySet
from config.core.statemachine import StatusHistory
from orders.models import Notification
from partners.models import Partner


def new_endpoint_id() -> str:
    return new_public_id("whe")


def new_delivery_id() -> str:
    return new_public_id("whd")


def types_include(event_types: list[str], notification_type: str) -> bool:
    """Whether an endpoint subscribed to ``event_types`` (``["*"]``: every type) receives ``notification_type``."""
    return "*" in event_types or notification_type in event_types


class WebhookEndpoint(models.Model):
    class Status(models.TextChoices):
        ENABLED = "enabled", "Enabled"
        DISABLED = "disabled", "Disabled"

    class DisabledReason(models.TextChoices):
        # Set by the partner (API or portal).
        BY_PARTNER = "disabled_by_partner", "Disabled by the partner"
        # The endpoint answered 410 Gone.
        GONE = "endpoint_gone", "The endpoint answered 410 Gone"
        # No successful delivery for 3 days of failures.
        FAILING = "failing_for_3_days", "No successful delivery for 3 days"

    endpoint_id = models.CharField(
        "endpoint id", max_length=32, unique=True, default=new_endpoint_id, editable=False
    )
    partner = models.ForeignKey(Partner, on_delete=models.CASCADE, related_name="webhook_endpoints")
    livemode = models.BooleanField(default=True)
    url = models.URLField(max_length=2048)
    event_types = models.JSONField(default=list, help_text='Subscribed types, or ["*"] for every type.')
    description = models.CharField(max_length=255, blank=True)
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.ENABLED)
    disabled_reason = models.CharField(max_length=32, choices=DisabledReason.choices, blank=True)
    # Encrypted (``secrets.secret_encrypt``); the previous secret keeps signing until its expiry.
    secret_encrypted = models.TextField()
    previous_secret_encrypted = models.TextField(blank=True)
    previous_secret_expires_at = models.DateTimeField(null=True, blank=True)
    # "No success for 3 days of failures": the first failure since the last success (cleared by a success).
    failing_since = models.DateTimeField(null=True, blank=True)
    last_success_at = models.DateTimeField(null=True, blank=True)
    disabled_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(auto_now=True)

    objects = ModeScopedQuerySet.as_manager()

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [
            # The list (newest first, cursor) and the fan-out (a partner's endpoints of one mode).
            models.Index(fields=["partner", "livemode", "-created_at", "-id"], name="whe_partner_list"),
        ]
        constraints = [
            models.CheckConstraint(condition=Q(status__in=["enabled", "disabled"]), name="whe_status_valid"),
        ]

    def __str__(self) -> str:
        return f"{self.endpoint_id} {self.url}"

    def subscribes_to(self, notification_type: str) -> bool:
        return types_include(self.event_types, notification_type)


class WebhookEndpointStatusHistory(StatusHistory):
    """One row per move of ``WebhookEndpoint.status`` (``orders.webhooks.machines.endpoint_transition``):
    who disabled or enabled the endpoint (the partner, or the service giving up on it), and why."""

    endpoint = models.ForeignKey(WebhookEndpoint, on_delete=models.CASCADE, related_name="status_history")

    class Meta(StatusHistory.Meta):
        verbose_name = "endpoint status change"
        verbose_name_plural = "endpoint status history"
        indexes = [models.Index(fields=["endpoint", "at", "id"], name="whe_history_endpoint_at")]


class WebhookDelivery(models.Model):
    """One notification to one endpoint. ``next_attempt_at`` is the truth the sweep reads."""

    class State(models.TextChoices):
        PENDING = "pending", "Pending"
        RETRYING = "retrying", "Retrying"
        SUCCEEDED = "succeeded", "Succeeded"
        FAILED = "failed", "Failed"

    class Kind(models.TextChoices):
        EVENT = "event", "Event"  # the fan-out of a notification: one per (notification, endpoint)
        PING = "ping", "Ping"
        RESEND = "resend", "Resend"  # asked for again by the partner: any number

    delivery_id = models.CharField(
        "delivery id", max_length=32, unique=True, default=new_delivery_id, editable=False
    )
    endpoint = models.ForeignKey(WebhookEndpoint, on_delete=models.CASCADE, related_name="deliveries")
    notification = models.ForeignKey(
        Notification, on_delete=models.CASCADE, related_name="webhook_deliveries"
    )
    kind = models.CharField(max_length=8, choices=Kind.choices, default=Kind.EVENT)
    state = models.CharField(max_length=10, choices=State.choices, default=State.PENDING)
    attempts_count = models.PositiveSmallIntegerField(default=0)
    # When the next attempt is due; null once the delivery succeeded or failed for good.
    next_attempt_at = models.DateTimeField(null=True, blank=True)
    last_error = models.CharField(max_length=500, blank=True)
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        verbose_name_plural = "webhook deliveries"
        indexes = [
            # The sweep: due deliveries only.
            models.Index(
                fields=["next_attempt_at"], condition=Q(next_attempt_at__isnull=False), name="whd_due"
            ),
            models.Index(fields=["created_at"], name="whd_created"),
        ]
        constraints = [
            # The fan-out runs at least once per notification: a second run must not deliver twice.
            models.UniqueConstraint(
                fields=["notification", "endpoint"],
                condition=~Q(kind="resend"),
                name="whd_one_per_notification_endpoint",
            ),
            models.CheckConstraint(
                condition=Q(state__in=["pending", "retrying", "succeeded", "failed"]), name="whd_state_valid"
            ),
        ]

    def __str__(self) -> str:
        return self.delivery_id


class WebhookAttempt(models.Model):
    """One HTTP request of a delivery (numbered from 1), what it sent and what came back."""

    class Status(models.TextChoices):
        PENDING = "pending", "Pending"  # being sent now
        SUCCEEDED = "succeeded", "Succeeded"
        RETRYING = "retrying", "Failed, retry scheduled"
        FAILED = "failed", "Failed"

    delivery = models.ForeignKey(WebhookDelivery, on_delete=models.CASCADE, related_name="attempts")
    # Denormalised so the endpoint's attempt list is one index scan.
    endpoint = models.ForeignKey(WebhookEndpoint, on_delete=models.CASCADE, related_name="attempts")
    number = models.PositiveSmallIntegerField()
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.PENDING)
    response_status = models.PositiveSmallIntegerField(null=True, blank=True)
    error = models.CharField(max_length=500, blank=True)
    duration_ms = models.PositiveIntegerField(null=True, blank=True)
    attempted_at = models.DateTimeField(default=timezone.now)
    next_attempt_at = models.DateTimeField(null=True, blank=True)
    request_body = models.TextField(blank=True)
    response_body_excerpt = models.TextField(blank=True)

    class Meta:
        ordering = ["-id"]
        indexes = [
            models.Index(fields=["endpoint", "-id"], name="wha_endpoint_list"),
            models.Index(fields=["attempted_at"], name="wha_attempted"),
            # Attempts in flight (the limits per endpoint and per partner): the few pending rows only.
            models.Index(
                fields=["endpoint", "attempted_at"],
                condition=Q(status="pending"),
                name="wha_in_flight",
            ),
        ]
        constraints = [
            models.UniqueConstraint(fields=["delivery", "number"], name="wha_one_per_number"),
        ]

    def __str__(self) -> str:
        return f"{self.delivery_id} #{self.number}"
