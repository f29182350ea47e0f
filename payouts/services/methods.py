"""Writes on payment methods: the partner's payout account and credit card, connected through the platform's
own pages (Settings → Payment Methods), and the sandbox's test methods for demo partners."""

from __future__ import annotations

import hashlib
import logging
from typing import NamedTuple

from django.db import transaction

from partners.models import Partner

from ..errors import PlatformError, ReplaceNeedsConfirmation
from ..models import CreditCard, Payout, PayoutAccount
from ..platform import get_platform
from ..selectors import partner_has_active_orders
from .progression import payout_retry

logger = logging.getLogger(__name__)


class PaymentMethods(NamedTuple):
    account: PayoutAccount
    card: CreditCard


class PayoutAccountConnected(NamedTuple):
    account: PayoutAccount
    payouts_retried: int  # the partner's failed payouts made again to it


@transaction.atomic
def payment_methods_create_sandbox(
    *, partner: Partner, card_number: str = "4242424242424242", account_number: str = "000123456789"
) -> PaymentMethods:
    """A sandbox payout account and card for demo and test partners (``create_partner --with-payment-methods``).

    They are real records of the sandbox platform (a test card and bank account), so charges and payouts
    against them behave as the sandbox's test numbers say; pass another test ``card_number`` (for example
    ``4000000000000002``) for a partner whose charges are declined.
    """
    platform = get_platform("sandbox")
    created = platform.create_test_methods(
        reference=partner.public_id,
        holder_name=partner.name[:120],
        card_number=card_number,
        account_number=account_number,
    )
    account, _ = PayoutAccount.objects.update_or_create(
        partner=partner,
        defaults={
            "platform": platform.name,
            "platform_account_id": created.account.account_id,
            "method": created.account.method,
            "bank_name": created.account.bank_name,
            "last4": created.account.last4,
        },
    )
    card, _ = CreditCard.objects.update_or_create(
        partner=partner,
        defaults={
            "platform": platform.name,
            "platform_card_token": created.card.card_token,
            "brand": created.card.brand,
            "last4": created.card.last4,
            "exp_month": created.card.exp_month,
            "exp_year": created.card.exp_year,
        },
    )
    return PaymentMethods(account=account, card=card)


def replace_needs_confirmation(*, partner: Partner, kind: str) -> bool:
    """docs/partners/portal.md "Portal, payments and payouts": replacing an existing method while orders are active needs an explicit confirmation."""
    model = PayoutAccount if kind == "payout" else CreditCard
    return model.objects.filter(partner=partner).exists() and partner_has_active_orders(partner_pk=partner.pk)


def _check_replace(*, partner: Partner, kind: str, confirm_replace: bool) -> None:
    if not confirm_replace and replace_needs_confirmation(partner=partner, kind=kind):
        raise ReplaceNeedsConfirmation()


def payout_account_authorize_url(
    *, partner: Partner, state: str, return_url: str, email: str = "", confirm_replace: bool = False
) -> str:
    """Where to send the partner to connect a payout account at the platform (Settings → Payment Methods)."""
    _check_replace(partner=partner, kind="payout", confirm_replace=confirm_replace)
    return get_platform().authorize_url(
        state=state, return_url=return_url, account_reference=partner.public_id, email=email
    )


def payout_account_connect(
    *, partner: Partner, code: str, confirm_replace: bool = False
) -> PayoutAccountConnected:
    """Finish the authorize redirect: exchange the code, then store the account id, method, bank, last 4.

    Nothing is stored unless the platform confirmed the account: a platform error leaves the previous
    method (or none) in place, never a half-saved one. The partner's failed payouts are made again to it,
    each once, in the same transaction.
    """
    _check_replace(partner=partner, kind="payout", confirm_replace=confirm_replace)
    platform = get_platform()
    code_digest = hashlib.sha256(code.encode()).hexdigest()[:24]  # the code itself is a secret: not logged
    connected = platform.complete_authorization(
        code=code, idempotency_key=f"{partner.public_id}:authorize:{code_digest}"
    )
    if connected.method not in PayoutAccount.Method.values:
        raise PlatformError(f"The platform named an unknown payout method {connected.method!r}.")
    with transaction.atomic():
        # Race: two callbacks finishing at once — the partner row's lock makes the second overwrite, not collide.
        Partner.objects.select_for_update().filter(pk=partner.pk).first()
        account, created = PayoutAccount.objects.update_or_create(
            partner=partner,
            defaults={
                "platform": platform.name,
                "platform_account_id": connected.account_id,
                "method": connected.method,
                "bank_name": connected.bank_name[:120],
                "last4": connected.last4[-4:],
            },
        )
        # With the account that works again, the payouts that failed are made again, each once.
        retried = payouts_retry_for_partner(partner_pk=partner.pk, actor=f"partner:{partner.public_id}")
    logger.info(
        "payout account %s",
        "connected" if created else "replaced",
        extra={"partner_id": partner.public_id, "payouts_retried": retried},
    )
    return PayoutAccountConnected(account=account, payouts_retried=retried)


def credit_card_setup_url(
    *, partner: Partner, state: str, return_url: str, email: str = "", confirm_replace: bool = False
) -> str:
    """Where to send the partner to type a card on the platform's own card page."""
    _check_replace(partner=partner, kind="card", confirm_replace=confirm_replace)
    existing = (
        CreditCard.objects.filter(partner=partner).values_list("platform_card_token", flat=True).first()
    )
    return get_platform().card_setup_url(
        state=state,
        return_url=return_url,
        customer_reference=partner.public_id,
        email=email,
        existing_card_token=existing or "",
        idempotency_key=f"{partner.public_id}:card-setup:{state[:16]}",
    )


def credit_card_save(*, partner: Partner, setup_id: str, confirm_replace: bool = False) -> CreditCard:
    """Finish the card page: store the platform's card token, brand, last 4 and expiry only."""
    _check_replace(partner=partner, kind="card", confirm_replace=confirm_replace)
    platform = get_platform()
    saved = platform.complete_card_setup(setup_id=setup_id, customer_reference=partner.public_id)
    with transaction.atomic():
        # Race: two card-page returns at once — the partner row's lock makes the second overwrite, not collide.
        Partner.objects.select_for_update().filter(pk=partner.pk).first()
        card, created = CreditCard.objects.update_or_create(
            partner=partner,
            defaults={
                "platform": platform.name,
                "platform_card_token": saved.card_token,
                "brand": saved.brand[:32],
                "last4": saved.last4[-4:],
                "exp_month": saved.exp_month,
                "exp_year": saved.exp_year,
            },
        )
    logger.info("credit card %s", "added" if created else "replaced", extra={"partner_id": partner.public_id})
    return card


def payouts_retry_for_partner(*, partner_pk: int, actor: str) -> int:
    """The partner connected a payout account: each of its failed payouts is made again, once, as a new attempt
    to that account (``progression.payout_retry``). Returns how many were retried."""
    failed = Payout.objects.filter(partner_id=partner_pk, status=Payout.Status.FAILED).order_by("pk")
    return sum(
        payout_retry(payout=payout, actor=actor, reason="Retried: the partner connected a payout account")
        for payout in failed
    )
