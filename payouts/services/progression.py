"""Payout progression: a ``ticket_received`` order gets a payout, the payout follows the platform, the order
follows the payout (``ticket_received`` → ``payout_in_process`` → ``scheduled`` → ``paid``).

``payout_transition`` is the only code that changes ``Payout.status``: ``pending`` → ``in_process`` →
``scheduled`` → ``paid``, or ``failed`` from any unfinished status; staff retry a failed payout back to
``pending`` as a new attempt. Every move is recorded in ``PayoutStatusHistory``.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.db import transaction
from django.db.models import F, Q
from django.utils import timezone

from config.core.publish import publish_on_commit
from config.core.statemachine import IllegalStateMove, StateMachine
from orders.models import Order
from orders.outbox import REASON_PAYOUT_FAILED
from orders.services import order_transition

from .. import platform as pf
from ..errors import PlatformError, PlatformUnavailable
from ..models import Payout, PayoutAccount, PayoutStatusHistory
from ..platform import get_platform
from .alerts import PAYOUT_FAILED, payment_alert_enqueue, payment_alert_forget
from .charges import CURRENCY

logger = logging.getLogger(__name__)

P = Payout.Status
PAYOUTS_ACTOR = "system:payouts"
# How many payouts one progression run starts and refreshes; the next beat takes the rest.
PROGRESS_BATCH = 200
# A paid payout can still fail (the bank sends it back, usually within a few business days): the poll asks the
# platform about it again once an hour for this long after it was paid, in case the failure's event is lost.
PAID_WATCH = timedelta(days=10)
PAID_RECHECK = timedelta(hours=1)

# Every legal move of a payout's status. The platform may report a later status than the next one (a payout
# created already scheduled); it never brings a payout back. A paid payout can still fail (the platform's
# "paid" is "expected in the bank", and the bank can send it back days later): a failure is final either way.
PAYOUT_TRANSITIONS: dict[str, frozenset[str]] = {
    P.PENDING: frozenset({P.IN_PROCESS, P.SCHEDULED, P.PAID, P.FAILED}),
    P.IN_PROCESS: frozenset({P.SCHEDULED, P.PAID, P.FAILED}),
    P.SCHEDULED: frozenset({P.PAID, P.FAILED}),
    P.PAID: frozenset({P.FAILED}),
    P.FAILED: frozenset({P.PENDING}),
}
PAYOUT_MACHINE = StateMachine(
    name="payout", field="status", moves=PAYOUT_TRANSITIONS, history=PayoutStatusHistory, history_fk="payout"
)

_ORDER_TARGET = {
    P.IN_PROCESS: Order.Status.PAYOUT_IN_PROCESS,
    P.SCHEDULED: Order.Status.SCHEDULED,
    P.PAID: Order.Status.PAID,
}
_PAYOUT_STATUS = {
    pf.PAYOUT_IN_PROCESS: P.IN_PROCESS,
    pf.PAYOUT_SCHEDULED: P.SCHEDULED,
    pf.PAYOUT_PAID: P.PAID,
    pf.PAYOUT_FAILED: P.FAILED,
}


def payout_transition(
    *,
    payout: Payout,
    to: str,
    actor: str,
    reason: str = "",
    changes: Mapping[str, Any] | Callable[[Payout], Mapping[str, Any]] | None = None,
) -> Payout:
    """Move ``payout`` to ``to`` if ``PAYOUT_TRANSITIONS`` allows it, with ``changes`` to its other fields;
    write the history row; return the fresh payout. Raises ``IllegalStateMove`` for anything else."""
    locked, _ = PAYOUT_MACHINE.move(obj=payout, to=to, actor=actor, reason=reason, changes=changes)
    return locked


@dataclass
class ProgressSummary:
    created: int = 0
    started: int = 0
    refreshed: int = 0
    moved: int = 0
    failed: int = 0


@dataclass(frozen=True)
class PayoutStep:
    """What one start or refresh of a payout did."""

    changed: bool  # the payout's status moved
    orders_moved: int  # how many steps the order took along the payout path
    failed: bool  # the payout failed in this step


def payouts_progress() -> ProgressSummary:
    """One beat of payout progression: ``ticket_received`` orders get a payout, payouts follow the platform.

    Safe when two runs overlap: the payout row is unique per order (insert ignores conflicts) and each
    payout is worked on under a row lock that the other run skips.
    """
    summary = ProgressSummary(created=payouts_create_missing())
    pending = Payout.objects.filter(status=P.PENDING).order_by("created_at", "pk")
    for pk in pending.values_list("pk", flat=True)[:PROGRESS_BATCH]:
        summary.started += _count(_isolated(payout_start, pk), summary)
    in_flight = Payout.objects.filter(status__in=Payout.AT_PLATFORM_STATUSES).order_by(
        F("last_checked_at").asc(nulls_first=True), "pk"
    )
    for pk in in_flight.values_list("pk", flat=True)[:PROGRESS_BATCH]:
        summary.refreshed += _count(_isolated(payout_refresh, pk), summary)
    for pk in _paid_to_watch().values_list("pk", flat=True)[:PROGRESS_BATCH]:
        summary.refreshed += _count(_isolated(payout_refresh, pk), summary)
    return summary


def _paid_to_watch(*, now=None):
    """Paid payouts still young enough to fail, not asked about in the last ``PAID_RECHECK``."""
    now = now or timezone.now()
    return (
        Payout.objects.filter(status=P.PAID, paid_at__gte=now - PAID_WATCH)
        .exclude(platform_payout_id="")
        .filter(Q(last_checked_at__isnull=True) | Q(last_checked_at__lt=now - PAID_RECHECK))
        .order_by(F("last_checked_at").asc(nulls_first=True), "pk")
    )


def _isolated(step: Callable[..., PayoutStep | None], payout_pk: int) -> PayoutStep | None:
    """One payout's trouble (a bug, an order moved by hand meanwhile) must not stop the others."""
    try:
        return step(payout_pk=payout_pk)
    except Exception:
        logger.exception("payout progression failed for one payout", extra={"payout_pk": payout_pk})
        return None


