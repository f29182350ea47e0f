"""Forms of the payouts and payment-method pages of the partner portal."""

from __future__ import annotations

from django import forms

from .models import Payout


class ReplaceConfirmForm(forms.Form):
    """docs/partners/portal.md "Portal, payments and payouts": an explicit confirmation before replacing a payment method while orders are active."""

    confirm_replace = forms.BooleanField(
        required=False,
        label="I understand that updating or replacing a payment method while orders are active may cause "
        "billing problems, and I want to replace it.",
    )


class PayoutFilterForm(forms.Form):
    STATUS_CHOICES = [("", "All states"), *Payout.Status.choices]
    status = forms.ChoiceField(required=False, choices=STATUS_CHOICES)
