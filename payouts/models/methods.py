from django.db import models

from partners.models import Partner


class PayoutAccount(models.Model):
    """The partner's payout method, connected on the payment platform. Only the platform's id and a
    masked description are kept: never a full account or routing number."""

    class Method(models.TextChoices):
        ACH = "ach", "ACH bank transfer"
        WIRE = "wire", "Wire transfer"

    partner = models.OneToOneField(Partner, on_delete=models.CASCADE, related_name="payout_account")
    platform = models.CharField(max_length=32, default="sandbox")
    platform_account_id = models.CharField(max_length=100)
    method = models.CharField(max_length=8, choices=Method.choices)
    bank_name = models.CharField(max_length=120)
    last4 = models.CharField(max_length=4)
    connected_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    def __str__(self) -> str:
        return f"{self.bank_name} ••••{self.last4} ({self.get_method_display()})"


class CreditCard(models.Model):
    """The partner's card on file: the platform's card token, brand, last 4 and expiry only."""

    partner = models.OneToOneField(Partner, on_delete=models.CASCADE, related_name="credit_card")
    platform = models.CharField(max_length=32, default="sandbox")
    platform_card_token = models.CharField(max_length=100)
    brand = models.CharField(max_length=32)
    last4 = models.CharField(max_length=4)
    exp_month = models.PositiveSmallIntegerField()
    exp_year = models.PositiveSmallIntegerField()
    added_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    def __str__(self) -> str:
        return f"{self.brand} ••••{self.last4} exp {self.exp_month:02d}/{self.exp_year}"
