"""Writes on payment methods, charges and payouts (refunds: ``refunds.py``). Every platform call goes through
``get_platform()``."""

from __future__ import annotations

import hashlib
import logging
from dataclasses import dataclass

from django.db import transaction
from django.db.models import F
from django.utils import timezone

from config.publish import publish_after_commit
from partners.models import Partner

from .. import platform as pf
from ..errors import PlatformError, PlatformUnavailable, ReplaceNeedsConfirmation
from ..models import Charge, CreditCard, Payout, PayoutAccount
from ..platform import get_platform
from ..selectors import partner_has_active_orders
from .alerts import (  # noqa: F401
    CHARGE_DECLINED,
    PAYOUT_FAILED,
    REFUND_FAILED,
    payment_alert_enqueue,
    payment_alert_send,
)

# Refunds live in their own module; callers use them as ``payouts.services.<name>`` like everything else here.
from .refunds import (  # noqa: F401
    RefundSweepSummary,
    refund_enqueue,
    refund_for_order,
    refund_request,
    refund_retry,
    refunds_sweep,
)

logger = logging.getLogger(__name__)

PAYOUTS_ACTOR = "system:payouts"
CURRENCY = "USD"
# How many payouts one progression run starts and refreshes; the next beat takes the rest.
PROGRESS_BATCH = 200


# --- payment methods ------------------------------------------------------------------------------------
@transaction.atomic
def payment_methods_create_sandbox(
    *, partner: Partner, card_number: str = "4242424242424242", account_number: str = "000123456789"
) -> tuple[PayoutAccount, CreditCard]:
    """A sandbox payout account and card for demo and test partners (``create_partner --with-payment-methods``).

    They are real records of the sandbox platform (a test card and bank account), so charges and payouts
    against them behave as the sandbox's test numbers say; pass another test ``card_number`` (for example
    ``4000000000000002``) for a partner whose charges are declined.
    """
    from ..platform.sandbox import TEST_CARDS, sandbox_account_authorize, sandbox_card_save

    grant = sandbox_account_authorize(
        reference=partner.public_id,
        holder_name=partner.name[:120],
        method=PayoutAccount.Method.ACH,
        routing_number="110000000",
        account_number=account_number,
        redirect_uri="",
    )
    setup = sandbox_card_save(
        customer_reference=partner.public_id,
        holder_name=partner.name[:120],
        number=card_number,
        exp_month=12,
        exp_year=timezone.now().year + 4,
    )
    account, _ = PayoutAccount.objects.update_or_create(
        partner=partner,
        defaults={
            "platform": "sandbox",
            "platform_account_id": grant.account.account_id,
            "method": PayoutAccount.Method.ACH,
            "bank_name": grant.account.bank_name,
            "last4": grant.account.account_last4,
        },
    )
    card, _ = CreditCard.objects.update_or_create(
        partner=partner,
        defaults={
            "platform": "sandbox",
            "platform_card_token": setup.card.token,
            "brand": TEST_CARDS[card_number].brand,
            "last4": setup.card.last4,
            "exp_month": setup.card.exp_month,
            "exp_year": setup.card.exp_year,
        },
    )
    return account, card


def replace_needs_confirmation(*, partner: Partner, kind: str) -> bool:
    """Spec 5: replacing an existing method while orders are active needs an explicit confirmation."""
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


