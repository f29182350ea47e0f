"""Refunds: the card charge of an order canceled after it was charged goes back to the partner's card.

Every cancel goes through ``orders.services.order_transition(..., to="canceled")`` (partner, staff, a canceled
event), which writes an ``order.status_changed`` notification in the cancel's transaction. Payouts' subscriber
(``payouts.lifecycle.reactions.on_order_canceled``, on the move's ``Transition``) then runs ``refund_request``, which marks the order's succeeded
charge as owing a refund (``refund_status = pending``), and ``refund_enqueue`` publishes the task
``payouts.tasks.refund_for_order``, which calls the service of the same name and retries it with backoff while
the platform is unavailable. The beat's ``refunds_sweep`` catches what the task could not finish: a message lost with the broker, retries run out, a
refund the platform left pending. The payout run sweeps every minute the orders canceled in the last
``REFUND_SWEEP_WINDOW`` (a day: what it reads is a day's cancels, whatever the history behind them); the hourly
``payouts.tasks.refunds_sweep`` sweeps every cancel since its mark (``SweepMark`` ``REFUND_SWEEP_MARK``), so a
refund owed on an older cancel (the beat or the workers down for longer than the window) is found within the hour.
The mark is the time before which every cancel was found with its refund requested: the oldest cancel the sweep
still found owing, or the grace's edge when none was. Its first run reads every cancel ever; each later one reads
the cancels since the last (an hour's, whatever the history behind them). No refund becomes owed on a cancel the
mark has passed: a refund is owed only from a cancel of an order whose charge succeeded, a charge succeeds only
while its order is ``accepted`` (under the order's lock), and a cancel is dated as it is made; one committed more
than ``REFUND_SWEEP_GRACE`` after its date is still read by the payout run's window.

The whole charge is refunded, through the platform that took it, with the idempotency key
``"<order_id>:refund"`` (a staff retry after a failure is a new attempt: ``"<order_id>:refund:<n>"``).
An ``expired`` order keeps its charge: the seller never delivered, and the charge covers those tickets.

``refund_transition`` is the only code that changes ``Charge.refund_status`` (``REFUND_TRANSITIONS``); every
move is recorded in ``RefundStatusHistory``.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from django.db import transaction
from django.db.models import F, Q, QuerySet
from django.utils import timezone

from config.core.publish import publish, publish_on_commit
from config.core.statemachine import IllegalStateMove, StateMachine
from orders.models import Order

from .. import platform as pf
from ..errors import PlatformError, PlatformUnavailable
from ..models import Charge, RefundStatusHistory, SweepMark
from ..platform import get_platform
from .alerts import REFUND_FAILED, payment_alert_enqueue, payment_alert_forget

logger = logging.getLogger(__name__)

R = Charge.RefundStatus
ORDER_CANCELED = Order.Status.CANCELED
REFUNDS_ACTOR = "system:refunds"

# Every legal move of a charge's refund. A succeeded refund is final; a failed one goes back to pending only
# through a staff retry (a new attempt).
REFUND_TRANSITIONS: dict[str, frozenset[str]] = {
    R.NONE: frozenset({R.PENDING}),
    R.PENDING: frozenset({R.SUCCEEDED, R.FAILED}),
    R.SUCCEEDED: frozenset(),
    R.FAILED: frozenset({R.PENDING}),
}
REFUND_MACHINE = StateMachine(
    name="refund",
    field="refund_status",
    moves=REFUND_TRANSITIONS,
    history=RefundStatusHistory,
    history_fk="charge",
)

# An owed refund that no worker has tried after this long: its message never reached a worker.
REFUND_SWEEP_GRACE = timedelta(minutes=2)
# A refund tried this long ago that is still pending: the task's retries ran out, or the platform is not done.
REFUND_RECHECK_AFTER = timedelta(minutes=10)
# How many refunds one sweep works on; the next beat takes the rest.
REFUND_SWEEP_BATCH = 200
# The payout run's sweep reads the cancels of this last while; the hourly sweep reads them since its mark.
REFUND_SWEEP_WINDOW = timedelta(days=1)
# The hourly sweep's ``SweepMark``: every cancel before it was found with its refund requested.
REFUND_SWEEP_MARK = "refunds.never_requested"


def refund_transition(
    *,
    charge: Charge,
    to: str,
    actor: str,
    reason: str = "",
    changes: Mapping[str, Any] | Callable[[Charge], Mapping[str, Any]] | None = None,
) -> Charge:
    """Move ``charge.refund_status`` to ``to`` if ``REFUND_TRANSITIONS`` allows it, with ``changes`` to its
    other fields; write the history row; return the fresh charge. Raises ``IllegalStateMove`` otherwise."""
    locked, _ = REFUND_MACHINE.move(obj=charge, to=to, actor=actor, reason=reason, changes=changes)
    return locked


def refund_request(*, order_pk: int) -> bool:
    """The canceled order's succeeded charge now owes a refund. Returns whether this call marked it.

    Idempotent: a repeat (or the sweep marking it first) finds the charge already marked and returns False.
    The caller publishes the task (``refund_enqueue``).
    """
    charge = Charge.objects.filter(
        order_id=order_pk, status=Charge.Status.SUCCEEDED, refund_status=R.NONE
    ).first()
    if charge is None:
        return False
    try:
        refund_transition(
            charge=charge,
            to=R.PENDING,
            actor=REFUNDS_ACTOR,
            reason="Order canceled",
            changes={"refund_requested_at": timezone.now()},
        )
    except IllegalStateMove:
        return False
    return True


def refund_enqueue(*, order_pk: int) -> bool:
    """Publish the refund task; a broker outage is logged, never raised: the refund sweep runs it later."""
    return publish("payouts.tasks.refund_for_order", order_pk)


def refund_for_order(*, order) -> Charge | None:
    """Refund the card charge of a canceled ``order`` in full, once. Returns the charge (``None``: never charged).

    Idempotent: a charge that was never taken, a refund already settled (``succeeded``/``failed``) and an order
    that is not canceled are left alone; a repeat during the refund waits for the charge row and then sees the
    outcome; the attempt's idempotency key makes the platform refund once even after a crash. A transient
    platform failure raises ``PlatformUnavailable`` (the refund stays ``pending``; the caller retries).
    """
    charge = Charge.objects.filter(order_id=order.pk).first()
    if charge is None or not _refund_may_be_owed(charge):
        return charge
    unavailable: PlatformUnavailable | None = None
    with transaction.atomic():
        # Race: the on-commit task, its retry, a second delivery and the sweep refunding one charge at once — the
        # charge row's lock lets one talk to the platform at a time; the others then see its outcome.
        charge = Charge.objects.select_for_update(of=("self",)).select_related("order").get(pk=charge.pk)
        if not _refund_may_be_owed(charge):
            return charge
        if charge.order.status != ORDER_CANCELED:
            # Only a cancel owes a refund; an expired order keeps its charge (see the module docstring).
            if charge.refund_status == R.PENDING:
                logger.error(
                    "refund owed for an order that is not canceled; left for staff",
                    extra={"order_id": charge.order.order_id, "order_status": charge.order.status},
                )
            return charge
        now = timezone.now()
        if charge.refund_status == R.NONE:  # canceled before refunds were requested at cancel time
            refund_transition(
                charge=charge,
                to=R.PENDING,
                actor=REFUNDS_ACTOR,
                reason="Order canceled",
                changes={"refund_requested_at": now},
            )
        changes: dict[str, Any] = {"refund_attempted_at": now}
        outcome, reason = R.PENDING, ""
        platform = get_platform(charge.platform)
        try:
            if charge.platform_refund_id:  # the platform took the refund earlier and had not finished it
                result = platform.get_refund(refund_id=charge.platform_refund_id)
            else:
                result = platform.refund_charge(
                    charge_id=charge.platform_charge_id,
                    amount=charge.amount,
                    currency=charge.currency,
                    idempotency_key=charge.refund_idempotency_key,
                    reason=f"Ticket buy-back order {charge.order.order_id} canceled",
                )
        except PlatformUnavailable as exc:
            changes["refund_last_error"] = exc.message[:255]
            unavailable = exc
        except PlatformError as exc:
            outcome, reason = R.FAILED, exc.message[:255]
        else:
            changes["platform_refund_id"] = result.refund_id or charge.platform_refund_id
            changes["refund_last_error"] = ""
            if result.status == pf.REFUND_SUCCEEDED:
                outcome, reason = R.SUCCEEDED, "The platform refunded the charge"
                changes["refunded_at"] = now
            elif result.status == pf.REFUND_FAILED:
                outcome, reason = (
                    R.FAILED,
                    (result.failure_reason or "The platform refused the refund.")[:255],
                )
            # REFUND_PENDING: the platform is not done yet; the sweep asks it again later.
        if outcome == R.FAILED:
            changes["refund_failure_reason"] = reason
        if outcome == R.PENDING:
            for name, value in changes.items():
                setattr(charge, name, value)
            charge.save(update_fields=[*changes, "updated_at"])
        else:
            refund_transition(charge=charge, to=outcome, actor=REFUNDS_ACTOR, reason=reason, changes=changes)
        if outcome == R.FAILED:  # only a refund that was owed gets here: a new failure
            payment_alert_enqueue(kind=REFUND_FAILED, pk=charge.pk)  # published once this commits
    if unavailable is not None:
        raise unavailable
    log = logger.warning if charge.refund_status == R.FAILED else logger.info
    log(
        "order charge refund %s",
        charge.refund_status,
        extra={"order_id": charge.order.order_id, "refund_status": charge.refund_status},
    )
    return charge


def refund_follow_platform(*, platform: str, charge_id: str) -> str:
    """The platform told us (an event) that the charge ``charge_id`` was refunded: settle its owed refund now,
    through ``refund_for_order`` (which asks the platform about the refund under the charge's lock), instead
    of at the next sweep. Returns what happened, for the event's record."""
    charge = (
        Charge.objects.select_related("order")
        .filter(platform=platform, platform_charge_id=charge_id, status=Charge.Status.SUCCEEDED)
        .first()
    )
    if charge is None or not charge_id:
        return "no charge of ours"
    if charge.refund_status != R.PENDING:
        if charge.refund_status == R.NONE:
            # Refunded at the platform by hand, for an order not canceled here: staff must know.
            logger.warning(
                "charge refunded at the platform without a refund owed here",
                extra={"order_id": charge.order.order_id, "charge": charge_id},
            )
            return "refunded at the platform, no refund owed here"
        return f"refund {charge.refund_status} already"
    try:
        charge = refund_for_order(order=charge.order) or charge
    except PlatformUnavailable:
        return "refund pending: the platform is unavailable, the sweep asks again"
    return f"refund {charge.refund_status}"


def _refund_may_be_owed(charge: Charge) -> bool:
    return charge.status == Charge.Status.SUCCEEDED and charge.refund_status in (R.NONE, R.PENDING)


def refund_retry(*, charge: Charge, actor: str) -> bool:
    """Staff: try a failed refund again, as a new attempt (new idempotency key). Returns whether it was failed."""
    try:
        with transaction.atomic():
            refund_transition(
                charge=charge,
                to=R.PENDING,
                actor=actor,
                reason="Retried by staff",
                changes=lambda locked: {
                    "refund_attempt": locked.refund_attempt + 1,
                    "platform_refund_id": "",
                    "refund_failure_reason": "",
                    "refund_last_error": "",
                    "refund_attempted_at": None,
                },
            )
            payment_alert_forget(kind=REFUND_FAILED, pk=charge.pk)  # its next failure: a new alert
    except IllegalStateMove:  # a double click or a second staff member: it is pending already
        return False
    logger.info("refund retry requested", extra={"charge_pk": charge.pk, "actor": actor})
    publish_on_commit("payouts.tasks.refund_for_order", charge.order_id)
    return True


@dataclass
class RefundSweepSummary:
    refunded: int = 0
    failed: int = 0
    pending: int = 0  # still pending: the platform is unavailable or has not finished


def refunds_never_requested(*, now, since=None) -> QuerySet[Charge]:
    """Canceled past the grace and still not requested: the subscriber's delivery was lost (or the order was
    canceled before refunds were requested); within the grace the subscriber is probably on its way.
    ``since``: only orders canceled at or after it (``None``: every canceled order).

    Read from the canceled orders' partial index, oldest cancel first, each probing the partial index of charges
    whose refund was never requested (both read without their tables when only ids are selected): never a walk
    of every charge, most of which belong to orders that were never canceled."""
    charges = Charge.objects.filter(
        status=Charge.Status.SUCCEEDED,
        refund_status=R.NONE,
        order__status=ORDER_CANCELED,
        order__status_changed_at__lt=now - REFUND_SWEEP_GRACE,
    )
    if since is not None:
        charges = charges.filter(order__status_changed_at__gte=since)
    return charges.order_by("order__status_changed_at", "order_id")


def refunds_sweep(*, now=None, every_cancel: bool = False) -> RefundSweepSummary:
    """Beat: refund what the task did not. Canceled orders whose succeeded charge has no refund requested
    ``REFUND_SWEEP_GRACE`` after the cancel, owed refunds no worker tried within ``REFUND_SWEEP_GRACE``, and refunds still pending ``REFUND_RECHECK_AFTER`` after
    their last try. One refund's trouble never stops the others.

    The cancels read are those of the last ``REFUND_SWEEP_WINDOW`` (the payout run's, every minute), or with
    ``every_cancel`` those since the sweep's mark, every one the first time (the hourly task's), which then
    moves the mark (see the module docstring)."""
    now = now or timezone.now()
    since = refunds_sweep_mark() if every_cancel else now - REFUND_SWEEP_WINDOW
    # The ids first, read from the indexes alone; then the few charges with their orders.
    owed = list(
        refunds_never_requested(now=now, since=since).values_list("pk", flat=True)[:REFUND_SWEEP_BATCH]
    )
    never_requested = Charge.objects.filter(pk__in=owed).order_by("pk")
    stalled = (
        Charge.objects.filter(refund_status=R.PENDING)
        .filter(
            Q(refund_attempted_at__isnull=True, refund_requested_at__lt=now - REFUND_SWEEP_GRACE)
            | Q(refund_attempted_at__lt=now - REFUND_RECHECK_AFTER)
        )
        .order_by(F("refund_attempted_at").asc(nulls_first=True), "pk")
    )
    summary = RefundSweepSummary()
    for queryset in (never_requested, stalled):
        for charge in queryset.select_related("order")[:REFUND_SWEEP_BATCH]:
            try:
                outcome = refund_for_order(order=charge.order)
            except PlatformUnavailable:
                summary.pending += 1
                continue
            except Exception:
                logger.exception("refund sweep failed for one charge", extra={"charge_pk": charge.pk})
                continue
            if outcome is not None and outcome.refund_status == R.SUCCEEDED:
                summary.refunded += 1
            elif outcome is not None and outcome.refund_status == R.FAILED:
                summary.failed += 1
            elif outcome is not None and outcome.refund_status == R.PENDING:
                summary.pending += 1
    if every_cancel:
        _mark_move(now=now, since=since)
    return summary


def refunds_sweep_mark():
    """Where the hourly sweep's mark stands: every cancel before it was found with its refund requested (``None``:
    the sweep has not run, or its mark was deleted, and its next run reads every cancel)."""
    return SweepMark.objects.filter(name=REFUND_SWEEP_MARK).values_list("reached", flat=True).first()


def _mark_move(*, now, since) -> None:
    """Move the hourly sweep's mark to the oldest cancel since ``since`` still owing a refund (one that failed
    in an unexpected way, or past this run's batch), or to the grace's edge when none is. Two runs at once may
    write in either order: each writes a time before which it found nothing owed, so the mark is never ahead of
    what was swept."""
    oldest = (
        refunds_never_requested(now=now, since=since)
        .values_list("order__status_changed_at", flat=True)
        .first()
    )
    reached = oldest if oldest is not None else now - REFUND_SWEEP_GRACE
    SweepMark.objects.update_or_create(name=REFUND_SWEEP_MARK, defaults={"reached": reached})
