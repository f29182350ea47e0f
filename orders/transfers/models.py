"""Transfer detection's records: every inbound message as received, the evidence read from it, the staff
cases, and the ticket files' barcodes.

An ``InboundMessage`` is written (raw bytes in storage, sha256, envelope, peer) and committed before the
sender is answered; its processing stages write their verdicts on it. ``TransferEvidence`` is what one
authentic message (or ticket file) proved about one order; evidence adds up by distinct seats.
``TransferCase`` is a staff case; ``TicketBarcode`` keeps a barcode as an HMAC plus its last 4 characters.
"""

from django.db import models
from django.db.models import Q
from django.utils import timezone

from config.core.statemachine import StatusHistory
from orders.models import Order


class InboundMessage(models.Model):
    class Channel(models.TextChoices):
        SMTP = "smtp", "SMTP"
        AMAZON_SES = "amazon_ses", "Amazon SES"
        MAILGUN = "mailgun", "Mailgun"
        POSTMARK = "postmark", "Postmark"

    class Stage(models.TextChoices):
        RECEIVED = "received", "Received"  # stored, not yet processed
        DEFERRED = "deferred", "Deferred"  # a temporary DNS failure: tried again later
        PROCESSED = "processed", "Processed"

    class Outcome(models.TextChoices):
        PENDING = "", "Pending"
        MATCHED = "matched", "Matched: order moved"
        PARTIAL = "partial", "Partial"
        ACCEPTED = "accepted", "Accepted on platform"
        RECALLED = "recalled", "Recalled"
        CASE = "case", "Case opened"
        DUPLICATE = "duplicate", "Already processed"
        IGNORED = "ignored", "Ignored"
        PURGED = "purged", "Raw message purged"

    channel = models.CharField(max_length=12, choices=Channel.choices)
    recipient = models.CharField(max_length=254, help_text="The envelope recipient (a transfer address).")
    sha256 = models.CharField(max_length=64)
    raw = models.FileField(max_length=255, blank=True, help_text="The raw message as received (storage).")
    size = models.PositiveIntegerField(default=0)
    mail_from = models.CharField(max_length=254, blank=True, help_text="The envelope sender.")
    peer = models.CharField(max_length=100, blank=True, help_text="The client address, or the provider.")
    helo = models.CharField(max_length=254, blank=True)
    order = models.ForeignKey(
        Order, null=True, blank=True, on_delete=models.SET_NULL, related_name="inbound_messages"
    )
    # The headers as parsed (staff view and replay checks): From, To, Subject, Date, Message-ID.
    header_from = models.CharField(max_length=500, blank=True)
    header_subject = models.CharField(max_length=500, blank=True)
    header_date = models.DateTimeField(null=True, blank=True)
    message_id = models.CharField(max_length=500, blank=True)
    platform = models.CharField(max_length=32, blank=True, help_text="The platform (primary_site) it claims.")
    kind = models.CharField(max_length=24, blank=True, help_text="transfer_offer, transfer_accepted, …")
    # Each stage's result: {"auth": {...}, "spf": {...}, "provider": {...}, "parse": {...}, "match": {...}}.
    verdicts = models.JSONField(default=dict, blank=True)
    authentic = models.BooleanField(null=True, blank=True)
    stage = models.CharField(max_length=10, choices=Stage.choices, default=Stage.RECEIVED)
    outcome = models.CharField(max_length=10, choices=Outcome.choices, default="", blank=True)
    attempts = models.PositiveSmallIntegerField(default=0)
    # Processing runs started and not finished in a row (a worker killed, a time limit, a transient error):
    # at 5 the message is closed with a case instead of being tried again.
    runs = models.PositiveSmallIntegerField(default=0)
    next_attempt_at = models.DateTimeField(null=True, blank=True)
    received_at = models.DateTimeField(default=timezone.now)
    processed_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-received_at", "-id"]
        verbose_name = "inbound message"
        constraints = [
            # One delivery per message and recipient: a sender's retry finds the row it already wrote.
            models.UniqueConstraint(fields=["sha256", "recipient"], name="inbound_sha_recipient"),
        ]
        indexes = [
            models.Index(fields=["received_at"], condition=~Q(stage="processed"), name="inbound_unprocessed"),
            models.Index(fields=["platform", "message_id"], name="inbound_platform_msgid"),
            models.Index(fields=["platform", "sha256"], name="inbound_platform_sha"),
            models.Index(fields=["received_at"], name="inbound_received"),
        ]

    def __str__(self) -> str:
        return f"{self.channel} → {self.recipient} ({self.sha256[:12]})"


