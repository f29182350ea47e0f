"""State of the sandbox payment platform: a stateful simulator that lives in the service's database.

The tables keep the names they had when these models belonged to the payouts app (``payouts_sandbox…``).

It plays the external platform's side (its own accounts, cards, charges and payouts), so it keeps the
same rule as a real platform's records would: only last 4 digits, never a full card or account number.
"""

from datetime import timedelta

from django.conf import settings
from django.db import models
from django.utils import timezone

from config.core.ids import new_public_id


def new_sandbox_account_id() -> str:
    return new_public_id("sbx_acct", 16)


def new_sandbox_code() -> str:
    return new_public_id("sbx_code", 32)


def new_sandbox_card_token() -> str:
    return new_public_id("sbx_card", 16)


def new_sandbox_setup_id() -> str:
    return new_public_id("sbx_seti", 24)


def new_sandbox_charge_id() -> str:
    return new_public_id("sbx_ch", 16)


def new_sandbox_refund_id() -> str:
    return new_public_id("sbx_re", 16)


def new_sandbox_payout_id() -> str:
    return new_public_id("sbx_po", 16)


class SandboxAccount(models.Model):
    """A bank account connected on the sandbox platform."""

    class Behavior(models.TextChoices):
        SUCCEED = "succeed", "Payouts succeed"
        NO_ACCOUNT = "no_account", "Payouts fail: no such account"
        CLOSED = "closed", "Payouts fail: account closed"

    account_id = models.CharField(max_length=40, unique=True, default=new_sandbox_account_id)
    reference = models.CharField(max_length=64, help_text="The platform client's reference (partner id).")
    holder_name = models.CharField(max_length=120)
    method = models.CharField(max_length=8)  # ach | wire
    bank_name = models.CharField(max_length=120)
    routing_number = models.CharField(max_length=9, help_text="Public bank identifier (ABA).")
    account_last4 = models.CharField(max_length=4)
    behavior = models.CharField(max_length=16, choices=Behavior.choices, default=Behavior.SUCCEED)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        db_table = "payouts_sandboxaccount"
        verbose_name = "sandbox bank account"

    def __str__(self) -> str:
        return f"{self.account_id} {self.bank_name} ••••{self.account_last4}"


class SandboxAuthorizationCode(models.Model):
    """One-time code handed back to the authorize redirect; exchanged once, within ten minutes."""

    TTL = timedelta(minutes=10)

    code = models.CharField(max_length=48, unique=True, default=new_sandbox_code)
    account = models.ForeignKey(SandboxAccount, on_delete=models.CASCADE, related_name="codes")
    redirect_uri = models.URLField(max_length=500)
    created_at = models.DateTimeField(default=timezone.now)
    used_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        db_table = "payouts_sandboxauthorizationcode"

    def __str__(self) -> str:
        return f"code for {self.account_id}"

    @property
    def expired(self) -> bool:
        return timezone.now() > self.created_at + self.TTL


class SandboxCard(models.Model):
    """A card saved on the sandbox platform: token, brand, last 4, expiry and how charges behave."""

    class Behavior(models.TextChoices):
        SUCCEED = "succeed", "Charges succeed"
        DECLINE = "decline", "Charges are declined"
        INSUFFICIENT_FUNDS = "insufficient_funds", "Charges fail: insufficient funds"
        PROCESSING_ERROR = "processing_error", "Platform unavailable on charge and refund"
        REFUND_FAILS = "refund_fails", "Charges succeed, refunds fail"

    token = models.CharField(max_length=40, unique=True, default=new_sandbox_card_token)
    customer_reference = models.CharField(max_length=64)
    holder_name = models.CharField(max_length=120, blank=True)
    brand = models.CharField(max_length=32)
    last4 = models.CharField(max_length=4)
    exp_month = models.PositiveSmallIntegerField()
    exp_year = models.PositiveSmallIntegerField()
    behavior = models.CharField(max_length=24, choices=Behavior.choices, default=Behavior.SUCCEED)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        db_table = "payouts_sandboxcard"
        verbose_name = "sandbox card"

    def __str__(self) -> str:
        return f"{self.token} {self.brand} ••••{self.last4}"