def _count(outcome: PayoutStep | None, summary: ProgressSummary) -> int:
    if outcome is None:
        return 0
    summary.moved += outcome.orders_moved
    summary.failed += int(outcome.failed)
    return 1


def payout_ready_orders(*, now=None):
    """The live ``ticket_received`` orders whose transfer allows the payout (docs/partners/orders.md
    "Transfer"): a mobile transfer once the tickets were accepted on the platform (until then the sender can recall
    them); a ticket file ``TRANSFER_FILE_PAYOUT_HOLD_HOURS`` after detection, with no staff case open. One
    filter over the order joined to its transfer progress (an order without one has no transfer to pay on)."""
    now = now or timezone.now()
    hold_until = now - timedelta(hours=settings.TRANSFER_FILE_PAYOUT_HOLD_HOURS)
    D = Order.DeliveryType
    return (
        Order.objects.live()
        .filter(status=Order.Status.TICKET_RECEIVED)
        .filter(
            Q(delivery_type=D.MOBILE_TRANSFER, transfer_progress__state=Order.TransferState.ACCEPTED)
            | Q(
                delivery_type__in=(D.PDF, D.MOBILE_QR),
                transfer_progress__detected_at__lte=hold_until,
                transfer_progress__case_open=False,
            )
        )
    )


