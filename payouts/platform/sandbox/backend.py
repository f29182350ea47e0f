"""The sandbox backend: the payment platform backend ``PAYMENT_PLATFORM=sandbox`` selects (``SandboxPlatform``,
implementing ``PaymentPlatform``).

It talks to the payment sandbox, the simulated payment platform inside the service (the ``payouts.sandbox``
app: its records, its test numbers and its pages under ``/sandbox/``), reading and writing its records as a real
provider's API would. (The transfer sandbox, test mode's signed transfer e-mails, is ``orders.transfers.testing.simulator``.)
"""

from __future__ import annotations

from collections.abc import Sequence
from decimal import Decimal
from urllib.parse import urlencode

from django.db import IntegrityError, transaction
from django.urls import reverse
from django.utils import timezone

from config.core import rawsql

from ...errors import AuthorizationFailed, PaymentError, PlatformError, PlatformUnavailable
from ...sandbox.models import (
    SandboxAccount,
    SandboxAuthorizationCode,
    SandboxCard,
    SandboxCardSetup,
    SandboxCharge,
    SandboxPayout,
    SandboxRefund,
)
from ...sandbox.services import (
    DECLINE_REASONS,
    PAYOUT_FAILURES,
    REFUND_FAILURES,
    TEST_CARDS,
    sandbox_account_authorize,
    sandbox_card_save,
)
from ..base import (
    CHARGE_FAILED,
    CHARGE_SUCCEEDED,
    PAYOUT_FAILED,
    PAYOUT_IN_PROCESS,
    PAYOUT_PAID,
    PAYOUT_SCHEDULED,
    REFUND_FAILED,
    REFUND_SUCCEEDED,
    ChargeRequest,
    ChargeResult,
    ConnectedAccount,
    PaymentPlatform,
    PayoutState,
    RefundResult,
    SavedCard,
    TestPaymentMethods,
)


def sandbox_payout_state(payout: SandboxPayout) -> PayoutState:
    """A sandbox payout's state follows from the clock (``timezone.now()``, so tests move time)."""
    now = timezone.now()
    if now < payout.schedule_at:
        return PayoutState(payout_id=payout.payout_id, status=PAYOUT_IN_PROCESS)
    if payout.account.behavior != SandboxAccount.Behavior.SUCCEED:
        return PayoutState(
            payout_id=payout.payout_id,
            status=PAYOUT_FAILED,
            failure_reason=PAYOUT_FAILURES[payout.account.behavior],
        )
    if now < payout.paid_at:
        return PayoutState(payout_id=payout.payout_id, status=PAYOUT_SCHEDULED, scheduled_for=payout.paid_at)
    return PayoutState(
        payout_id=payout.payout_id, status=PAYOUT_PAID, scheduled_for=payout.paid_at, paid_at=payout.paid_at
    )


