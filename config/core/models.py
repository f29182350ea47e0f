from django.conf import settings
from django.db import models
from django.db.models import Q


class StaffConfirmation(models.Model):
    """One staff confirmation page shown (config/core/confirmation.py): the single-use id it carries, issued by
    the server to one staff member for one change of given objects, and consumed once by the database."""

    id = models.CharField(primary_key=True, max_length=64)
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    # A digest of what it was issued for: the model, the action, its permissions and the objects' keys.
    scope = models.CharField(max_length=64)
    issued_at = models.DateTimeField(db_index=True)
    consumed_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        default_permissions = ()

    def __str__(self) -> str:
        return f"confirmation {self.pk[:8]}… ({'used' if self.consumed_at else 'unused'})"


class MailOnce(models.Model):
    """One e-mail that goes out at most once, keyed by what it is about (``config/core/mail_once.py``): the seller's
    order confirmation, the question to a seller about a transfer, the partner's payment alerts.

    ``claimed_at`` is the sender's claim (its token), ``handed_over_at`` when the message was handed to the mail
    server, ``sent_at`` when its sending was recorded. ``unconfirmed``: handed over but its acceptance was never
    recorded; it was probably sent, is never sent again automatically, and is shown to staff.
    """

    purpose = models.CharField(max_length=40)
    key = models.CharField(max_length=64, help_text="What the e-mail is about: the object's primary key.")
    recipient = models.CharField(max_length=254, blank=True)
    claimed_at = models.DateTimeField(null=True, blank=True)
    handed_over_at = models.DateTimeField(
        null=True, blank=True, help_text="When the message was handed to the mail server (just before DATA)."
    )
    sent_at = models.DateTimeField(null=True, blank=True)
    unconfirmed = models.BooleanField(
        default=False,
        help_text="The message was handed to the mail server but its acceptance was never recorded: it was "
        "probably sent, and is never sent again automatically.",
    )

    class Meta:
        default_permissions = ("view",)
        verbose_name = "e-mail sent once"
        verbose_name_plural = "e-mails sent once"
        constraints = [models.UniqueConstraint(fields=["purpose", "key"], name="mail_once_purpose_key")]
        indexes = [
            # Staff's list of the messages whose acceptance was never recorded.
            models.Index(
                fields=["purpose", "sent_at"], name="mail_once_unconfirmed", condition=Q(unconfirmed=True)
            )
        ]

    def __str__(self) -> str:
        return f"{self.purpose} {self.key}"
