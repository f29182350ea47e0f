"""A quote locks a row's offer price for a partner for ``QUOTE_TTL_SECONDS``.

The quote keeps a snapshot of what the partner was shown (prices, names, restrictions), so a later catalog
edit never changes a quote already given. It reserves no quantity: the order does. Partners see only the
encrypted ``quote_id`` (``quotes.codec``), never the primary key.
"""

from django.db import models
from django.utils import timezone

from catalog.models import Event, Row, Section
from config.core.modes import ModeScopedQuerySet
from partners.models import Partner

# What an order copies from its quote, under the same names: the prices, names and restrictions the partner
# was shown. The one list: the order's creation copies these, its admin page shows these.
ORDER_SNAPSHOT_FIELDS = (
    "quantity",
    "offer_price",
    "face_value",
    "total_price",
    "section_name",
    "section_name_display",
    "row_name",
    "row_name_display",
    "general_admission",
    "restrictions",
    "restriction_detail",
    "primary_site",
)


class Quote(models.Model):
    class Status(models.TextChoices):
        ACTIVE = "active", "Active"
        CONSUMED = "consumed", "Consumed"
        EXPIRED = "expired", "Expired"

    # Indexed by quote_partner_created, which leads with it.
    partner = models.ForeignKey(Partner, on_delete=models.CASCADE, related_name="quotes", db_index=False)
    # Test-mode quotes come from test-mode tokens and can only be ordered by them (docs/partners/test-mode.md "Test mode").
    livemode = models.BooleanField(default=True)
    event = models.ForeignKey(Event, on_delete=models.PROTECT, related_name="quotes")
    section = models.ForeignKey(Section, on_delete=models.PROTECT, related_name="quotes")
    # Indexed by quote_row_consumed, which leads with it.
    row = models.ForeignKey(Row, on_delete=models.PROTECT, related_name="quotes", db_index=False)
    quantity = models.PositiveIntegerField()
    offer_price = models.DecimalField(max_digits=10, decimal_places=2, help_text="Per ticket, USD.")
    total_price = models.DecimalField(max_digits=12, decimal_places=2, help_text="offer_price × quantity.")
    face_value = models.DecimalField(max_digits=10, decimal_places=2, help_text="Per ticket, USD.")
    # Snapshot of the catalog as quoted.
    event_name = models.CharField(max_length=255)
    section_name = models.CharField(max_length=100)
    section_name_display = models.CharField(max_length=150)
    row_name = models.CharField(max_length=50)
    row_name_display = models.CharField(max_length=100)
    general_admission = models.BooleanField(default=False)
    restrictions = models.JSONField(default=list, blank=True)
    restriction_detail = models.TextField(null=True, blank=True)
    primary_site = models.CharField(max_length=32)
    user_metadata = models.JSONField(
        default=dict, blank=True, help_text="The seller's contact details, given by the partner."
    )
    created_at = models.DateTimeField(default=timezone.now)
    expires_at = models.DateTimeField()
    consumed_at = models.DateTimeField(null=True, blank=True)

    objects = ModeScopedQuerySet.as_manager()

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [
            # The purge task walks unconsumed quotes by expiry.
            models.Index(
                fields=["expires_at"],
                condition=models.Q(consumed_at__isnull=True),
                name="quote_unconsumed_expiry",
            ),
            models.Index(fields=["partner", "created_at"], name="quote_partner_created"),
            models.Index(fields=["row", "consumed_at"], name="quote_row_consumed"),
        ]
        constraints = [
            models.CheckConstraint(condition=models.Q(quantity__gte=1), name="quote_quantity_gte_1"),
            models.CheckConstraint(
                condition=models.Q(expires_at__gt=models.F("created_at")), name="quote_expires_after_created"
            ),
        ]

    def __str__(self) -> str:
        # Not the primary key: a quote's is a random 19-digit number, of no use to staff.
        made = self.created_at.strftime("%Y-%m-%d %H:%M") if self.created_at else "—"
        return f"{self.quantity} × {self.event_name} {self.section_name}/{self.row_name}, quoted {made} UTC"

    def order_snapshot(self) -> dict:
        """The values an order copies (``ORDER_SNAPSHOT_FIELDS``); the restrictions as a list of its own."""
        snapshot = {name: getattr(self, name) for name in ORDER_SNAPSHOT_FIELDS}
        snapshot["restrictions"] = list(self.restrictions or [])
        return snapshot

    @property
    def status(self) -> str:
        if self.consumed_at is not None:
            return self.Status.CONSUMED.value
        if self.expires_at <= timezone.now():
            return self.Status.EXPIRED.value
        return self.Status.ACTIVE.value

    @property
    def is_expired(self) -> bool:
        return self.expires_at <= timezone.now()