def payout_account_connect(*, partner: Partner, code: str, confirm_replace: bool = False) -> PayoutAccount:
    """Finish the authorize redirect: exchange the code, then store the account id, method, bank, last 4.

    Nothing is stored unless the platform confirmed the account: a platform error leaves the previous
    method (or none) in place, never a half-saved one.
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
    logger.info(
        "payout account %s", "connected" if created else "replaced", extra={"partner_id": partner.public_id}
    )
    return account


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
    saved = platform.complete_card_setup(setup_id=setup_id)
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


# --- charges ---------------------------------------------------------------------------------------------
def charge_for_order(*, order) -> Charge:
    """Charge the partner's card on file for ``order.total_price`` (DECISIONS: order life cycle, confirm).

    Idempotent per order: the Charge row is unique per order and the platform call uses the order id as its
    idempotency key, so a repeat returns the existing charge and never charges twice. A declined card gives
    a Charge with ``status == "failed"`` and a human ``failure_reason``. A transient platform failure
    raises ``PlatformUnavailable`` (the caller retries; the charge stays ``pending``).
    """
    charge = Charge.objects.filter(order_id=order.pk).first()
    if charge is None:
        # The unique order column decides between two concurrent first calls: both get the same row.
        charge, _ = Charge.objects.get_or_create(
            order_id=order.pk,
            defaults={
                "partner_id": order.partner_id,
                "amount": order.total_price,
                "currency": CURRENCY,
                "platform": get_platform().name,
                "idempotency_key": order.order_id,
            },
        )
    if charge.is_final:
        return charge
    unavailable: PlatformUnavailable | None = None
    with transaction.atomic():
        # Race: two confirmation runs for one order — the charge row's lock lets one call the platform at a
        # time; the other then sees the final status (and the platform's idempotency key backs it up).
        charge = Charge.objects.select_for_update().get(pk=charge.pk)
        if charge.is_final:
            return charge
        card = CreditCard.objects.filter(partner_id=charge.partner_id).first()
        if card is None:
            charge.status = Charge.Status.FAILED
            charge.failure_reason = "No credit card on file."
            charge.save(update_fields=["status", "failure_reason", "updated_at"])
            payment_alert_enqueue(kind=CHARGE_DECLINED, pk=charge.pk)  # published once this commits
            return charge
        charge.attempts += 1
        charge.card_brand, charge.card_last4 = card.brand, card.last4
        try:
            result = get_platform().charge_card(
                card_token=card.platform_card_token,
                amount=charge.amount,
                currency=charge.currency,
                idempotency_key=charge.idempotency_key,
                description=f"Ticket buy-back order {order.order_id}",
            )
        except PlatformUnavailable as exc:
            charge.last_error = exc.message[:255]
            unavailable = exc
        except PlatformError as exc:
            charge.status = Charge.Status.FAILED
            charge.failure_reason = exc.message[:255]
        else:
            charge.platform_charge_id = result.charge_id
            if result.status == pf.CHARGE_SUCCEEDED:
                charge.status = Charge.Status.SUCCEEDED
            else:
                charge.status = Charge.Status.FAILED
                charge.failure_reason = (result.failure_reason or "The card was declined.")[:255]
        charge.save()
        if charge.status == Charge.Status.FAILED:
            payment_alert_enqueue(kind=CHARGE_DECLINED, pk=charge.pk)  # published once this commits
    if unavailable is not None:
        raise unavailable
    logger.info(
        "order charged" if charge.status == Charge.Status.SUCCEEDED else "order charge failed",
        extra={"order_id": order.order_id, "charge_status": charge.status},
    )
    return charge


# --- payouts ---------------------------------------------------------------------------------------------------
@dataclass
class ProgressSummary:
    created: int = 0
    started: int = 0
    refreshed: int = 0
    moved: int = 0
    failed: int = 0


# The order's part of the life cycle that payouts drive, in order (DECISIONS: order life cycle).
_ORDER_PATH = ["ticket_received", "payout_in_process", "scheduled", "paid"]
_ORDER_TARGET = {
    Payout.Status.IN_PROCESS: "payout_in_process",
    Payout.Status.SCHEDULED: "scheduled",
    Payout.Status.PAID: "paid",
}
_PAYOUT_STATUS = {
    pf.PAYOUT_IN_PROCESS: Payout.Status.IN_PROCESS,
    pf.PAYOUT_SCHEDULED: Payout.Status.SCHEDULED,
    pf.PAYOUT_PAID: Payout.Status.PAID,
    pf.PAYOUT_FAILED: Payout.Status.FAILED,
}


def payouts_progress() -> ProgressSummary:
    """One beat of payout progression: ``ticket_received`` orders get a payout, payouts follow the platform.

    Safe when two runs overlap: the payout row is unique per order (insert ignores conflicts) and each
    payout is worked on under a row lock that the other run skips.
    """
    summary = ProgressSummary(created=payouts_create_missing())
    pending = Payout.objects.filter(status=Payout.Status.PENDING).order_by("created_at", "pk")
    for pk in pending.values_list("pk", flat=True)[:PROGRESS_BATCH]:
        summary.started += _count(_isolated(payout_start, pk), summary)
    in_flight = Payout.objects.filter(
        status__in=[Payout.Status.IN_PROCESS, Payout.Status.SCHEDULED]
    ).order_by(F("last_checked_at").asc(nulls_first=True), "pk")
    for pk in in_flight.values_list("pk", flat=True)[:PROGRESS_BATCH]:
        summary.refreshed += _count(_isolated(payout_refresh, pk), summary)
    return summary


def _isolated(step, payout_pk: int) -> tuple[bool, int, bool] | None:
    """One payout's trouble (a bug, an order moved by hand meanwhile) must not stop the others."""
    try:
        return step(payout_pk=payout_pk)
    except Exception:
        logger.exception("payout progression failed for one payout", extra={"payout_pk": payout_pk})
        return None


