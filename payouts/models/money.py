"""Money that moved for an order: the charge of the partner's card and the payout to its bank account."""

from django.db import models
from django.db.models import Q

from config.core.statemachine import StatusHistory
from partners.models import Partner


class Charge(models.Model):
    """The one charge of the partner's card for an order (docs/partners/orders.md "Life cycle"), and its
    refund when the order is canceled after the charge succeeded.

    Refund: ``none`` → ``pending`` (owed: the order was canceled; or the platform has not finished) →
    ``succeeded`` | ``failed`` (staff retry: back to ``pending`` with a new attempt number, hence a new
    idempotency key). An expired order keeps its charge: it covers the tickets that were never delivered.
    """

    class Status(models.TextChoices):
        PENDING = "pending", "Pending"  # recorded, the platform has not answered yet
        SUCCEEDED = "succeeded", "Succeeded"
        FAILED = "failed", "Failed"

    class RefundStatus(models.TextChoices):
        NONE = "none", "Not refunded"
        PENDING = "pending", "Refund pending"
        SUCCEEDED = "succeeded", "Refunded"
        FAILED = "failed", "Refund failed"

    # One charge per order, decided by the database (the one-to-one's unique index).
    order = models.OneToOneField("orders.Order", on_delete=models.PROTECT, related_name="charge")
    # Indexed by charge_partner_created, which leads with it.
    partner = models.ForeignKey(Partner, on_delete=models.PROTECT, related_name="charges", db_index=False)
    amount = models.DecimalField(max_digits=12, decimal_places=2)
    currency = models.CharField(max_length=3, default="USD")
    platform = models.CharField(max_length=32)
    idempotency_key = models.CharField(max_length=128, unique=True)
    platform_charge_id = models.CharField(max_length=100, blank=True)
    card_brand = models.CharField(max_length=32, blank=True)
    card_last4 = models.CharField(max_length=4, blank=True)
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.PENDING)
    failure_reason = models.CharField(max_length=255, blank=True)
    attempts = models.PositiveIntegerField(default=0, help_text="Calls made to the platform.")
    last_error = models.CharField(max_length=255, blank=True, help_text="Last transient platform error.")

    refund_status = models.CharField(max_length=16, choices=RefundStatus.choices, default=RefundStatus.NONE)
    refund_attempt = models.PositiveIntegerField(
        default=1,
        help_text="Each staff retry of a failed refund is a new attempt with its own idempotency key.",
    )
    refund_requested_at = models.DateTimeField(
        null=True, blank=True, help_text="When the refund became owed."
    )
    refund_attempted_at = models.DateTimeField(
        null=True, blank=True, help_text="Last call to the platform about the refund."
    )
    refunded_at = models.DateTimeField(null=True, blank=True)
    platform_refund_id = models.CharField(max_length=100, blank=True)
    refund_failure_reason = models.CharField(max_length=255, blank=True)
    refund_last_error = models.CharField(
        max_length=255, blank=True, help_text="Last transient platform error of the refund."
    )
    # The partner's alerts about a decline or a failed refund: e-mails sent at most once
    # (``payouts.services.alerts``, ``config.core.mail_once``).
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        permissions = [("retry_refund", "Can retry a failed refund")]
        indexes = [
            models.Index(fields=["status", "created_at"], name="charge_status_created"),
            # The portal dashboard reads each partner's latest charge (was it declined?).
            models.Index(fields=["partner", "-created_at"], name="charge_partner_created"),
            # The refund sweep reads the few refunds still owed; settled ones stay out of the index.
            models.Index(
                fields=["refund_attempted_at"],
                name="charge_refund_open",
                condition=Q(refund_status="pending"),
            ),
            # The staff dashboard: money refunded per period, and the queue of refunds that failed.
            models.Index(
                fields=["refunded_at"], name="charge_refunded_at", condition=Q(refund_status="succeeded")
            ),
            models.Index(
                fields=["created_at"], name="charge_refund_failed", condition=Q(refund_status="failed")
            ),
            # The refund sweep probes each canceled order's charge here: is a refund still to be requested?
            models.Index(
                fields=["order"],
                condition=Q(status="succeeded", refund_status="none"),
                name="charge_refund_not_requested",
            ),
            # The platform's ids: its events name a charge by them, and staff search by them.
            models.Index(fields=["platform_charge_id"], name="charge_platform_id"),
            models.Index(
                fields=["platform_refund_id"],
                name="charge_platform_refund_id",
                condition=~Q(platform_refund_id=""),
            ),
        ]
        constraints = [
            models.CheckConstraint(condition=Q(amount__gte=0), name="charge_amount_gte_0"),
            models.CheckConstraint(
                condition=Q(status__in=["pending", "succeeded", "failed"]), name="charge_status_valid"
            ),
            models.CheckConstraint(
                condition=Q(refund_status__in=["none", "pending", "succeeded", "failed"]),
                name="charge_refund_status_valid",
            ),
            # Only money that was taken can be given back.
            models.CheckConstraint(
                condition=Q(refund_status="none") | Q(status="succeeded"), name="charge_refund_needs_success"
            ),
        ]

    def __str__(self) -> str:
        return f"Charge {self.amount} {self.currency} for {self.order_id} ({self.status})"

    @property
    def is_final(self) -> bool:
        return self.status in (self.Status.SUCCEEDED, self.Status.FAILED)

    @property
    def refund_idempotency_key(self) -> str:
        """One key per attempt: a repeat never refunds twice, a staff retry after a failure is a new refund."""
        key = f"{self.order.order_id}:refund"
        return key if self.refund_attempt == 1 else f"{key}:{self.refund_attempt}"