def payouts_create_missing(*, now=None) -> int:
    """A pending payout row for every live ``ticket_received`` order that has none and whose transfer allows
    it (``payout_ready_orders``); a test-mode order is never paid out: its payout steps are simulated by
    the test-mode advance."""
    orders = list(
        payout_ready_orders(now=now)
        .filter(payout__isnull=True)
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


def _lock_unless_taken(payout_pk: int, statuses: tuple[str, ...]) -> Payout | None:
    """The payout with its order, locked, if it still has one of ``statuses``; ``None`` if another run has it."""
    # Race: two overlapping progression runs — the lock gives each payout to one run, the other skips it.
    return (
        Payout.objects.select_for_update(skip_locked=True, of=("self",))
        .select_related("order")
        .filter(pk=payout_pk, status__in=statuses)
        .first()
    )


def payout_start(*, payout_pk: int) -> PayoutStep | None:
    """Create a pending payout at the platform and move the order on. ``None`` if another run has it."""
    with transaction.atomic():
        # The attempt's idempotency key stops a second platform payout even after a crash.
        payout = _lock_unless_taken(payout_pk, (P.PENDING,))
        if payout is None:
            return None
        account = PayoutAccount.objects.filter(partner_id=payout.partner_id).first()
        if account is None:
            return _fail(payout, "No payout account on file: the partner must connect one in the portal.")
        platform = get_platform()
        destination = {
            "platform": platform.name,
            "platform_account_id": account.platform_account_id,
            "account_description": f"{account.bank_name} ••••{account.last4} ({account.method.upper()})",
        }
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
            return PayoutStep(changed=False, orders_moved=0, failed=False)
        except PlatformError as exc:
            return _fail(payout, exc.message, destination)
        return _apply(payout, state, {**destination, "platform_payout_id": state.payout_id})


def payout_refresh(*, payout_pk: int) -> PayoutStep | None:
    """Ask the platform how an in-flight (or a recently paid) payout is doing and move the order on."""
    with transaction.atomic():
        payout = _lock_unless_taken(payout_pk, (*Payout.AT_PLATFORM_STATUSES, P.PAID))
        if payout is None:
            return None
        try:
            state = get_platform().get_payout(
                account_id=payout.platform_account_id, payout_id=payout.platform_payout_id
            )
        except (PlatformUnavailable, PlatformError) as exc:
            payout.last_error = exc.message[:255]
            payout.last_checked_at = timezone.now()
            payout.save(update_fields=["last_error", "last_checked_at", "updated_at"])
            return PayoutStep(changed=False, orders_moved=0, failed=False)
        return _apply(payout, state, {})


def payout_follow_platform(*, platform: str, state: pf.PayoutState) -> PayoutStep | None:
    """The platform told us (an event) how a payout it holds is doing: record it and move the order on, as
    ``payout_refresh`` does with what it asks. A failure also reaches a payout recorded ``paid`` (the bank sent
    the money back). ``None`` when no payout of ours is at the platform under that id (not created here, or
    failed already, or paid and reported paid again): nothing moves, and the poll reconciles anything missed.
    Events in any order end in the same state: a failure is final, so a ``paid`` that arrives after it finds
    nothing to move."""
    statuses = Payout.AT_PLATFORM_STATUSES
    if state.status == pf.PAYOUT_FAILED:
        statuses = (*statuses, P.PAID)
    with transaction.atomic():
        # Race: the minute poll refreshing the same payout — the row lock orders the two; the later one finds
        # the state already recorded and moves nothing.
        payout = (
            Payout.objects.select_for_update(of=("self",))
            .select_related("order")
            .filter(platform=platform, platform_payout_id=state.payout_id, status__in=statuses)
            .first()
        )
        if payout is None or not state.payout_id:
            return None
        return _apply(payout, state, {})


def _fail(payout: Payout, reason: str, changes: Mapping[str, Any] | None = None) -> PayoutStep:
    """Record the payout's failure and alert the partner once; an order that was ``paid`` by this payout goes
    back to ``payout_in_process`` (reason ``payout_failed``), where it waits for the payout to be made again."""
    was_paid = payout.status == P.PAID
    payout_transition(
        payout=payout,
        to=P.FAILED,
        actor=PAYOUTS_ACTOR,
        reason=f"Failed after it was reported paid: {reason}" if was_paid else reason,
        changes={
            **(changes or {}),
            "failure_reason": reason[:255],
            "last_checked_at": timezone.now(),
            "paid_at": None,  # the money did not arrive: statements and the portal no longer count it paid
        },
    )
    # Every caller holds the payout's lock in a transaction: the alert is published once the failure commits.
    payment_alert_enqueue(kind=PAYOUT_FAILED, pk=payout.pk)
    logger.warning("payout failed", extra={"order_id": payout.order.order_id, "reason": reason})
    moved = 0
    if payout.order.status == Order.Status.PAID:
        order_transition(
            order=payout.order,
            to=Order.Status.PAYOUT_IN_PROCESS,
            actor=PAYOUTS_ACTOR,
            reason=f"Payout {payout.platform_payout_id} failed after it was reported paid: {reason}"[:255],
            reason_code=REASON_PAYOUT_FAILED,
        )
        moved = 1
    return PayoutStep(changed=True, orders_moved=moved, failed=True)


def _save(payout: Payout, changes: Mapping[str, Any]) -> None:
    for name, value in changes.items():
        setattr(payout, name, value)
    payout.save(update_fields=[*changes, "updated_at"])


def _apply(payout: Payout, state: pf.PayoutState, changes: Mapping[str, Any]) -> PayoutStep:
    """Record the platform's state on the payout and walk the order forward to match it."""
    new_status = _PAYOUT_STATUS[state.status]
    if new_status == P.FAILED:
        return _fail(payout, state.failure_reason or "The platform reported the payout as failed.", changes)
    changes = {
        **changes,
        "scheduled_for": state.scheduled_for or payout.scheduled_for,
        "paid_at": state.paid_at or payout.paid_at,
        "last_error": "",
        "last_checked_at": timezone.now(),
    }
    changed = new_status != payout.status
    if changed and PAYOUT_MACHINE.allows(payout.status, new_status):
        reason = f"The platform reports the payout as {new_status}"
        payout_transition(payout=payout, to=new_status, actor=PAYOUTS_ACTOR, reason=reason, changes=changes)
    else:
        if changed:  # the platform reported an earlier status than the one recorded: keep ours
            logger.warning(
                "platform reported a payout going back; status kept",
                extra={"payout_pk": payout.pk, "status": payout.status, "reported": new_status},
            )
            changed = False
        _save(payout, changes)
    order = payout.order
    target = _ORDER_TARGET[payout.status]
    path = Order.PAYOUT_PATH
    if order.status not in path:
        logger.error(
            "payout progressed for an order outside the payout path",
            extra={"order_id": order.order_id, "order_status": order.status},
        )
        return PayoutStep(changed=changed, orders_moved=0, failed=False)
    moved = 0
    for step in path[path.index(order.status) + 1 : path.index(target) + 1]:
        order = order_transition(
            order=order, to=step, actor=PAYOUTS_ACTOR, reason=_order_reason(step, payout)
        )
        moved += 1
    return PayoutStep(changed=changed, orders_moved=moved, failed=False)


def _order_reason(step: str, payout: Payout) -> str:
    if step == Order.Status.PAYOUT_IN_PROCESS:
        return f"Payout {payout.platform_payout_id} of {payout.amount} {payout.currency} created"
    if step == Order.Status.SCHEDULED:
        when = payout.scheduled_for.strftime("%Y-%m-%d %H:%M UTC") if payout.scheduled_for else "a later date"
        return f"Payout scheduled for {when}"
    return "Payout disbursed"


def payout_retry(*, payout: Payout, actor: str, reason: str = "Retried by staff") -> bool:
    """Try a failed payout again, as a new attempt (new idempotency key) to the current account: staff, or the
    partner connecting a payout account (``payouts_retry_for_partner``). Returns whether it was failed (a double
    click, a second staff member or a second connection finds it pending already)."""
    try:
        # Race: two retries at once (staff, a connection) — the state machine's row lock lets one move it
        # failed → pending; the other finds it pending and makes no second attempt.
        with transaction.atomic():
            payout_transition(
                payout=payout,
                to=P.PENDING,
                actor=actor,
                reason=reason,
                changes=lambda locked: {
                    "attempt": locked.attempt + 1,
                    "platform_payout_id": "",
                    "failure_reason": "",
                    "last_error": "",
                    "scheduled_for": None,
                    "paid_at": None,
                },
            )
            payment_alert_forget(kind=PAYOUT_FAILED, pk=payout.pk)  # its next failure: a new alert
    except IllegalStateMove:
        return False
    logger.info("payout retry requested", extra={"payout_pk": payout.pk, "actor": actor})
    publish_on_commit("payouts.tasks.payouts_progress")  # lost with the broker: the next beat runs it anyway
    return True