def _count(outcome: tuple[bool, int, bool] | None, summary: ProgressSummary) -> int:
    if outcome is None:
        return 0
    _, moved, failed = outcome
    summary.moved += moved
    summary.failed += int(failed)
    return 1


def payouts_create_missing() -> int:
    """A pending payout row for every live ``ticket_received`` order that has none (a test-mode order is
    never paid out: its payout steps are simulated by the test-mode advance)."""
    from orders.models import Order

    orders = list(
        Order.objects.live()
        .filter(status="ticket_received", payout__isnull=True)
        .values_list("pk", "partner_id", "total_price")[:PROGRESS_BATCH]
    )
    if not orders:
        return 0
    # Race: two overlapping runs inserting for one order — the unique order column turns the second insert
    # into a no-op (ON CONFLICT DO NOTHING), never a second payout.
    created = Payout.objects.bulk_create(
        [
            Payout(order_id=pk, partner_id=partner_id, amount=total, currency=CURRENCY)
            for pk, partner_id, total in orders
        ],
        ignore_conflicts=True,
    )
    return len(created)


def payout_start(*, payout_pk: int) -> tuple[bool, int, bool] | None:
    """Create a pending payout at the platform and move the order on. ``None`` if another run has it."""
    with transaction.atomic():
        # Race: two overlapping progression runs — the lock gives each pending payout to one run, the other
        # skips it; the attempt's idempotency key stops a second platform payout even after a crash.
        payout = (
            Payout.objects.select_for_update(skip_locked=True, of=("self",))
            .select_related("order")
            .filter(pk=payout_pk, status=Payout.Status.PENDING)
            .first()
        )
        if payout is None:
            return None
        account = PayoutAccount.objects.filter(partner_id=payout.partner_id).first()
        if account is None:
            return _fail(payout, "No payout account on file: the partner must connect one in the portal.")
        platform = get_platform()
        payout.platform = platform.name
        payout.platform_account_id = account.platform_account_id
        payout.account_description = f"{account.bank_name} ••••{account.last4} ({account.method.upper()})"
        try:
            state = platform.create_payout(
                account_id=account.platform_account_id,
                amount=payout.amount,
                currency=payout.currency,
                idempotency_key=payout.idempotency_key,
                description=f"Ticket buy-back order {payout.order.order_id}",
            )
        except PlatformUnavailable as exc:
            payout.last_error = exc.message[:255]
            payout.save(update_fields=["last_error", "updated_at"])
            return (False, 0, False)
        except PlatformError as exc:
            return _fail(payout, exc.message)
        payout.platform_payout_id = state.payout_id
        return _apply(payout, state)