class SandboxCardSetup(models.Model):
    """A finished card-page visit; the portal redeems ``setup_id`` once for the saved card."""

    TTL = timedelta(hours=1)

    setup_id = models.CharField(max_length=48, unique=True, default=new_sandbox_setup_id)
    card = models.ForeignKey(SandboxCard, on_delete=models.CASCADE, related_name="setups")
    created_at = models.DateTimeField(default=timezone.now)
    redeemed_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        db_table = "payouts_sandboxcardsetup"

    def __str__(self) -> str:
        return self.setup_id

    @property
    def expired(self) -> bool:
        return timezone.now() > self.created_at + self.TTL


class SandboxCharge(models.Model):
    class Status(models.TextChoices):
        SUCCEEDED = "succeeded", "Succeeded"
        FAILED = "failed", "Failed"

    charge_id = models.CharField(max_length=40, unique=True, default=new_sandbox_charge_id)
    card = models.ForeignKey(SandboxCard, on_delete=models.PROTECT, related_name="charges")
    amount = models.DecimalField(max_digits=12, decimal_places=2)
    currency = models.CharField(max_length=3)
    description = models.CharField(max_length=255, blank=True)
    # The platform's idempotency: a repeated key returns the first result, never a second charge.
    idempotency_key = models.CharField(max_length=128, unique=True)
    status = models.CharField(max_length=16, choices=Status.choices)
    failure_reason = models.CharField(max_length=255, blank=True)
    # What went back to the card so far: succeeded refunds only, never more than ``amount``.
    amount_refunded = models.DecimalField(max_digits=12, decimal_places=2, default=0)
    refunded_at = models.DateTimeField(null=True, blank=True, help_text="When the last refund succeeded.")
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        db_table = "payouts_sandboxcharge"
        verbose_name = "sandbox charge"

    def __str__(self) -> str:
        return f"{self.charge_id} {self.amount} {self.currency} {self.status}"

    @property
    def refundable(self):
        return self.amount - self.amount_refunded


class SandboxRefund(models.Model):
    """A refund on the sandbox platform: immediate, succeeded unless the card is a refund-failing test card."""

    class Status(models.TextChoices):
        SUCCEEDED = "succeeded", "Succeeded"
        FAILED = "failed", "Failed"

    refund_id = models.CharField(max_length=40, unique=True, default=new_sandbox_refund_id)
    charge = models.ForeignKey(SandboxCharge, on_delete=models.PROTECT, related_name="refunds")
    amount = models.DecimalField(max_digits=12, decimal_places=2)
    currency = models.CharField(max_length=3)
    reason = models.CharField(max_length=255, blank=True)
    # The platform's idempotency: a repeated key returns the first refund, never a second one.
    idempotency_key = models.CharField(max_length=128, unique=True)
    status = models.CharField(max_length=16, choices=Status.choices)
    failure_reason = models.CharField(max_length=255, blank=True)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        db_table = "payouts_sandboxrefund"
        verbose_name = "sandbox refund"

    def __str__(self) -> str:
        return f"{self.refund_id} {self.amount} {self.currency} {self.status}"


class SandboxPayout(models.Model):
    """A payout on the sandbox platform. Its state follows from the clock: in process, then scheduled
    after ``SANDBOX_PAYOUT_SCHEDULE_AFTER_SECONDS``, then paid after ``SANDBOX_PAYOUT_PAID_AFTER_SECONDS``
    (or failed when the account is one of the failing test accounts)."""

    payout_id = models.CharField(max_length=40, unique=True, default=new_sandbox_payout_id)
    account = models.ForeignKey(SandboxAccount, on_delete=models.PROTECT, related_name="payouts")
    amount = models.DecimalField(max_digits=12, decimal_places=2)
    currency = models.CharField(max_length=3)
    description = models.CharField(max_length=255, blank=True)
    idempotency_key = models.CharField(max_length=128, unique=True)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        db_table = "payouts_sandboxpayout"
        verbose_name = "sandbox payout"

    def __str__(self) -> str:
        return f"{self.payout_id} {self.amount} {self.currency}"

    @property
    def schedule_at(self):
        return self.created_at + timedelta(seconds=settings.SANDBOX_PAYOUT_SCHEDULE_AFTER_SECONDS)

    @property
    def paid_at(self):
        after = max(
            settings.SANDBOX_PAYOUT_PAID_AFTER_SECONDS, settings.SANDBOX_PAYOUT_SCHEDULE_AFTER_SECONDS
        )
        return self.created_at + timedelta(seconds=after)
