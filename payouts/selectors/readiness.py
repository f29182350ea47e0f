"""The portal dashboard's readiness: everything that stands between a partner and selling, or being paid."""

from __future__ import annotations

from dataclasses import dataclass

from django.conf import settings
from django.urls import reverse

from partners.models import Partner

from ..models import Charge, CreditCard, PayoutAccount
from . import payout_totals


@dataclass(frozen=True)
class ReadinessItem:
    """One thing the partner has to do (or know), shown on the dashboard as a callout with a link."""

    code: str  # suspended | payout_method | credit_card | charge_declined | refund_failed | payout_failed
    level: str  # err | warn: the callout's style
    title: str
    detail: str
    link_label: str
    link_url: str


@dataclass(frozen=True)
class Readiness:
    items: list[ReadinessItem]
    suspended: bool

    @property
    def ready(self) -> bool:
        """Only when nothing at all needs doing: never next to a callout that says otherwise."""
        return not self.items

    @property
    def codes(self) -> list[str]:
        return [item.code for item in self.items]


def readiness_for_dashboard(*, partner: Partner) -> Readiness:
    """Everything that stands between the partner and selling (or being paid), most blocking first.

    Suspended account, a payment method missing, the latest card charge declined (until the card is
    replaced), failed refunds and failed payouts (until staff retry them). ``ready`` only when none holds.
    """
    support = settings.DEFAULT_FROM_EMAIL
    payment_methods = reverse("portal:payment-methods")
    items: list[ReadinessItem] = []
    suspended = partner.status == Partner.Status.SUSPENDED
    if suspended:
        items.append(
            ReadinessItem(
                "suspended",
                "err",
                "Your account is suspended.",
                "The API refuses your tokens (403 ACCOUNT_SUSPENDED): no quotes or orders until our team "
                f"lifts the suspension. Contact support at {support}.",
                "Contact support",
                f"mailto:{_address(support)}",
            )
        )
    card = CreditCard.objects.filter(partner_id=partner.pk).only("updated_at").first()
    if not PayoutAccount.objects.filter(partner_id=partner.pk).exists():
        items.append(
            ReadinessItem(
                "payout_method",
                "warn",
                "Connect a payout account.",
                "Payouts go to your bank account (ACH recommended, or wire). Until it and a card are on file, "
                "POST /v1/quotes and POST /v1/orders answer 403 PAYOUT_METHOD_NOT_CONFIGURED.",
                "Connect payout account",
                payment_methods,
            )
        )
    if card is None:
        items.append(
            ReadinessItem(
                "credit_card",
                "warn",
                "Add a credit card.",
                "The card is charged when an order is confirmed. Until it and a payout account are on file, "
                "POST /v1/quotes and POST /v1/orders answer 403 PAYOUT_METHOD_NOT_CONFIGURED.",
                "Add card",
                f"{payment_methods}#credit-card",
            )
        )
    latest = (
        Charge.objects.filter(partner_id=partner.pk)
        .order_by("-created_at", "-pk")
        .only("status", "updated_at", "failure_reason", "order_id")
        .first()
    )
    # A card replaced after the decline is the fix: the next order is charged on the new card.
    if (
        latest is not None
        and latest.status == Charge.Status.FAILED
        and (card is None or card.updated_at < latest.updated_at)
    ):
        items.append(
            ReadinessItem(
                "charge_declined",
                "err",
                "Your card was declined.",
                f"The last card charge failed ({latest.failure_reason or 'no reason given'}) and its order "
                "was canceled. Every order you confirm fails the same way until you update the card.",
                "Update card",
                f"{payment_methods}#credit-card",
            )
        )
    failed_refunds = Charge.objects.filter(
        partner_id=partner.pk, refund_status=Charge.RefundStatus.FAILED
    ).count()
    if failed_refunds:
        items.append(
            ReadinessItem(
                "refund_failed",
                "err",
                f"{failed_refunds} refund{'s' if failed_refunds != 1 else ''} to your card failed.",
                "The money stays owed to you: our team looks into every failed refund and tries it again. "
                f"If the card was closed or replaced, contact support at {support} with the order id.",
                "See the canceled orders",
                f"{reverse('portal:orders')}?status=canceled",
            )
        )
    failed_payouts = payout_totals(partner_pk=partner.pk).failed
    if failed_payouts:
        items.append(
            ReadinessItem(
                "payout_failed",
                "err",
                f"{failed_payouts} payout{'s' if failed_payouts != 1 else ''} failed.",
                "Check your payout account under Settings · Payment Methods; our team sends the payout again "
                f"once it is fixed. Questions: {support}.",
                "See failed payouts",
                f"{reverse('portal:payouts')}?status=failed",
            )
        )
    return Readiness(items=items, suspended=suspended)


def _address(from_email: str) -> str:
    """``Name <addr>`` → ``addr`` for a mailto link."""
    return from_email.rsplit("<", 1)[-1].rstrip(">").strip()