class TransferEvidence(models.Model):
    """What one authentic message or ticket file proved about an order (staff-only)."""

    class Kind(models.TextChoices):
        OFFER = "transfer_offer", "Transfer offer"
        ACCEPTED = "transfer_accepted", "Transfer accepted"
        CANCELED = "transfer_canceled", "Transfer canceled"
        FILE = "ticket_file", "Ticket file"

    order = models.ForeignKey(Order, on_delete=models.CASCADE, related_name="transfer_evidence")
    message = models.ForeignKey(
        InboundMessage, null=True, blank=True, on_delete=models.SET_NULL, related_name="evidence"
    )
    kind = models.CharField(max_length=20, choices=Kind.choices)
    # What was read: event, start, venue, section, row, seats, quantity, accept_link, file_sha256 ….
    fields = models.JSONField(default=dict, blank=True)
    seats = models.JSONField(default=list, blank=True, help_text="Normalised distinct seats it covers.")
    quantity = models.PositiveIntegerField(default=0)
    matched = models.BooleanField(default=False)
    accept_link = models.CharField(max_length=1000, blank=True)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["created_at", "id"]
        verbose_name_plural = "transfer evidence"
        constraints = [
            models.UniqueConstraint(
                fields=["order", "message"], condition=Q(message__isnull=False), name="evidence_once"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.order_id} {self.kind}"


class TransferCase(models.Model):
    """A transfer the service could not decide alone: staff resolve it with a reason."""

    class Kind(models.TextChoices):
        UNVERIFIED = "unverified", "Unverified (authentication failed)"
        UNVERIFIABLE = "unverifiable", "Unverifiable (no raw message)"
        AUTH_TEMPERROR = "auth_temperror", "DNS kept failing"
        UNPARSED = "unparsed", "Unparsed"
        MISMATCH = "mismatch", "Mismatch"
        PARTIAL_OVERDUE = "partial_overdue", "Partial, in-hand date near"
        DUPLICATE_BARCODE = "duplicate_barcode", "Duplicate barcode"
        REPLAY_SUSPECTED = "replay_suspected", "Replay suspected"
        RECALLED = "recalled", "Recalled"
        RECALLED_AFTER_PAYOUT = "recalled_after_payout", "Recalled after payout started"

    class State(models.TextChoices):
        OPEN = "open", "Open"
        IN_REVIEW = "in_review", "In review"
        RESOLVED = "resolved", "Resolved"

    class Resolution(models.TextChoices):
        MARKED_RECEIVED = "marked_received", "Marked received"
        ASKED_SELLER = "asked_seller", "Asked the seller"
        DISMISSED = "dismissed", "Dismissed"
        FORGED = "forged", "Marked forged"
        ACCEPTED_ON_PLATFORM = "accepted_on_platform", "Accepted on platform"
        RECALLED = "recalled", "Marked recalled"

    OPEN_STATES = (State.OPEN, State.IN_REVIEW)

    order = models.ForeignKey(
        Order, null=True, blank=True, on_delete=models.CASCADE, related_name="transfer_cases"
    )
    message = models.ForeignKey(
        InboundMessage, null=True, blank=True, on_delete=models.SET_NULL, related_name="cases"
    )
    kind = models.CharField(max_length=24, choices=Kind.choices)
    state = models.CharField(max_length=10, choices=State.choices, default=State.OPEN)
    summary = models.CharField(max_length=500, blank=True, help_text="Why the case was opened.")
    details = models.JSONField(default=dict, blank=True, help_text="Evidence against the order, per field.")
    # Only a case that could still lead to a payout holds the order's in-hand expiry while open; one opened
    # by mail that is not authentic (unverified, unverifiable, a replay, an unreadable message) never does.
    defers_expiry = models.BooleanField(default=False)
    resolution = models.CharField(max_length=24, choices=Resolution.choices, blank=True)
    resolved_by = models.CharField(max_length=200, blank=True)
    resolved_at = models.DateTimeField(null=True, blank=True)
    resolution_reason = models.CharField(max_length=500, blank=True)
    # "Ask the seller": the question recorded with the resolution, then sent after the commit. The row is the
    # truth: a question whose task message was lost is sent by the sweep; the e-mail itself is sent at most once
    # (``config.core.mail_once``, ``staff.services.QUESTION_MAIL``: the sender's claim, then sent, never again).
    question = models.TextField(blank=True)
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        verbose_name = "transfer case"
        permissions = [
            ("resolve_transfer_case", "Can mark a transfer case received, dismissed or forged"),
            ("ask_seller", "Can ask the seller about a transfer"),
            ("mark_accepted_on_platform", "Can record transfers accepted on the platform"),
            ("mark_recalled", "Can mark a transfer recalled"),
        ]
        indexes = [
            models.Index(fields=["state", "-created_at"], name="transfer_case_state"),
            models.Index(fields=["order", "state"], name="transfer_case_order"),
            models.Index(
                fields=["resolved_at"],
                name="transfer_case_question_asked",
                condition=Q(question__gt=""),
            ),
        ]
        constraints = [
            models.CheckConstraint(
                condition=Q(state="resolved", resolution__gt="") | (~Q(state="resolved") & Q(resolution="")),
                name="transfer_case_resolution_when_resolved",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.get_kind_display()} — {self.order_id or 'no order'}"


class TransferCaseHistory(StatusHistory):
    case = models.ForeignKey(TransferCase, on_delete=models.CASCADE, related_name="history")

    class Meta(StatusHistory.Meta):
        verbose_name = "case state change"
        verbose_name_plural = "case history"


class TransferProgress(models.Model):
    """An order's transfer as the service has seen it (docs/partners/orders.md "Transfer"), written only by
    ``orders.transfers.decision.state``; the payout gate, the expiry, the API, the portal and the admin read it
    with the order (a join on the order's key). Not made with the order: the first write about an order makes it
    (``INSERT … ON CONFLICT``, in the writer's transaction); an order without one reads as the defaults (state
    ``none``, nothing detected, no source, no times, no case open: ``Order.transfer``)."""

    order = models.OneToOneField(
        Order, primary_key=True, on_delete=models.CASCADE, related_name="transfer_progress"
    )
    state = models.CharField(
        max_length=10, choices=Order.TransferState.choices, default=Order.TransferState.NONE
    )
    quantity_detected = models.PositiveIntegerField(default=0)
    source = models.CharField(max_length=8, choices=Order.TransferSource.choices, null=True, blank=True)
    detected_at = models.DateTimeField(null=True, blank=True)
    accepted_at = models.DateTimeField(null=True, blank=True)
    case_open = models.BooleanField(
        default=False, help_text="A staff case about this order's transfer is open: no payout, no expiry."
    )
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        verbose_name = "transfer progress"
        verbose_name_plural = "transfer progress"
        constraints = [
            models.CheckConstraint(
                condition=Q(state__in=["none", "partial", "detected", "accepted", "mismatch", "recalled"]),
                name="transfer_progress_state_valid",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.order_id}: {self.state}"


class TransferStateHistory(StatusHistory):
    """Every change of an order's transfer state (``TransferProgress.state``): from, to, when, who, why."""

    order = models.ForeignKey(Order, on_delete=models.CASCADE, related_name="transfer_history")

    class Meta(StatusHistory.Meta):
        verbose_name = "transfer state change"
        verbose_name_plural = "transfer history"


class TicketBarcode(models.Model):
    """A barcode read from an order's ticket file, kept as an HMAC (duplicates) plus its last 4 characters."""

    order = models.ForeignKey(Order, on_delete=models.CASCADE, related_name="ticket_barcodes")
    digest = models.CharField(
        max_length=64, help_text="HMAC-SHA256 of the barcode's text, keyed by the service."
    )
    last4 = models.CharField(max_length=4)
    symbology = models.CharField(max_length=20)
    file_sha256 = models.CharField(max_length=64)
    page = models.PositiveSmallIntegerField(default=1)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["order_id", "id"]
        indexes = [models.Index(fields=["digest"], name="ticket_barcode_digest")]
        constraints = [
            models.UniqueConstraint(fields=["order", "digest"], name="ticket_barcode_once_per_order"),
        ]

    def __str__(self) -> str:
        return f"…{self.last4} ({self.symbology})"


class TicketFileCheck(models.Model):
    """One ticket file read for an order: its sha256, pages and barcodes, and the verdict."""

    order = models.ForeignKey(Order, on_delete=models.CASCADE, related_name="ticket_file_checks")
    message = models.ForeignKey(
        InboundMessage, null=True, blank=True, on_delete=models.SET_NULL, related_name="file_checks"
    )
    file_sha256 = models.CharField(max_length=64, db_index=True)
    pages = models.PositiveSmallIntegerField(default=0)
    barcodes = models.PositiveSmallIntegerField(default=0)
    verdict = models.CharField(max_length=24, help_text="verified, or what was wrong.")
    details = models.JSONField(default=dict, blank=True)
    seconds = models.FloatField(default=0)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["-created_at", "-id"]

    def __str__(self) -> str:
        return f"{self.order_id} {self.verdict}"


class SandboxSigningKey(models.Model):
    """The sandbox platform's DKIM key (``orders.transfers.testing.simulator``), made on first use and shared by every
    process: the private key sealed under ``SECRET_KEY``, the public key as DKIM's ``p=`` (base64 DER)."""

    selector = models.CharField(max_length=63, unique=True)
    private_key_sealed = models.TextField()
    public_key = models.TextField()
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        verbose_name = "sandbox signing key"

    def __str__(self) -> str:
        return f"{self.selector} ({self.created_at:%Y-%m-%d})"


class PlatformTemplateVersion(models.Model):
    """One version of a platform's registry entry and templates, in the template file's format (``data``).

    The shipped file is version 1; every change staff make is a new version with who, when and why. One
    version per platform is in force (``active``); a version that changes the sender domains or accept-link
    hosts is activated only once a second staff member approved it."""

    class State(models.TextChoices):
        DRAFT = "draft", "Draft"
        ACTIVE = "active", "In force"
        SUPERSEDED = "superseded", "Superseded"
        DISCARDED = "discarded", "Discarded"

    class Source(models.TextChoices):
        SHIPPED = "shipped", "Shipped file"
        STAFF = "staff", "Made by staff"

    platform = models.CharField(max_length=32, help_text="The primary_site it reads mail of.")
    version = models.PositiveIntegerField()
    data = models.JSONField(help_text="The template, as the platform's YAML file holds it.")
    state = models.CharField(max_length=12, choices=State.choices, default=State.DRAFT)
    source = models.CharField(max_length=8, choices=Source.choices, default=Source.STAFF)
    based_on = models.PositiveIntegerField(null=True, blank=True, help_text="The version it was made from.")
    learned_from = models.ForeignKey(
        TransferCase, null=True, blank=True, on_delete=models.SET_NULL, related_name="template_versions"
    )
    registry_change = models.BooleanField(
        default=False, help_text="Its sender domains or accept-link hosts differ from the version in force."
    )
    reason = models.CharField(max_length=500, blank=True)
    created_by = models.CharField(max_length=200)
    created_at = models.DateTimeField(default=timezone.now)
    approved_by = models.CharField(max_length=200, blank=True)
    approved_at = models.DateTimeField(null=True, blank=True)
    approved_registry = models.JSONField(
        default=dict,
        blank=True,
        help_text="The sender domains and accept-link hosts in force when it was approved: the approval holds "
        "only while they are still in force.",
    )
    activated_by = models.CharField(max_length=200, blank=True)
    activated_at = models.DateTimeField(null=True, blank=True)
    trial = models.JSONField(default=dict, blank=True, help_text="The last test against the stored mail.")

    class Meta:
        ordering = ["platform", "-version"]
        verbose_name = "platform template version"
        verbose_name_plural = "platform templates"  # one name in every breadcrumb and the admin's index
        permissions = [
            ("manage_platform_templates", "Can make, test and activate platform templates"),
            ("approve_platform_registry", "Can approve a platform's sender domains and accept-link hosts"),
        ]
        constraints = [
            models.UniqueConstraint(fields=["platform", "version"], name="platform_template_version_once"),
            # Race: two activations of one platform at once — one version in force, whoever commits first.
            models.UniqueConstraint(
                fields=["platform"], condition=Q(state="active"), name="platform_template_one_active"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.platform} v{self.version}"


class PlatformTemplateHistory(StatusHistory):
    """Every state change of a platform's template versions, with who and why (the platform's history)."""

    template = models.ForeignKey(PlatformTemplateVersion, on_delete=models.CASCADE, related_name="history")

    class Meta(StatusHistory.Meta):
        verbose_name = "platform template change"
        verbose_name_plural = "platform template history"