def payout_refresh(*, payout_pk: int) -> tuple[bool, int, bool] | None:
    """Ask the platform how an in-flight payout is doing and move the order on."""
    with transaction.atomic():
        # Race: two overlapping progression runs — one refreshes a payout, the other skips it.
        payout = (
            Payout.objects.select_for_update(skip_locked=True, of=("self",))
            .select_related("order")
            .filter(pk=payout_pk, status__in=[Payout.Status.IN_PROCESS, Payout.Status.SCHEDULED])
            .first()
        )
        if payout is None:
            return None
        try:
            state = get_platform().get_payout(
                account_id=payout.platform_account_id, payout_id=payout.platform_payout_id
            )
        except PaymentErrorGroup as exc:
            payout.last_error = exc.message[:255]
            payout.last_checked_at = timezone.now()
            payout.save(update_fields=["last_error", "last_checked_at", "updated_at"])
            return (False, 0, False)
        return _apply(payout, state)


PaymentErrorGroup = (PlatformUnavailable, PlatformError)


def _fail(payout: Payout, reason: str) -> tuple[bool, int, bool]:
    payout.status = Payout.Status.FAILED
    payout.failure_reason = reason[:255]
    payout.last_checked_at = timezone.now()
    payout.save()
    # Every caller holds the payout's lock in a transaction: the alert is published once the failure commits.
    payment_alert_enqueue(kind=PAYOUT_FAILED, pk=payout.pk)
    logger.warning("payout failed", extra={"order_id": payout.order.order_id, "reason": reason})
    return (True, 0, True)


def _apply(payout: Payout, state: pf.PayoutState) -> tuple[bool, int, bool]:
    """Record the platform's state on the payout and walk the order forward to match it."""
    from orders.services import order_transition

    new_status = _PAYOUT_STATUS[state.status]
    changed = new_status != payout.status
    payout.status = new_status
    payout.scheduled_for = state.scheduled_for or payout.scheduled_for
    payout.paid_at = state.paid_at or payout.paid_at
    payout.last_error = ""
    payout.last_checked_at = timezone.now()
    if new_status == Payout.Status.FAILED:
        return _fail(payout, state.failure_reason or "The platform reported the payout as failed.")
    payout.save()
    order = payout.order
    target = _ORDER_TARGET[new_status]
    if order.status not in _ORDER_PATH:
        logger.error(
            "payout progressed for an order outside the payout path",
            extra={"order_id": order.order_id, "order_status": order.status},
        )
        return (changed, 0, False)
    moved = 0
    for step in _ORDER_PATH[_ORDER_PATH.index(order.status) + 1 : _ORDER_PATH.index(target) + 1]:
        order = order_transition(order=order, to=step, actor=PAYOUTS_ACTOR, reason=_reason(step, payout))
        moved += 1
    return (changed, moved, False)


def _reason(step: str, payout: Payout) -> str:
    if step == "payout_in_process":
        return f"Payout {payout.platform_payout_id} of {payout.amount} {payout.currency} created"
    if step == "scheduled":
        when = payout.scheduled_for.strftime("%Y-%m-%d %H:%M UTC") if payout.scheduled_for else "a later date"
        return f"Payout scheduled for {when}"
    return "Payout disbursed"


def payout_retry(*, payout: Payout, actor: str) -> bool:
    """Staff: try a failed payout again, as a new attempt (new idempotency key) to the current account."""
    # Race: a double click or two staff members — only the UPDATE that still finds it failed retries it.
    updated = Payout.objects.filter(pk=payout.pk, status=Payout.Status.FAILED).update(
        status=Payout.Status.PENDING,
        attempt=F("attempt") + 1,
        platform_payout_id="",
        failure_reason="",
        last_error="",
        scheduled_for=None,
        paid_at=None,
        failure_alerted_at=None,  # the next failure is a new event with its own alert
        updated_at=timezone.now(),
    )
    if updated:
        logger.info("payout retry requested", extra={"payout_pk": payout.pk, "actor": actor})
        from ..tasks import progress_payouts

        publish_after_commit(progress_payouts)  # lost with the broker: the next beat runs it anyway
    return bool(updated)


# The reactions to order events; imported last, they call the charges above.
from .confirmation import (  # noqa: E402, F401
    on_order_created,
    on_order_status_changed,
    order_confirm,
    orders_requeue_unconfirmed,
)
