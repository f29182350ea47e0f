"""The sandbox platform's side: its test numbers, and what its own pages write (a bank account from the
authorize page, a card from the card page), keeping only last 4 digits.

Test numbers (also listed on ``/sandbox/``):
cards 4242 4242 4242 4242 (Visa), 5555 5555 5555 4444 (Mastercard), 3782 822463 10005 (Amex) succeed;
4000 0000 0000 0002 declines; 4000 0000 0000 9995 declines for insufficient funds;
4000 0000 0000 0119 makes the platform unavailable on every charge and refund (to exercise retries);
4000 0000 0000 5126 is charged, but its refunds fail (the card account is closed).
Refunds are immediate; a charge is never refunded above its amount.
Bank accounts: any number works, except 000111111116 (payouts fail: no such account) and 000111111113
(payouts fail: account closed).
"""

from __future__ import annotations

from dataclasses import dataclass

from django.db import transaction

from .models import SandboxAccount, SandboxAuthorizationCode, SandboxCard, SandboxCardSetup


@dataclass(frozen=True)
class TestCard:
    number: str
    brand: str
    behavior: str
    note: str


TEST_CARDS = {
    card.number: card
    for card in (
        TestCard("4242424242424242", "Visa", SandboxCard.Behavior.SUCCEED, "Charges succeed."),
        TestCard("5555555555554444", "Mastercard", SandboxCard.Behavior.SUCCEED, "Charges succeed."),
        TestCard("378282246310005", "American Express", SandboxCard.Behavior.SUCCEED, "Charges succeed."),
        TestCard("4000000000000002", "Visa", SandboxCard.Behavior.DECLINE, "Charges are declined."),
        TestCard(
            "4000000000009995",
            "Visa",
            SandboxCard.Behavior.INSUFFICIENT_FUNDS,
            "Charges are declined for insufficient funds.",
        ),
        TestCard(
            "4000000000000119",
            "Visa",
            SandboxCard.Behavior.PROCESSING_ERROR,
            "The platform is unavailable on every charge and refund (the service retries).",
        ),
        TestCard(
            "4000000000005126",
            "Visa",
            SandboxCard.Behavior.REFUND_FAILS,
            "Charges succeed; refunds fail (the card account is closed).",
        ),
    )
}

DECLINE_REASONS = {
    SandboxCard.Behavior.DECLINE: "Your card was declined.",
    SandboxCard.Behavior.INSUFFICIENT_FUNDS: "Your card has insufficient funds.",
}

REFUND_FAILURES = {
    SandboxCard.Behavior.REFUND_FAILS: "The card issuer refused the refund: the card account is closed.",
}

FAILING_ACCOUNTS = {
    "000111111116": SandboxAccount.Behavior.NO_ACCOUNT,
    "000111111113": SandboxAccount.Behavior.CLOSED,
}

PAYOUT_FAILURES = {
    SandboxAccount.Behavior.NO_ACCOUNT: "The bank reported that no account with this number exists.",
    SandboxAccount.Behavior.CLOSED: "The bank reported that the account is closed.",
}

BANKS_BY_ROUTING = {
    "110000000": "Sandbox Test Bank",
    "021000021": "JPMorgan Chase Bank",
    "026009593": "Bank of America",
    "121000248": "Wells Fargo Bank",
    "011000015": "Federal Reserve Bank of Boston",
}
DEFAULT_BANK_NAME = "Sandbox Community Bank"


def routing_number_valid(routing: str) -> bool:
    """ABA routing numbers: 9 digits with a 3-7-1 weighted checksum."""
    if len(routing) != 9 or not routing.isdigit():
        return False
    d = [int(c) for c in routing]
    return (3 * (d[0] + d[3] + d[6]) + 7 * (d[1] + d[4] + d[7]) + (d[2] + d[5] + d[8])) % 10 == 0


def luhn_valid(number: str) -> bool:
    if not number.isdigit() or not 12 <= len(number) <= 19:
        return False
    total = 0
    for i, ch in enumerate(reversed(number)):
        digit = int(ch)
        if i % 2 == 1:
            digit *= 2
            if digit > 9:
                digit -= 9
        total += digit
    return total % 10 == 0


@transaction.atomic
def sandbox_account_authorize(
    *,
    reference: str,
    holder_name: str,
    method: str,
    routing_number: str,
    account_number: str,
    redirect_uri: str,
) -> SandboxAuthorizationCode:
    """The partner authorized a bank account: keep last 4 digits only, hand back a one-time code."""
    account = SandboxAccount.objects.create(
        reference=reference,
        holder_name=holder_name,
        method=method,
        bank_name=BANKS_BY_ROUTING.get(routing_number, DEFAULT_BANK_NAME),
        routing_number=routing_number,
        account_last4=account_number[-4:],
        behavior=FAILING_ACCOUNTS.get(account_number, SandboxAccount.Behavior.SUCCEED),
    )
    return SandboxAuthorizationCode.objects.create(account=account, redirect_uri=redirect_uri)


@transaction.atomic
def sandbox_card_save(
    *, customer_reference: str, holder_name: str, number: str, exp_month: int, exp_year: int
) -> SandboxCardSetup:
    """The partner typed a test card on the card page: keep brand, last 4 and expiry only."""
    test_card = TEST_CARDS[number]
    card = SandboxCard.objects.create(
        customer_reference=customer_reference,
        holder_name=holder_name,
        brand=test_card.brand,
        last4=number[-4:],
        exp_month=exp_month,
        exp_year=exp_year,
        behavior=test_card.behavior,
    )
    return SandboxCardSetup.objects.create(card=card)
