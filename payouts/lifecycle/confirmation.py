"""New orders confirmed in batches: a batch claims up to ``ORDER_CONFIRMATION_BATCH`` waiting orders, charges them,
moves them to ``awaiting_transfer`` and e-mails their sellers, each step one set of statements for the whole
batch. One order is a batch of one (``order_confirm``, the retrying one-order task's body).

How an order gets here: its ``order.created`` notification reaches the ``payouts.confirmation`` subscriber
(``reactions.on_order_created``), which only *nudges*: it publishes one ``orders_confirm_batch`` task unless one
is already waiting (a note in the cache, cleared by the batch as it starts claiming, so an order committed after
a batch's claim always nudges a new one). A burst of orders is picked up by a few batches, not a task each. A
batch claims the waiting orders with ``SELECT … FOR UPDATE SKIP LOCKED`` (concurrent batches take disjoint
sets); a full batch that left older orders waiting publishes the next one at once, even while a gathering one
is on its way.

Idempotent step by step: the charge's idempotency key is the order id and only an ``accepted`` order is charged,
under its row lock; the move re-checks the status; the e-mail goes out at most once (``seller_email``). A
failure never fails or repeats the others: the batch runs in a savepoint, and when a statement or a step fails
the savepoint is rolled back and the batch split in halves, down to the one order that fails, which is left
with its confirmation recorded as begun and the order ``accepted``: published again at once as a one-order
confirmation (``payouts.tasks.order_confirm``, retried with backoff) when the error is transient, else logged
for the confirmation sweep. A lost database connection is no one order's failure: the whole batch rolls back
(none of it begun) and its task retries it. A platform outage on one card leaves that order to the one-order
task too; an e-mail the mail server did not take is retried by it.

The order itself is the orders app's: this module reads and locks its rows, and moves them only through
``orders.services`` (the status's one writer).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from django.conf import settings
from django.core.cache import cache
from django.db import connection, transaction
from django.db.models import CharField, Exists, OuterRef, Q
from django.db.models.functions import Cast
from django.utils import timezone

from config.core import mail_once
from config.core.models import MailOnce
from config.core.publish import publish
from config.core.retrying import DB_ERRORS, TRANSIENT_ERRORS
from orders import outbox
from orders import services as order_services
from orders.models import Order

from ..errors import PlatformUnavailable
from ..models import Charge
from ..services.charges import orders_charge
from ..services.testmode import test_orders_charge
from . import seller_email

logger = logging.getLogger(__name__)

S = Order.Status
# The note that a batch task is on its way: while it is there, another nudge publishes nothing.
NUDGE_KEY = "payouts:confirmations-waiting"
TRANSIENT = (*TRANSIENT_ERRORS, PlatformUnavailable)


@dataclass
class BatchOutcome:
    claimed: int = 0
    confirmed: list[int] = field(default_factory=list)
    canceled: list[int] = field(default_factory=list)
    # Left accepted, for the one-order task (transient) or the sweep (anything else).
    retried: list[int] = field(default_factory=list)
    failed: list[int] = field(default_factory=list)
    mailed: list[int] = field(default_factory=list)
    # Each order left unfinished (its charge, its move or its e-mail), with the error that stopped it.
    errors: dict[int, BaseException] = field(default_factory=dict)


def confirmations_nudge(*, gather: bool = False, full: bool = False) -> bool:
    """Publish one batch task unless one is already on its way; returns whether this call published one.
    ``gather``: the task starts ``ORDER_CONFIRMATION_GATHER_SECONDS`` later (a new order's nudge), so the orders
    created meanwhile join its batch. ``full``: a full batch's that left older orders waiting, published at once
    even while a gathering one is on its way: that one starts only after its countdown, and those orders have
    waited already (one full batch publishes at most one more, so the tasks stay bounded by the orders
    waiting)."""
    try:
        if full:
            cache.set(NUDGE_KEY, 1, settings.ORDER_CONFIRMATION_NUDGE_SECONDS)
        elif not cache.add(NUDGE_KEY, 1, settings.ORDER_CONFIRMATION_NUDGE_SECONDS):
            return False
    except Exception:
        logger.warning("confirmations: the cache did not answer; publishing the batch task anyway")
    countdown = settings.ORDER_CONFIRMATION_GATHER_SECONDS if gather else None
    if publish("payouts.tasks.orders_confirm_batch", countdown=countdown):
        return True
    _nudge_clear()  # nothing on its way after all: the next order's nudge tries again
    return False


def _nudge_clear() -> None:
    try:
        cache.delete(NUDGE_KEY)
    except Exception:
        logger.warning("confirmations: the cache did not answer; the nudge note expires by itself")


def orders_confirmation_claim(
    *, limit: int, now: datetime, order_pks: list[int] | None = None
) -> list[Order]:
    """Lock up to ``limit`` orders waiting for their confirmation (``accepted``, no attempt begun), oldest first,
    with their event and partner; in the caller's transaction. Each comes with ``confirmation_started_at`` =
    ``now`` in memory: the batch writes it with the order's move, or alone for an order that does not move
    (:func:`_begun_record`), before its transaction commits, so no other transaction ever sees a claimed order
    without it.

    ``order_pks``: those orders only, each still ``accepted`` (begun or not), waiting for a lock another
    confirmation holds rather than skipping it (a caller that waits for the outcome: the one-order task, test
    mode's advance); the attempt is recorded on each of them at once, whatever its status (the sweep reads it).
    """
    orders = (
        Order.objects.select_related("event", "partner")
        .filter(status=S.ACCEPTED)
        .order_by("created_at", "pk")
    )
    if order_pks is not None:
        orders = orders.filter(pk__in=order_pks).select_for_update(of=("self",))
    else:
        # Race: two batches at once — each takes the rows the other has not locked, so an order is confirmed
        # by one batch; a single confirmation holding a row (a retry) keeps it.
        orders = orders.filter(confirmation_started_at__isnull=True).select_for_update(
            skip_locked=True, of=("self",)
        )
    claimed = list(orders[:limit])
    if order_pks:
        _begun_record(order_pks, now)
    for order in claimed:
        order.confirmation_started_at = now
    return claimed


def orders_confirm_batch(
    *, limit: int | None = None, order_pks: list[int] | None = None, hand_on: bool = True
) -> BatchOutcome:
    """Confirm up to ``limit`` (``ORDER_CONFIRMATION_BATCH``) waiting orders; see the module docstring.

    ``order_pks``: confirm those orders now, waiting for any other confirmation that holds one, and e-mail the
    sellers of those already confirmed whose e-mail is still owed. ``hand_on``: publish the one-order task for
    what is left unfinished; without it the caller retries (``order_confirm``).
    """
    limit = limit or (len(order_pks) if order_pks else settings.ORDER_CONFIRMATION_BATCH)
    if order_pks is None:
        # Cleared before the claim: an order committed after it nudges a batch of its own.
        _nudge_clear()
    outcome = BatchOutcome()
    failures: list[tuple[int, BaseException]] = []
    begun_at = timezone.now()
    with transaction.atomic():
        orders = orders_confirmation_claim(limit=limit, now=begun_at, order_pks=order_pks)
        outcome.claimed = len(orders)
        _confirm_split(orders, outcome, failures, begun_at=begun_at)
        if order_pks is None:
            # The confirmed orders' moves wrote it; the others (canceled, left for a retry, failed) are stamped
            # here, in the same transaction.
            confirmed = set(outcome.confirmed)
            _begun_record([order.pk for order in orders if order.pk not in confirmed], begun_at)
    for pk, exc in failures:
        outcome.errors[pk] = exc
        if isinstance(exc, TRANSIENT):
            outcome.retried.append(pk)
        else:
            outcome.failed.append(pk)
            # Left to the confirmation sweep, which publishes it again once it is stale, as a one-order task.
            logger.error("The confirmation of order pk=%s failed", pk, exc_info=exc)
    owed_mail = list(dict.fromkeys([*outcome.confirmed, *(order_pks or [])]))
    try:
        sending = seller_email.confirmation_emails_send(order_pks=owed_mail)
    except Exception as exc:
        if not hand_on:
            raise
        # The orders are confirmed; their e-mails are left to the one-order task, which retries them.
        logger.warning("The confirmation e-mails of a batch failed", exc_info=True)
        sending = mail_once.Sending(owed={str(pk): exc for pk in outcome.confirmed})
    outcome.mailed = [int(key) for key in sending.sent]
    for key, exc in sending.owed.items():
        outcome.errors.setdefault(int(key), exc)
    if hand_on:
        for pk in [*outcome.retried, *(int(key) for key in sending.owed)]:
            publish("payouts.tasks.order_confirm", pk)
    if order_pks is None and outcome.claimed >= limit and _left_behind(begun_at):
        # Orders that were waiting before this claim did not fit in it: the next batch at once. Those committed
        # after the claim nudged one of their own (the note was cleared before it), which gathers as usual.
        confirmations_nudge(full=True)
    return outcome


def _left_behind(claimed_at: datetime) -> bool:
    """Whether an order created before a batch's claim still waits for its confirmation (the claim's own
    index; an order another batch holds meanwhile counts too, which costs one batch that finds nothing)."""
    return Order.objects.filter(
        status=S.ACCEPTED, confirmation_started_at__isnull=True, created_at__lt=claimed_at
    ).exists()


def order_confirm(*, order_pk: int) -> Order | None:
    """Confirm one order now (a batch of one): charge the card, move it to ``awaiting_transfer``, e-mail the
    seller, each at most once. The error that left it unfinished propagates for the task to retry
    (``PlatformUnavailable``, database and mail-server errors) or to fail."""
    outcome = orders_confirm_batch(order_pks=[order_pk], hand_on=False)
    if order_pk in outcome.errors:
        raise outcome.errors[order_pk]
    return Order.objects.filter(pk=order_pk).first()


def _begun_record(order_pks: list[int], at: datetime) -> None:
    """Record that the confirmation of ``order_pks`` began at ``at`` (the sweep reads it)."""
    if order_pks:
        Order.objects.filter(pk__in=order_pks).update(confirmation_started_at=at)


def _confirm_split(orders: list[Order], outcome: BatchOutcome, failures: list, *, begun_at: datetime) -> None:
    """Confirm ``orders`` in a savepoint; on an error, roll it back and confirm each half the same way."""
    if not orders:
        return
    try:
        with transaction.atomic():
            confirmed, canceled, retried = _confirm(orders, begun_at=begun_at)
    except Exception as exc:
        if isinstance(exc, DB_ERRORS) or connection.needs_rollback:
            # The connection itself failed (or the savepoint could not be rolled back): the whole batch is
            # rolled back, none of it began, and the task retries it.
            raise
        if len(orders) == 1:
            failures.append((orders[0].pk, exc))
            return
        # The rolled-back attempt changed the instances in memory (statuses, stamps): read them again, as the
        # savepoint left them (still locked by this transaction).
        fresh = Order.objects.select_related("event", "partner").in_bulk([order.pk for order in orders])
        orders = [fresh[order.pk] for order in orders]
        middle = len(orders) // 2
        _confirm_split(orders[:middle], outcome, failures, begun_at=begun_at)
        _confirm_split(orders[middle:], outcome, failures, begun_at=begun_at)
        return
    outcome.confirmed += confirmed
    outcome.canceled += canceled
    for pk, error in retried.items():
        outcome.retried.append(pk)
        outcome.errors[pk] = error


def _confirm(
    orders: list[Order], *, begun_at: datetime
) -> tuple[list[int], list[int], dict[int, BaseException]]:
    """Charge and move ``orders`` (locked, ``accepted``): the pks confirmed, canceled, and left for a retry (with
    the platform's error). The move of the confirmed ones records that their confirmation began at
    ``begun_at``: one write of each order, not two."""
    canceled: list[int] = []
    retried: dict[int, BaseException] = {}
    payable = []
    for order in orders:
        if order.event.is_canceled:
            # Race: the event was canceled between the order and its confirmation — the order's lock makes a
            # cancel wait for this, so an order is never charged after it was canceled.
            order_services.order_transition(
                order=order,
                to=S.CANCELED,
                actor="system:catalog",
                reason=order_services.EVENT_CANCELED_REASON,
                reason_code=outbox.REASON_EVENT_CANCELED,
            )
            canceled.append(order.pk)
        else:
            payable.append(order)
    # A test-mode order is charged on the sandbox only, never on the partner's real card.
    answers = {
        **orders_charge(orders=[order for order in payable if order.livemode]),
        **test_orders_charge(orders=[order for order in payable if not order.livemode]),
    }
    charged = []
    for order in payable:
        answer = answers[order.pk]
        if isinstance(answer, PlatformUnavailable):
            retried[order.pk] = answer  # the charge stays pending; the one-order task retries with backoff
            continue
        if isinstance(answer, Exception):
            raise answer  # refused for good: this order fails alone
        if answer.status != Charge.Status.SUCCEEDED:
            order_services.order_transition(
                order=order,
                to=S.CANCELED,
                actor="system:payment",
                reason=f"Card declined: {answer.failure_reason or 'no reason given'}",
                reason_code=outbox.REASON_CARD_DECLINED,
            )
            canceled.append(order.pk)
            continue
        charged.append(order)
    order_services.orders_transition(
        orders=charged,
        to=S.AWAITING_TRANSFER,
        actor="system:confirmation",
        reason="Card charged",
        locked=True,
        also={"confirmation_started_at": begun_at},
    )
    return [order.pk for order in charged], canceled, retried


def orders_requeue_unconfirmed(*, now: datetime | None = None, limit: int = 500) -> list[int]:
    """Beat: publish again, as one-order tasks, the confirmations that never began (their message was lost) or
    that stalled (started ``ORDER_CONFIRMATION_STALE_SECONDS`` ago and unfinished, the seller's e-mail
    included). Returns the pks it published; each is not published again before the grace or the stale
    period."""
    now = now or timezone.now()
    grace = now - timedelta(seconds=settings.ORDER_CONFIRMATION_GRACE_SECONDS)
    stale = now - timedelta(seconds=settings.ORDER_CONFIRMATION_STALE_SECONDS)
    mailed = MailOnce.objects.filter(
        purpose=seller_email.PURPOSE,
        key=Cast(OuterRef("pk"), output_field=CharField()),
        sent_at__isnull=False,
    )
    never_started = Q(status=S.ACCEPTED, confirmation_started_at__isnull=True, created_at__lt=grace) & (
        Q(confirmation_requeued_at__isnull=True) | Q(confirmation_requeued_at__lt=grace)
    )
    stalled = (
        (Q(status=S.ACCEPTED) | (Q(status=S.AWAITING_TRANSFER) & ~Exists(mailed)))
        & Q(confirmation_started_at__lt=stale)
        & (Q(confirmation_requeued_at__isnull=True) | Q(confirmation_requeued_at__lt=stale))
    )
    pks = list(
        Order.objects.filter(never_started | stalled)
        .order_by("created_at")
        .values_list("pk", flat=True)[:limit]
    )
    published = [pk for pk in pks if publish("payouts.tasks.order_confirm", pk)]
    if published:
        Order.objects.filter(pk__in=published).update(confirmation_requeued_at=now)
    return published
