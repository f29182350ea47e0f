"""Orders: a consumed quote turned into a buy-back of tickets, and the history of its status.

An order copies the quote's snapshot (names, prices, restrictions) so that what the partner was shown stays
what the order says, whatever happens to the catalog or the quote later. ``status`` changes only through
``orders.services.order_transition``, which writes an ``OrderStatusHistory`` row for every move.
"""

import secrets
import string

from django.conf import settings
from django.core.exceptions import ObjectDoesNotExist
from django.db import models
from django.db.models import Q
from django.db.models.functions import Upper
from django.utils import timezone

from catalog.models import Event, Row
from config.core.ids import new_public_id
from config.core.modes import ModeScopedQuerySet
from partners.models import Partner
from quotes.models import Quote

_LOWER_ALNUM = string.ascii_lowercase + string.digits


def new_order_id() -> str:
    return new_public_id("ord")


_LOCAL_LENGTH = 16
_LOCAL_PARTS = len(_LOWER_ALNUM) ** _LOCAL_LENGTH  # fewer than 2**83


def new_transfer_address() -> str:
    """Where the seller sends the tickets: one mailbox per order, so an inbound transfer names its order.

    The 16 characters of its local part are the base-36 digits of one number drawn by the system's generator
    below 36**16: every local part equally likely, in one draw (a draw per character cost 16 reads of the
    generator, about 20 µs an order)."""
    drawn = secrets.randbelow(_LOCAL_PARTS)
    local = []
    for _ in range(_LOCAL_LENGTH):
        drawn, digit = divmod(drawn, len(_LOWER_ALNUM))
        local.append(_LOWER_ALNUM[digit])
    return f"ord-{''.join(local)}@{settings.ORDER_TRANSFER_ADDRESS_DOMAIN}"


