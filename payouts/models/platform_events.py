"""What the payment platform tells the service on its own: its events, stored once each, and the card disputes
they open (a staff case on the order)."""

from django.db import models
from django.db.models import Q
from django.utils import timezone

from config.core.statemachine import StatusHistory
from partners.models import Partner

from .money import Charge


class PlatformEvent(models.Model):
    """One event the payment platform sent to ``/payments/stripe/events``, stored once by its id: a second
    delivery of the same event finds it and moves nothing."""

    platform = models.CharField(max_length=32, default="stripe")
    # Race: Stripe delivering the same event twice at once — the unique id lets one insert win.
    event_id = models.CharField(max_length=255, unique=True)
    type = models.CharField(max_length=100)
    account = models.CharField(
        max_length=100, blank=True, help_text="The connected account the event comes from (payouts)."
    )
    livemode = models.BooleanField(default=False)
    occurred_at = models.DateTimeField(help_text="When the platform created the event.")
    payload = models.JSONField(help_text="The event as the platform sent it.")
    received_at = models.DateTimeField(default=timezone.now)
    processed_at = models.DateTimeField(null=True, blank=True)
    outcome = models.CharField(max_length=255, blank=True, help_text="What the event did here.")

    class Meta:
        ordering = ["-received_at", "-id"]
        verbose_name = "payment platform event"
        indexes = [
            models.Index(fields=["type", "-received_at"], name="platform_event_type"),
            # Events whose processing failed (Stripe delivers them again; staff see them meanwhile).
            models.Index(
                fields=["received_at"], name="platform_event_unprocessed", condition=Q(processed_at=None)
            ),
        ]

    def __str__(self) -> str:
        return f"{self.type} {self.event_id}"


class Dispute(models.Model):
    """A staff case: the partner disputed the card charge of an order with its bank (a chargeback). Opened by
    the platform's ``charge.dispute.created``, closed by its ``charge.dispute.closed``; the evidence is
    submitted in the platform's dashboard before ``evidence_due_by``."""

    class Status(models.TextChoices):
        OPEN = "open", "Open"
        CLOSED = "closed", "Closed"

    charge = models.ForeignKey(Charge, on_delete=models.PROTECT, related_name="disputes")
    order = models.ForeignKey("orders.Order", on_delete=models.PROTECT, related_name="disputes")
    partner = models.ForeignKey(Partner, on_delete=models.PROTECT, related_name="disputes")
    platform_dispute_id = models.CharField(max_length=100, unique=True)
    amount = models.DecimalField(max_digits=12, decimal_places=2)
    currency = models.CharField(max_length=3, default="USD")
    reason = models.CharField(
        max_length=64, blank=True, help_text="The bank's reason, as the platform names it."
    )
    platform_status = models.CharField(
        max_length=32, blank=True, help_text="The platform's own status (needs_response, won, lost …)."
    )
    evidence_due_by = models.DateTimeField(null=True, blank=True)
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.OPEN)
    closed_at = models.DateTimeField(null=True, blank=True)
    # The partner is e-mailed once per dispute (``payouts.services.alerts``, ``config.core.mail_once``).
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [
            # The staff dashboard's queue of open disputes.
            models.Index(fields=["created_at"], name="dispute_open", condition=Q(status="open")),
        ]
        constraints = [
            models.CheckConstraint(condition=Q(status__in=["open", "closed"]), name="dispute_status_valid"),
        ]

    def __str__(self) -> str:
        return f"Dispute {self.platform_dispute_id} of {self.amount} {self.currency} ({self.status})"


class DisputeStatusHistory(StatusHistory):
    """One row per move of ``Dispute.status`` (``payouts.services.disputes``)."""

    dispute = models.ForeignKey(Dispute, on_delete=models.CASCADE, related_name="status_history")

    class Meta(StatusHistory.Meta):
        verbose_name = "dispute status change"
        verbose_name_plural = "dispute status history"
