from zoneinfo import available_timezones

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import models
from django.utils import timezone

from config.core.ids import new_public_id
from config.core.statemachine import StatusHistory


def validate_time_zone(value: str) -> None:
    """An IANA name this machine's tz database knows (``zoneinfo.available_timezones()``)."""
    if value not in available_timezones():
        raise ValidationError(f"{value!r} is not an IANA time zone name.", code="invalid_time_zone")


def new_partner_id() -> str:
    return new_public_id("ptn")


def new_client_id() -> str:
    return new_public_id("cli", 24)


def new_test_client_id() -> str:
    return new_public_id("cli_test", 24)


def new_session_id() -> str:
    return new_public_id("tks", 24)


class Partner(models.Model):
    class Status(models.TextChoices):
        ACTIVE = "active", "Active"
        SUSPENDED = "suspended", "Suspended"

    public_id = models.CharField(
        "partner id", max_length=32, unique=True, default=new_partner_id, editable=False
    )
    name = models.CharField(max_length=200)
    contact_email = models.EmailField(
        blank=True, help_text="Where order confirmations go when no seller e-mail is given."
    )
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.ACTIVE)
    suspended_reason = models.CharField(max_length=255, blank=True)
    time_zone = models.CharField(
        max_length=64,
        default="UTC",
        validators=[validate_time_zone],
        help_text="IANA name; the portal shows every time in it. The API always answers in UTC.",
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["name"]
        # Staff actions that go beyond editing the record (docs/staff-guide.md "Staff permissions and groups").
        permissions = [
            ("rotate_credentials", "Can rotate a partner's API credentials and see the new secret once"),
            ("suspend_partner", "Can suspend and reactivate a partner"),
        ]

    def __str__(self) -> str:
        return f"{self.name} ({self.public_id})"

    @property
    def is_active(self) -> bool:
        return self.status == self.Status.ACTIVE


class PartnerStatusHistory(StatusHistory):
    """One row per move of ``Partner.status`` (``partners.services.partner_transition``): who suspended or
    reactivated the partner, and why."""

    partner = models.ForeignKey(Partner, on_delete=models.CASCADE, related_name="status_history")

    class Meta(StatusHistory.Meta):
        verbose_name = "partner status change"
        verbose_name_plural = "partner status history"
        indexes = [models.Index(fields=["partner", "at", "id"], name="partner_history_partner_at")]


class ClientCredential(models.Model):
    """A client_id and its secret, kept only as a SHA-256 digest."""

    client_id = models.CharField(max_length=40, unique=True, default=new_client_id, editable=False)
    secret_digest = models.CharField(max_length=64, editable=False)
    secret_last4 = models.CharField(
        max_length=4, editable=False, help_text="Last 4 characters, to tell secrets apart."
    )
    created_at = models.DateTimeField(auto_now_add=True)
    rotated_at = models.DateTimeField(null=True, blank=True)
    # Signed into every token issued under this credential. Rotating it, or suspending the partner, moves it
    # on: a token signed under an older generation is revoked, whether or not its session has reached the
    # database yet (sessions live in Redis first, partners/token_cache.py). Durable here, in PostgreSQL.
    token_generation = models.PositiveIntegerField(default=1, editable=False)
    token_generation_at = models.DateTimeField(null=True, blank=True, editable=False)

    class Meta:
        abstract = True

    def __str__(self) -> str:
        return self.client_id


class PartnerCredential(ClientCredential):
    """The partner's live client credentials (``cli_…`` / ``sec_…``)."""

    livemode = True

    partner = models.OneToOneField(Partner, on_delete=models.CASCADE, related_name="credential")


class PartnerTestCredential(ClientCredential):
    """The partner's test-mode client credentials (``cli_test_…`` / ``sec_test_…``): their tokens see and
    make test-mode objects only (docs/partners/test-mode.md "Test mode")."""

    livemode = False

    partner = models.OneToOneField(Partner, on_delete=models.CASCADE, related_name="test_credential")
    client_id = models.CharField(max_length=40, unique=True, default=new_test_client_id, editable=False)


class TokenSession(models.Model):
    """One row per token request; revoking the row stops every token bound to it.

    With Redis, a session is kept there first and written here by the batched writer within seconds
    (``partners.session_services.token_sessions_flush``); ``created_at`` is the time the token was issued."""

    session_id = models.CharField(max_length=40, unique=True, default=new_session_id, editable=False)
    partner = models.ForeignKey(Partner, on_delete=models.CASCADE, related_name="token_sessions")
    scope = models.CharField(max_length=200)
    # The mode of the credentials the token was issued for (docs/partners/test-mode.md "Test mode").
    livemode = models.BooleanField(default=True)
    created_at = models.DateTimeField(default=timezone.now)
    expires_at = models.DateTimeField()
    revoked_at = models.DateTimeField(null=True, blank=True)
    revoked_reason = models.CharField(max_length=100, blank=True)
    client_ip = models.GenericIPAddressField(null=True, blank=True)

    class Meta:
        indexes = [
            models.Index(fields=["partner", "expires_at"], name="tks_partner_expiry"),
            # Each web process reads the latest revocations every few seconds (partners/revocation.py):
            # only revoked rows are indexed, a small part of a table that gets a row per token request.
            models.Index(
                fields=["revoked_at"], name="tks_revoked_at", condition=models.Q(revoked_at__isnull=False)
            ),
        ]
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return self.session_id


class PortalUser(models.Model):
    """Links a Django user to the partner it may act for in the portal."""

    user = models.OneToOneField(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="portal_profile"
    )
    partner = models.ForeignKey(Partner, on_delete=models.CASCADE, related_name="portal_users")
    invited_at = models.DateTimeField(auto_now_add=True)

    def __str__(self) -> str:
        return f"{self.user.email} → {self.partner.name}"