class Order(models.Model):
    class Status(models.TextChoices):
        ACCEPTED = "accepted", "Accepted"
        AWAITING_TRANSFER = "awaiting_transfer", "Awaiting transfer"
        TICKET_RECEIVED = "ticket_received", "Ticket received"
        PAYOUT_IN_PROCESS = "payout_in_process", "Payout in process"
        SCHEDULED = "scheduled", "Payout scheduled"
        PAID = "paid", "Paid"
        EXPIRED = "expired", "Expired"
        CANCELED = "canceled", "Canceled"

    # The life cycle's groups of statuses, named once (docs/partners/orders.md "Life cycle"); everything that filters
    # or reasons on "open", "settled" or the payout path uses these.
    # Not yet charged or not yet delivered: a partner or a canceled event may still cancel it.
    OPEN_STATUSES = (Status.ACCEPTED, Status.AWAITING_TRANSFER)
    # Nothing more happens to it: a payment method can be replaced without billing problems
    # (docs/partners/portal.md "Portal, payments and payouts").
    SETTLED_STATUSES = (Status.PAID, Status.CANCELED, Status.EXPIRED)
    # The part of the life cycle that the payout drives, in order.
    PAYOUT_PATH = (Status.TICKET_RECEIVED, Status.PAYOUT_IN_PROCESS, Status.SCHEDULED, Status.PAID)

    # The transfer's vocabulary, as partners read it (``transfer`` of the order); the state itself is transfer
    # detection's (``Order.transfer``).
    class TransferState(models.TextChoices):
        NONE = "none", "None"
        PARTIAL = "partial", "Partial"
        DETECTED = "detected", "Detected"
        ACCEPTED = "accepted", "Accepted on platform"
        MISMATCH = "mismatch", "Mismatch"
        RECALLED = "recalled", "Recalled"

    class TransferSource(models.TextChoices):
        EMAIL = "email", "E-mail"
        FILE = "file", "Ticket file"
        STAFF = "staff", "Staff"

    class DeliveryType(models.TextChoices):
        MOBILE_TRANSFER = "mobile_transfer", "Mobile transfer"
        MOBILE_QR = "mobile_qr", "Mobile QR code"
        PDF = "pdf", "PDF"

    order_id = models.CharField("order id", max_length=32, unique=True, default=new_order_id, editable=False)
    # No index of its own: the indexes that lead with the partner (order_partner_status, order_partner_event,
    # order_partner_mode_cursor) answer every lookup by partner, and each index more is written by every
    # order's insert and every move.
    partner = models.ForeignKey(Partner, on_delete=models.PROTECT, related_name="orders", db_index=False)
    # A test-mode order (docs/partners/test-mode.md "Test mode") takes no quantity, is charged on the sandbox, e-mails the
    # partner instead of the seller and is never paid out; staff figures count live orders only.
    livemode = models.BooleanField(default=True)
    # One order per quote, enforced by the database (the unique index of the one-to-one).
    quote = models.OneToOneField(Quote, on_delete=models.PROTECT, related_name="order")
    event = models.ForeignKey(Event, on_delete=models.PROTECT, related_name="orders")
    row = models.ForeignKey(Row, on_delete=models.PROTECT, related_name="orders")
    status = models.CharField(max_length=20, choices=Status.choices, default=Status.ACCEPTED)
    status_changed_at = models.DateTimeField(default=timezone.now)

    # Snapshot of the quote: ``quotes[]`` of the order (docs/partners/orders.md "Contract choices").
    quote_token = models.CharField(
        max_length=128, help_text="The encrypted quote_id the partner sent, echoed in quotes[].quote_id."
    )
    quote_expires_at = models.DateTimeField(help_text="The quote's expiry, echoed as quotes[].exp_dt.")
    quantity = models.PositiveIntegerField()
    offer_price = models.DecimalField(max_digits=10, decimal_places=2, help_text="Per ticket, USD.")
    face_value = models.DecimalField(max_digits=10, decimal_places=2, help_text="Per ticket, USD.")
    total_price = models.DecimalField(
        max_digits=12, decimal_places=2, help_text="offer_price × quantity, USD."
    )
    section_name = models.CharField(max_length=100)
    section_name_display = models.CharField(max_length=150)
    row_name = models.CharField(max_length=50)
    row_name_display = models.CharField(max_length=100)
    general_admission = models.BooleanField(default=False)
    restrictions = models.JSONField(default=list, blank=True)
    restriction_detail = models.TextField(null=True, blank=True)
    primary_site = models.CharField(max_length=32)

    # Delivery, as chosen by the partner.
    delivery_type = models.CharField(max_length=16, choices=DeliveryType.choices)
    is_ready_to_deliver = models.BooleanField()
    in_hand_date = models.DateField(
        null=True, blank=True, help_text="The venue-local date by which the tickets reach the service."
    )
    transfer_address = models.CharField(
        max_length=254, unique=True, default=new_transfer_address, editable=False
    )
    # The ticket PDF's name in the default storage (private: staff download it through the admin).
    ticket_file = models.FileField(max_length=255, blank=True)
    seller_email = models.EmailField(blank=True)
    seller_name = models.CharField(max_length=200, blank=True)
    partner_reference = models.CharField(max_length=64, blank=True)

    # Background confirmation (charge the card, e-mail the seller), driven by the app above.
    confirmation_started_at = models.DateTimeField(
        null=True, blank=True, help_text="When the last confirmation attempt began."
    )
    confirmation_requeued_at = models.DateTimeField(
        null=True, blank=True, help_text="When the sweeper last re-enqueued the confirmation."
    )
    # The seller's confirmation e-mail, at most once: ``config.core.MailOnce`` (purpose
    # ``seller_mail.CONFIRMATION_MAIL``, keyed by the order's pk).

    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(auto_now=True)

    objects = ModeScopedQuerySet.as_manager()

    class Meta:
        ordering = ["-created_at", "-id"]
        permissions = [
            ("cancel_order", "Can cancel an order"),
            ("mark_received", "Can mark an order's tickets received"),
        ]
        indexes = [
            # The partner's order list (newest first, cursor on created_at, id).
            models.Index(
                fields=["partner", "livemode", "-created_at", "-id"], name="order_partner_mode_cursor"
            ),
            models.Index(fields=["partner", "status", "-created_at"], name="order_partner_status"),
            models.Index(fields=["partner", "event", "-created_at"], name="order_partner_event"),
            # The sweeper and the expiry task walk open orders only.
            models.Index(
                fields=["status", "created_at"],
                condition=Q(status__in=["accepted", "awaiting_transfer"]),  # Order.OPEN_STATUSES
                name="order_open_by_created",
            ),
            models.Index(fields=["created_at"], name="order_created"),
            # The orders waiting for their confirmation, in the order a confirmation batch claims them:
            # only a waiting order is entered, and the claim reads it in its order, without a sort. The entries of
            # orders that moved on stay until the table is vacuumed; an index scan marks them dead once no
            # transaction can see those orders any more, and the next claims skip them. The open orders' index,
            # which the claim read before, also holds every order awaiting its transfer, and its bitmap scan
            # fetched every entry's row again on every claim.
            models.Index(
                fields=["created_at", "id"],
                condition=Q(status="accepted", confirmation_started_at__isnull=True),
                name="order_awaiting_confirmation",
            ),
            # The portal's count of active orders (its dashboard, payout readiness): the few not settled yet,
            # never the partner's history of settled ones.
            models.Index(
                fields=["partner", "livemode"],
                condition=~Q(status__in=["paid", "canceled", "expired"]),  # Order.SETTLED_STATUSES
                name="order_partner_active",
            ),
            # What staff paste into the admin's search, matched whole (config/core/admin_scale.py); the e-mail in
            # any case.
            models.Index(fields=["partner_reference"], name="order_partner_reference"),
            models.Index(Upper("seller_email"), name="order_seller_email"),
            # The refund sweep starts from the canceled orders (read from this index alone), never from every charge.
            models.Index(
                fields=["status_changed_at", "id"], condition=Q(status="canceled"), name="order_canceled_at"
            ),
        ]
        constraints = [
            models.CheckConstraint(condition=Q(quantity__gte=1), name="order_quantity_gte_1"),
            models.CheckConstraint(condition=Q(total_price__gte=0), name="order_total_price_gte_0"),
            models.CheckConstraint(
                condition=Q(is_ready_to_deliver=True) | Q(in_hand_date__isnull=False),
                name="order_in_hand_date_when_not_ready",
            ),
            models.CheckConstraint(
                condition=Q(
                    status__in=[
                        "accepted",
                        "awaiting_transfer",
                        "ticket_received",
                        "payout_in_process",
                        "scheduled",
                        "paid",
                        "expired",
                        "canceled",
                    ]
                ),
                name="order_status_valid",
            ),
            models.CheckConstraint(
                condition=Q(delivery_type__in=["mobile_transfer", "mobile_qr", "pdf"]),
                name="order_delivery_type_valid",
            ),
        ]

    def __str__(self) -> str:
        return self.order_id

    @property
    def has_ticket_file(self) -> bool:
        return bool(self.ticket_file.name)

    @property
    def transfer(self):
        """The transfer of the tickets as the service has seen it (docs/partners/orders.md "Transfer"): transfer
        detection's row of the order (``orders.transfers.models.TransferProgress``, read with the order by
        ``select_related("transfer_progress")``). An order transfer detection never wrote about has no row and
        reads as the defaults: state ``none``, nothing detected, no source, no times, no case open."""
        try:
            return self.transfer_progress
        except ObjectDoesNotExist:
            return self._meta.get_field("transfer_progress").related_model(order_id=self.pk)