# --- the client the service uses ----------------------------------------------------------------------------
class SandboxPlatform(PaymentPlatform):
    name = "sandbox"

    def test_mode_card(self, *, reference: str, declines: bool) -> str:
        behavior = SandboxCard.Behavior.DECLINE if declines else SandboxCard.Behavior.SUCCEED
        cards = SandboxCard.objects.filter(customer_reference=reference, behavior=behavior).order_by("pk")
        card = cards.first()
        if card is None:
            # Two first charges at once may make two such cards: both behave the same, the oldest is used.
            card = SandboxCard.objects.create(
                customer_reference=reference,
                behavior=behavior,
                holder_name="Test mode",
                brand="Visa",
                last4="0002" if declines else "4242",
                exp_month=12,
                exp_year=timezone.now().year + 4,
            )
        return str(card.token)

    def create_test_methods(
        self, *, reference: str, holder_name: str, card_number: str, account_number: str
    ) -> TestPaymentMethods:
        if card_number not in TEST_CARDS:
            raise PlatformError(f"{card_number[-4:]} is not one of the sandbox's test cards.")
        grant = sandbox_account_authorize(
            reference=reference,
            holder_name=holder_name,
            method="ach",
            routing_number="110000000",
            account_number=account_number,
            redirect_uri="",
        )
        setup = sandbox_card_save(
            customer_reference=reference,
            holder_name=holder_name,
            number=card_number,
            exp_month=12,
            exp_year=timezone.now().year + 4,
        )
        account, card = grant.account, setup.card
        return TestPaymentMethods(
            account=ConnectedAccount(
                account_id=account.account_id,
                method=account.method,
                bank_name=account.bank_name,
                last4=account.account_last4,
            ),
            card=SavedCard(
                card_token=card.token,
                brand=card.brand,
                last4=card.last4,
                exp_month=card.exp_month,
                exp_year=card.exp_year,
            ),
        )

    def authorize_url(self, *, state: str, return_url: str, account_reference: str, email: str = "") -> str:
        query = {"client_reference": account_reference, "state": state, "redirect_uri": return_url}
        return str(reverse("sandbox:authorize")) + "?" + urlencode(query)

    def complete_authorization(self, *, code: str, idempotency_key: str) -> ConnectedAccount:
        grant = SandboxAuthorizationCode.objects.select_related("account").filter(code=code).first()
        if grant is None or grant.expired:
            raise AuthorizationFailed(
                "The authorization code is unknown or has expired. Please connect again."
            )
        # Conditional update: two callbacks racing with one code must not both connect the account.
        if not SandboxAuthorizationCode.objects.filter(pk=grant.pk, used_at__isnull=True).update(
            used_at=timezone.now()
        ):
            raise AuthorizationFailed("This authorization was already used. Please connect again.")
        account = grant.account
        return ConnectedAccount(
            account_id=account.account_id,
            method=account.method,
            bank_name=account.bank_name,
            last4=account.account_last4,
        )

    def card_setup_url(
        self,
        *,
        state: str,
        return_url: str,
        customer_reference: str,
        email: str = "",
        existing_card_token: str = "",
        idempotency_key: str,
    ) -> str:
        query = {"customer": customer_reference, "state": state, "redirect_uri": return_url}
        return str(reverse("sandbox:card")) + "?" + urlencode(query)

    def complete_card_setup(self, *, setup_id: str, customer_reference: str) -> SavedCard:
        setup = SandboxCardSetup.objects.select_related("card").filter(setup_id=setup_id).first()
        if setup is None or setup.expired:
            raise AuthorizationFailed("The card setup is unknown or has expired. Please add the card again.")
        if setup.card.customer_reference != customer_reference:
            # Another partner's setup: never redeemed, never stored here.
            raise AuthorizationFailed(
                "This card setup belongs to another account. Please add the card again."
            )
        # Conditional update: a replayed return link must not save the card twice.
        if not SandboxCardSetup.objects.filter(pk=setup.pk, redeemed_at__isnull=True).update(
            redeemed_at=timezone.now()
        ):
            raise AuthorizationFailed("This card setup was already used. Please add the card again.")
        card = setup.card
        return SavedCard(
            card_token=card.token,
            brand=card.brand,
            last4=card.last4,
            exp_month=card.exp_month,
            exp_year=card.exp_year,
        )

    def charge_card(
        self, *, card_token: str, amount: Decimal, currency: str, idempotency_key: str, description: str
    ) -> ChargeResult:
        if amount <= 0:
            raise PlatformError("The charge amount must be positive.")
        existing = SandboxCharge.objects.filter(idempotency_key=idempotency_key).first()
        if existing is None:
            card = SandboxCard.objects.filter(token=card_token).first()
            if card is None:
                raise PlatformError("The card on file is unknown to the payment platform.")
            if card.behavior == SandboxCard.Behavior.PROCESSING_ERROR:
                raise PlatformUnavailable("The card processor did not answer (sandbox card …0119).")
            reason = DECLINE_REASONS.get(card.behavior, "")
            try:
                with transaction.atomic():
                    existing = SandboxCharge.objects.create(
                        card=card,
                        amount=amount,
                        currency=currency,
                        description=description[:255],
                        idempotency_key=idempotency_key,
                        status=SandboxCharge.Status.FAILED if reason else SandboxCharge.Status.SUCCEEDED,
                        failure_reason=reason,
                    )
            except IntegrityError:  # the same key, charged concurrently: that first charge is the answer
                existing = SandboxCharge.objects.get(idempotency_key=idempotency_key)
        if existing.amount != amount or existing.card.token != card_token:
            raise PlatformError("This idempotency key was already used with other parameters.")
        return _charge_result(existing)

    def charge_cards(self, requests: Sequence[ChargeRequest]) -> list[ChargeResult | PaymentError]:
        """The batch in four statements: the charges already made under these keys, the cards, one insert of
        the new charges (a key charged concurrently keeps its first charge) and the charges read back."""
        keys = {request.idempotency_key for request in requests}
        charges = {
            charge.idempotency_key: charge
            for charge in SandboxCharge.objects.select_related("card").filter(idempotency_key__in=keys)
        }
        tokens = {request.card_token for request in requests if request.idempotency_key not in charges}
        cards = {card.token: card for card in SandboxCard.objects.filter(token__in=tokens)} if tokens else {}
        errors: dict[str, PaymentError] = {}
        new: dict[str, SandboxCharge] = {}
        for request in requests:
            key = request.idempotency_key
            if key in charges or key in new or key in errors:
                continue
            card = cards.get(request.card_token)
            if request.amount <= 0:
                errors[key] = PlatformError("The charge amount must be positive.")
            elif card is None:
                errors[key] = PlatformError("The card on file is unknown to the payment platform.")
            elif card.behavior == SandboxCard.Behavior.PROCESSING_ERROR:
                errors[key] = PlatformUnavailable("The card processor did not answer (sandbox card …0119).")
            else:
                reason = DECLINE_REASONS.get(card.behavior, "")
                new[key] = SandboxCharge(
                    card=card,
                    amount=request.amount,
                    currency=request.currency,
                    description=request.description[:255],
                    idempotency_key=key,
                    status=SandboxCharge.Status.FAILED if reason else SandboxCharge.Status.SUCCEEDED,
                    failure_reason=reason,
                )
        if new:
            # The unique key decides between concurrent charges under one key: the first one stays, the
            # others insert nothing, and everyone reads back the same charge.
            rawsql.insert_many(list(new.values()), ignore_conflicts=True)
            charges.update(
                (charge.idempotency_key, charge)
                for charge in SandboxCharge.objects.select_related("card").filter(idempotency_key__in=new)
            )
        answers: list[ChargeResult | PaymentError] = []
        for request in requests:
            key = request.idempotency_key
            charge = charges.get(key)
            if charge is None:
                answers.append(errors[key])
            elif charge.amount != request.amount or charge.card.token != request.card_token:
                answers.append(PlatformError("This idempotency key was already used with other parameters."))
            else:
                answers.append(_charge_result(charge))
        return answers

    def test_mode_cards(self, *, wanted: Sequence[tuple[str, bool]]) -> dict[tuple[str, bool], str]:
        """Every test card asked for in one read; the missing ones made as ``test_mode_card`` makes them."""
        wanted = list(dict.fromkeys(wanted))
        behaviors = {True: SandboxCard.Behavior.DECLINE, False: SandboxCard.Behavior.SUCCEED}
        tokens: dict[tuple[str, bool], str] = {}
        for reference, behavior, token in (
            SandboxCard.objects.filter(
                customer_reference__in={reference for reference, _ in wanted},
                behavior__in=[behaviors[declines] for _, declines in wanted],
            )
            .order_by("-pk")
            .values_list("customer_reference", "behavior", "token")
        ):
            # Newest first, so the oldest of two such cards is the one kept, as ``test_mode_card`` uses it.
            tokens[(reference, behavior == SandboxCard.Behavior.DECLINE)] = str(token)
        for reference, declines in wanted:
            if (reference, declines) not in tokens:
                tokens[(reference, declines)] = self.test_mode_card(reference=reference, declines=declines)
        return {pair: tokens[pair] for pair in wanted}

    def refund_charge(
        self, *, charge_id: str, amount: Decimal, currency: str, idempotency_key: str, reason: str
    ) -> RefundResult:
        if amount <= 0:
            raise PlatformError("The refund amount must be positive.")
        with transaction.atomic():
            # Race: two refunds of one charge at once (a repeat, or another key) — the charge row's lock
            # serializes them, so a key refunds once and the refunds never add up to more than the charge.
            charge = (
                SandboxCharge.objects.select_for_update(of=("self",))
                .select_related("card")
                .filter(charge_id=charge_id)
                .first()
            )
            if charge is None:
                raise PlatformError("The charge is unknown to the payment platform.")
            refund = SandboxRefund.objects.filter(idempotency_key=idempotency_key).first()
            if refund is not None:
                if refund.charge_id != charge.pk or refund.amount != amount:
                    raise PlatformError("This idempotency key was already used with other parameters.")
                return _refund_result(refund)
            if charge.card.behavior == SandboxCard.Behavior.PROCESSING_ERROR:
                raise PlatformUnavailable("The card processor did not answer (sandbox card …0119).")
            if charge.status != SandboxCharge.Status.SUCCEEDED:
                raise PlatformError("Only a succeeded charge can be refunded.")
            if currency.upper() != charge.currency.upper():
                raise PlatformError(f"The charge was made in {charge.currency}, not {currency}.")
            if amount > charge.refundable:
                raise PlatformError(
                    f"The refund of {amount} is more than what is left of the charge ({charge.refundable})."
                )
            failure = REFUND_FAILURES.get(charge.card.behavior, "")
            refund = SandboxRefund.objects.create(
                charge=charge,
                amount=amount,
                currency=charge.currency,
                reason=reason[:255],
                idempotency_key=idempotency_key,
                status=SandboxRefund.Status.FAILED if failure else SandboxRefund.Status.SUCCEEDED,
                failure_reason=failure,
            )
            if not failure:
                charge.amount_refunded += amount
                charge.refunded_at = timezone.now()
                charge.save(update_fields=["amount_refunded", "refunded_at"])
        return _refund_result(refund)

    def get_refund(self, *, refund_id: str) -> RefundResult:
        refund = SandboxRefund.objects.filter(refund_id=refund_id).first()
        if refund is None:
            raise PlatformError("The refund is unknown to the payment platform.")
        return _refund_result(refund)

    def create_payout(
        self, *, account_id: str, amount: Decimal, currency: str, idempotency_key: str, description: str
    ) -> PayoutState:
        if amount <= 0:
            raise PlatformError("The payout amount must be positive.")
        payout = (
            SandboxPayout.objects.select_related("account").filter(idempotency_key=idempotency_key).first()
        )
        if payout is None:
            account = SandboxAccount.objects.filter(account_id=account_id).first()
            if account is None:
                raise PlatformError("The payout account is unknown to the payment platform.")
            try:
                with transaction.atomic():
                    payout = SandboxPayout.objects.create(
                        account=account,
                        amount=amount,
                        currency=currency,
                        description=description[:255],
                        idempotency_key=idempotency_key,
                    )
            except IntegrityError:  # the same key, created concurrently: that first payout is the answer
                payout = SandboxPayout.objects.select_related("account").get(idempotency_key=idempotency_key)
        if payout.amount != amount or payout.account.account_id != account_id:
            raise PlatformError("This idempotency key was already used with other parameters.")
        return sandbox_payout_state(payout)

    def get_payout(self, *, account_id: str, payout_id: str) -> PayoutState:
        payout = SandboxPayout.objects.select_related("account").filter(payout_id=payout_id).first()
        if payout is None or payout.account.account_id != account_id:
            raise PlatformError("The payout is unknown to the payment platform.")
        return sandbox_payout_state(payout)


def _charge_result(charge: SandboxCharge) -> ChargeResult:
    return ChargeResult(
        charge_id=charge.charge_id,
        status=CHARGE_SUCCEEDED if charge.status == SandboxCharge.Status.SUCCEEDED else CHARGE_FAILED,
        failure_reason=charge.failure_reason,
    )


def _refund_result(refund: SandboxRefund) -> RefundResult:
    return RefundResult(
        refund_id=refund.refund_id,
        status=REFUND_SUCCEEDED if refund.status == SandboxRefund.Status.SUCCEEDED else REFUND_FAILED,
        failure_reason=refund.failure_reason,
    )
