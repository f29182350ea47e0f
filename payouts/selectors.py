from dataclasses import dataclass, field

from partners.models import Partner


@dataclass(frozen=True)
class PaymentReadiness:
    """What a partner still has to set up before quotes and orders are accepted (spec 1, 7.4)."""

    missing: list[str] = field(default_factory=list)

    @property
    def ready(self) -> bool:
        return not self.missing


def payment_readiness(*, partner_pk: int) -> PaymentReadiness:
    """One query: does the partner have a payout method and a credit card on file?"""
    row = Partner.objects.filter(pk=partner_pk).values_list("payout_account__id", "credit_card__id").first()
    if row is None:
        return PaymentReadiness(missing=["payout_method", "credit_card"])
    payout_id, card_id = row
    missing = []
    if payout_id is None:
        missing.append("payout_method")
    if card_id is None:
        missing.append("credit_card")
    return PaymentReadiness(missing=missing)