class Payout(models.Model):
    """The one payout of an order's ``total_price`` to the partner's payout account.

    ``pending`` (to be created at the platform) → ``in_process`` → ``scheduled`` → ``paid``, or ``failed``
    (staff retry: back to ``pending`` with a new attempt number, hence a new idempotency key).
    """

    class Status(models.TextChoices):
        PENDING = "pending", "Pending"
        IN_PROCESS = "in_process", "In process"
        SCHEDULED = "scheduled", "Scheduled"
        PAID = "paid", "Paid"
        FAILED = "failed", "Failed"

    # Created at the platform and not finished yet: progression asks the platform about these.
    AT_PLATFORM_STATUSES = (Status.IN_PROCESS, Status.SCHEDULED)
    # Owed to the partner and not yet paid: waiting to start, or under way at the platform.
    IN_FLIGHT_STATUSES = (Status.PENDING, *AT_PLATFORM_STATUSES)

    # One payout per order, decided by the database: two overlapping progression runs cannot both insert.
    order = models.OneToOneField("orders.Order", on_delete=models.PROTECT, related_name="payout")
    partner = models.ForeignKey(Partner, on_delete=models.PROTECT, related_name="payouts")
    amount = models.DecimalField(max_digits=12, decimal_places=2)
    currency = models.CharField(max_length=3, default="USD")
    platform = models.CharField(max_length=32, blank=True)
    platform_account_id = models.CharField(max_length=100, blank=True)
    account_description = models.CharField(
        max_length=160, blank=True, help_text="Bank name, method and last 4 at the time of the payout."
    )
    attempt = models.PositiveIntegerField(default=1)
    platform_payout_id = models.CharField(max_length=100, blank=True)
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.PENDING)
    scheduled_for = models.DateTimeField(null=True, blank=True)
    paid_at = models.DateTimeField(null=True, blank=True)
    failure_reason = models.CharField(max_length=255, blank=True)
    last_error = models.CharField(max_length=255, blank=True, help_text="Last transient platform error.")
    last_checked_at = models.DateTimeField(null=True, blank=True)
    # The partner's alert about a failure: an e-mail sent at most once per failure (``payouts.services.alerts``).
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        permissions = [("retry_payout", "Can retry a failed payout")]
        indexes = [
            models.Index(fields=["status", "created_at"], name="payout_status_created"),
            models.Index(fields=["partner", "-created_at"], name="payout_partner_created"),
            # The staff dashboard: money paid out per period and per week.
            models.Index(fields=["paid_at"], name="payout_paid_at", condition=Q(status="paid")),
            # The admin's list: newest first across partners.
            models.Index(fields=["-created_at", "-id"], name="payout_newest"),
            # The portal's totals (payout_totals): the partner's amounts by status, read from the index alone.
            models.Index(fields=["partner", "status"], include=["amount"], name="payout_partner_totals"),
            # The admin's search by the platform's id.
            models.Index(fields=["platform_payout_id"], name="payout_platform_id"),
        ]
        constraints = [
            models.CheckConstraint(condition=Q(amount__gte=0), name="payout_amount_gte_0"),
            models.CheckConstraint(
                condition=Q(status__in=["pending", "in_process", "scheduled", "paid", "failed"]),
                name="payout_status_valid",
            ),
        ]

    def __str__(self) -> str:
        return f"Payout {self.amount} {self.currency} for {self.order_id} ({self.status})"

    @property
    def idempotency_key(self) -> str:
        """One key per attempt: a retry after a failure is a new payout at the platform, a repeat is not."""
        return f"{self.order.order_id}:payout:{self.attempt}"


