"""Writes on payment methods, charges and payouts."""

import secrets

from django.db import transaction

from partners.models import Partner

from .models import CreditCard, PayoutAccount


@transaction.atomic
def payment_methods_create_sandbox(*, partner: Partner) -> tuple[PayoutAccount, CreditCard]:
    """Sandbox payout account and card for demo and test partners (``create_partner --with-payment-methods``)."""
    account, _ = PayoutAccount.objects.update_or_create(
        partner=partner,
        defaults={
            "platform": "sandbox",
            "platform_account_id": "sbx_acct_" + secrets.token_hex(8),
            "method": PayoutAccount.Method.ACH,
            "bank_name": "Sandbox Bank",
            "last4": "6789",
        },
    )
    card, _ = CreditCard.objects.update_or_create(
        partner=partner,
        defaults={
            "platform": "sandbox",
            "platform_card_token": "sbx_card_" + secrets.token_hex(8),
            "brand": "Visa",
            "last4": "4242",
            "exp_month": 12,
            "exp_year": 2030,
        },
    )
    return account, card