class OrderStatusHistory(models.Model):
    """One row per status change: from, to, when, who (``partner:…``, ``staff:…``, ``system:…``), why."""

    # Indexed by order_history_order_at, which leads with it.
    order = models.ForeignKey(Order, on_delete=models.CASCADE, related_name="status_history", db_index=False)
    from_status = models.CharField(max_length=20, blank=True, help_text="Empty for the creation row.")
    to_status = models.CharField(max_length=20)
    at = models.DateTimeField()
    actor = models.CharField(max_length=200)
    reason = models.CharField(max_length=500, blank=True)

    class Meta:
        ordering = ["at", "id"]
        verbose_name = "status change"
        verbose_name_plural = "status history"
        indexes = [models.Index(fields=["order", "at", "id"], name="order_history_order_at")]

    def __str__(self) -> str:
        return f"{self.from_status or '∅'} → {self.to_status}"

    @property
    def actor_kind(self) -> str:
        """What partners see: the kind of actor that moved the order (partner, staff, system), never a name."""
        return self.actor.split(":", 1)[0]


def new_notification_id() -> str:
    return new_public_id("ntf")


class Notification(models.Model):
    """The outbox: one row per change a partner cares about, written in the transaction of that change.

    ``payload`` is the notification object exactly as the feed and the webhooks send it (``id``, ``type``,
    ``created_at``, ``livemode``, ``data``), rendered when the change happens. ``dispatched_at`` is set once
    the in-process subscribers (``orders.signals``) have been handed the notification; a periodic sweep
    hands over again whatever they never got (never published, or lost with Redis).
    """

    class Type(models.TextChoices):
        ORDER_CREATED = "order.created", "Order created"
        ORDER_STATUS_CHANGED = "order.status_changed", "Order status changed"
        ORDER_TRANSFER_UPDATED = "order.transfer_updated", "Order transfer updated"
        WEBHOOK_PING = "webhook.ping", "Webhook ping"

        @classmethod
        def subscribable(cls) -> tuple[str, ...]:
            """The types a webhook endpoint can subscribe to, in declaration order: every type but
            ``webhook.ping``, which goes only to the pinged endpoint. A type declared here is subscribable (and
            in the API's enum, the portal's form and the schema) without another list to update."""
            return tuple(t.value for t in cls if t is not cls.WEBHOOK_PING)

    notification_id = models.CharField(
        "notification id", max_length=32, unique=True, default=new_notification_id, editable=False
    )
    # Both indexed by the indexes that lead with them (ntf_partner_feed, ntf_order), not by their own.
    partner = models.ForeignKey(
        Partner, on_delete=models.CASCADE, related_name="notifications", db_index=False
    )
    livemode = models.BooleanField(default=True)
    type = models.CharField(max_length=40, choices=Type.choices)
    order = models.ForeignKey(
        Order, null=True, blank=True, on_delete=models.CASCADE, related_name="notifications", db_index=False
    )
    payload = models.JSONField()
    # The move an ``order.status_changed`` notification carries, for the in-process subscribers
    # (``orders.signals.Transition``): they read the typed history row, never the partner's payload. No database
    # constraint or index: the row is written in the same transaction, only ever read by its primary key, and
    # goes with the order as the notification does.
    transition = models.ForeignKey(
        "OrderStatusHistory",
        null=True,
        blank=True,
        on_delete=models.DO_NOTHING,
        db_constraint=False,
        db_index=False,
        related_name="+",
    )
    created_at = models.DateTimeField(default=timezone.now)
    dispatched_at = models.DateTimeField(null=True, blank=True)

    objects = ModeScopedQuerySet.as_manager()

    class Meta:
        ordering = ["id"]
        indexes = [
            # The feed: a partner's notifications of one mode, oldest first, resumable after an id.
            models.Index(fields=["partner", "livemode", "id"], name="ntf_partner_feed"),
            models.Index(fields=["order", "id"], name="ntf_order"),
            # The outbox sweep walks only what was never handed over.
            models.Index(
                fields=["created_at"], condition=Q(dispatched_at__isnull=True), name="ntf_undispatched"
            ),
            models.Index(fields=["created_at"], name="ntf_created"),
        ]

    def __str__(self) -> str:
        return f"{self.notification_id} {self.type}"


class NotificationReceipt(models.Model):
    """A subscriber of ``orders.signals`` finished handling a notification: a repeat delivery is skipped."""

    # Indexed by ntf_receipt_unique, which leads with it.
    notification = models.ForeignKey(
        Notification, on_delete=models.CASCADE, related_name="receipts", db_index=False
    )
    subscriber = models.CharField(max_length=64)
    handled_at = models.DateTimeField(default=timezone.now)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["notification", "subscriber"], name="ntf_receipt_unique"),
        ]

    def __str__(self) -> str:
        return f"{self.notification_id} → {self.subscriber}"