class PayoutTotal(models.Model):
    """The partner's payouts counted and summed per status, kept by the database as payouts are inserted,
    change status or amount, or are deleted: the portal's totals (``payout_totals``) read a few rows whatever
    the number of payouts.

    Written only by PostgreSQL: statement-level triggers on ``payouts_payout`` (migration 0021) append one
    delta row per partner and status a statement changed (+1 and the amount for a payout that arrives in the
    status, −1 and minus the amount for one that leaves it), so that concurrent writers never wait for each
    other on a shared row; ``payout_totals_compact`` (beat) folds each partner's rows into one per status. The
    totals are the sum of the partner's rows per status, exact in every transaction and snapshot.
    """

    partner = models.ForeignKey(
        Partner, on_delete=models.DO_NOTHING, db_constraint=False, related_name="+", db_index=False
    )
    status = models.CharField(max_length=16, choices=Payout.Status.choices)
    count = models.BigIntegerField()
    amount = models.DecimalField(max_digits=18, decimal_places=2)

    class Meta:
        indexes = [models.Index(fields=["partner", "status"], name="payout_total_partner_status")]

    def __str__(self) -> str:
        return f"{self.count:+d} {self.status} payouts, {self.amount:+} for partner {self.partner_id}"


class SweepMark(models.Model):
    """How far a sweep over history has read: every record before ``reached`` was found in order, so the sweep's
    next run starts there instead of at the beginning (``payouts.services.refunds.refunds_sweep``, hourly: the
    cancels whose refund was never requested). A sweep moves its mark only up to the oldest record it still
    found wanting, so nothing it could not finish is passed over."""

    name = models.CharField(max_length=64, primary_key=True)
    reached = models.DateTimeField()
    updated_at = models.DateTimeField(auto_now=True)

    def __str__(self) -> str:
        return f"{self.name} reached {self.reached:%Y-%m-%d %H:%M:%S}"


class PayoutStatusHistory(StatusHistory):
    """One row per move of ``Payout.status`` (``payouts.services.progression.payout_transition``)."""

    payout = models.ForeignKey(Payout, on_delete=models.CASCADE, related_name="status_history")

    class Meta(StatusHistory.Meta):
        verbose_name = "payout status change"
        verbose_name_plural = "payout status history"
        indexes = [models.Index(fields=["payout", "at", "id"], name="payout_history_payout_at")]


class ChargeStatusHistory(StatusHistory):
    """One row per move of ``Charge.status`` (``payouts.services.charges.charge_transition``): why a charge
    failed, as the platform said it."""

    charge = models.ForeignKey(Charge, on_delete=models.CASCADE, related_name="status_history")

    class Meta(StatusHistory.Meta):
        verbose_name = "charge status change"
        verbose_name_plural = "charge status history"
        indexes = [models.Index(fields=["charge", "at", "id"], name="charge_history_charge_at")]


class RefundStatusHistory(StatusHistory):
    """One row per move of ``Charge.refund_status`` (``payouts.services.refunds.refund_transition``)."""

    charge = models.ForeignKey(Charge, on_delete=models.CASCADE, related_name="refund_history")

    class Meta(StatusHistory.Meta):
        verbose_name = "refund status change"
        verbose_name_plural = "refund status history"
        indexes = [models.Index(fields=["charge", "at", "id"], name="refund_history_charge_at")]
