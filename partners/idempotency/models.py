from django.db import models


class IdempotencyKey(models.Model):
    """One partner's use of one ``Idempotency-Key`` in one mode: the request it names and, once finished,
    the answer to replay. The unique constraint is what decides which of two concurrent requests runs."""

    partner = models.ForeignKey("partners.Partner", on_delete=models.CASCADE, related_name="+")
    livemode = models.BooleanField()
    key = models.CharField(max_length=255)
    fingerprint = models.CharField(max_length=64, help_text="SHA-256 of method, path and body.")
    method = models.CharField(max_length=8)
    path = models.TextField()
    # Random per request that holds the key: only the holder may store the answer or release the key.
    claim_token = models.CharField(max_length=32)
    created_at = models.DateTimeField(help_text="First request; the key is kept 24 hours from here.")
    # The lease of the running request. A request whose process died never finishes: past this moment the
    # key may be claimed again. Null once the answer is stored.
    locked_until = models.DateTimeField(null=True, blank=True)
    response_status = models.PositiveSmallIntegerField(null=True, blank=True)
    response_body = models.JSONField(null=True, blank=True, help_text='{"data": …} or {"error": …}')
    completed_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["partner", "livemode", "key"], name="idempotency_key_unique_per_partner_and_mode"
            )
        ]
        indexes = [models.Index(fields=["created_at"], name="idempotency_key_created_idx")]

    def __str__(self) -> str:
        return f"{self.key} ({self.method} {self.path})"
