"""The charge of the partner's card for an order (docs/partners/portal.md "Charges and payouts")."""

from __future__ import annotations

import logging

from config.core import rawsql
from config.core.statemachine import StateMachine

from .. import platform as pf
from ..errors import PaymentError, PlatformError, PlatformUnavailable
from ..models import Charge, ChargeStatusHistory, CreditCard
from ..platform import get_platform
from .alerts import CHARGE_DECLINED, payment_alert_enqueue

logger = logging.getLogger(__name__)

CURRENCY = "USD"
ACTOR = "system:charge"

# The legal moves of ``Charge.status``; ``charge_transition`` is its one writer. A charge is final once the
# platform has answered.
CHARGE_TRANSITIONS = {
    Charge.Status.PENDING: frozenset({Charge.Status.SUCCEEDED, Charge.Status.FAILED}),
    Charge.Status.SUCCEEDED: frozenset(),
    Charge.Status.FAILED: frozenset(),
}
CHARGE_MACHINE = StateMachine(
    name="charge", field="status", moves=CHARGE_TRANSITIONS, history=ChargeStatusHistory, history_fk="charge"
)


def charge_transition(*, charge: Charge, to: str, actor: str, reason: str = "", changes=None) -> Charge:
    """Move ``charge`` to ``to`` under its row lock with a history row; return the locked row. Raises
    ``IllegalStateMove`` (and writes nothing) for a move ``CHARGE_TRANSITIONS`` does not have."""
    locked, _ = CHARGE_MACHINE.move(obj=charge, to=to, actor=actor, reason=reason, changes=changes)
    return locked


def orders_charge(*, orders: list) -> dict[int, Charge | PaymentError]:
    """Charge the partner's card on file for each order's ``total_price`` (docs/partners/orders.md "Life cycle"),
    in a fixed number of statements (one order is a list of one): each order's charge, or the
    ``PlatformUnavailable`` (the charge stays ``pending``, the caller retries) or ``PlatformError`` its platform
    call met, by order pk.

    The caller holds the orders' row locks, so no other confirmation of these orders runs meanwhile: their
    charges are read, made and moved without locks of their own. Idempotent per order: the Charge row is unique
    per order, a final charge is returned as it is, and each platform call carries the order id as its
    idempotency key, so a repeat never charges twice. A declined card or a card missing fails that charge alone
    (``status == "failed"`` with a human ``failure_reason``, and its staff alert).
    """
    if not orders:
        return {}
    charges = {
        charge.order_id: charge for charge in Charge.objects.filter(order_id__in=[o.pk for o in orders])
    }
    missing = [order for order in orders if order.pk not in charges]
    if missing:
        platform_name = get_platform().name
        # The unique order column backs the row locks: a second charge of an order fails the batch's statement.
        for charge in rawsql.insert_many(
            [
                Charge(
                    order_id=order.pk,
                    partner_id=order.partner_id,
                    amount=order.total_price,
                    currency=CURRENCY,
                    platform=platform_name,
                    idempotency_key=order.order_id,
                )
                for order in missing
            ]
        ):
            charges[charge.order_id] = charge
    results: dict[int, Charge | PaymentError] = {
        pk: charge for pk, charge in charges.items() if charge.is_final
    }
    pending = [(order, charges[order.pk]) for order in orders if order.pk not in results]
    if not pending:
        return results
    cards = {
        card.partner_id: card
        for card in CreditCard.objects.filter(partner_id__in={charge.partner_id for _, charge in pending})
    }
    calls = [(order, charge) for order, charge in pending if charge.partner_id in cards]
    answers = get_platform().charge_cards(
        [
            pf.ChargeRequest(
                card_token=cards[charge.partner_id].platform_card_token,
                amount=charge.amount,
                currency=charge.currency,
                idempotency_key=charge.idempotency_key,
                description=f"Ticket buy-back order {order.order_id}",
            )
            for order, charge in calls
        ]
    )
    succeeded: list[Charge] = []
    failed: list[tuple[Charge, str]] = [
        (charge, "No credit card on file.") for _, charge in pending if charge.partner_id not in cards
    ]
    for (order, charge), answer in zip(calls, answers, strict=True):
        card = cards[charge.partner_id]
        charge.attempts += 1
        charge.card_brand, charge.card_last4 = card.brand, card.last4
        if isinstance(answer, PlatformUnavailable):
            charge.last_error = answer.message[:255]
            results[order.pk] = answer
        elif isinstance(answer, PlatformError):
            failed.append((charge, answer.message))
        else:
            charge.platform_charge_id = answer.charge_id
            if answer.status == pf.CHARGE_SUCCEEDED:
                succeeded.append(charge)
            else:
                failed.append((charge, answer.failure_reason or "The card was declined."))
    # The attempts, saved before the status moves.
    rawsql.update_many(
        [charge for _, charge in calls],
        ["attempts", "card_brand", "card_last4", "platform_charge_id", "last_error"],
    )
    for charge, _ in CHARGE_MACHINE.move_many(
        objs=succeeded, to=Charge.Status.SUCCEEDED, actor=ACTOR, locked=True
    ):
        results[charge.order_id] = charge
    for charge, reason in failed:
        results[charge.order_id] = _charge_failed(charge, reason=reason)
    for order, _charge in pending:
        result = results.get(order.pk)
        if isinstance(result, Charge):
            logger.info(
                "order charged" if result.status == Charge.Status.SUCCEEDED else "order charge failed",
                extra={"order_id": order.order_id, "charge_status": result.status},
            )
    return results


def _charge_failed(charge: Charge, *, reason: str) -> Charge:
    """The charge failed for good (``reason`` as the platform or the card on file said it), and the staff
    alert is published once this commits."""
    reason = reason[:255]
    charge = charge_transition(
        charge=charge, to=Charge.Status.FAILED, actor=ACTOR, reason=reason, changes={"failure_reason": reason}
    )
    payment_alert_enqueue(kind=CHARGE_DECLINED, pk=charge.pk)  # published once this commits
    return charge
