"""New orders confirmed in batches: one task charges up to ``ORDER_CONFIRMATION_BATCH`` waiting orders, moves them
to ``awaiting_transfer`` and e-mails their sellers, each step one set of statements for the whole batch.

How an order gets here: its ``order.created`` notification reaches the ``payouts.confirmation`` subscriber
(``order_reactions.on_order_created``), which only *nudges*: it publishes one ``orders_confirm_batch`` task
unless one is already waiting (a note in the cache, cleared by the batch as it starts claiming, so an order
committed after a batch's claim always nudges a new one). A burst of orders is picked up by a few batches, not a
task each. A batch claims the waiting orders with ``SELECT … FOR UPDATE SKIP LOCKED`` (concurrent batches take
disjoint sets); a full batch publishes the next one.

Every step does what ``order_reactions.order_confirm`` does for one order, with the same idempotency (the
charge's idempotency key is the order id; the e-mail's claim, hand-over and sent stamps). A failure never
fails or repeats the others: the batch runs in a savepoint, and when a statement or a step fails the savepoint
is rolled back and the batch split in halves, down to the one order that fails, which is left as the one-order
path leaves it: its confirmation recorded as begun and the order ``accepted``, published again at once as a
one-order confirmation (``payouts.tasks.order_confirm``, retried with backoff) when the error is transient,
else logged for the confirmation sweep. A lost database connection is no one order's failure: the whole batch
rolls back (none of it begun) and its task retries it. A platform outage on one card leaves that order to the
one-order task too; an e-mail the mail server did not take is retried by it.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

from django.conf import settings
from django.core.cache import cache
from django.db import connection, transaction

from config.core.publish import publish
from config.core.retrying import DB_ERRORS, TRANSIENT_ERRORS
from orders import outbox
from orders import services as order_services
from orders.models import Order

from ..errors import PlatformUnavailable
from ..models import Charge
from .charges import charges_for_orders
from .testmode import test_charges_for_orders

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


def confirmations_nudge() -> bool:
    """Publish one batch task unless one is already on its way; returns whether this call published one."""
    try:
        if not cache.add(NUDGE_KEY, 1, settings.ORDER_CONFIRMATION_NUDGE_SECONDS):
            return False
    except Exception:
        logger.warning("confirmations: the cache did not answer; publishing the batch task anyway")
    if publish("payouts.tasks.orders_confirm_batch"):
        return True
    _nudge_clear()  # nothing on its way after all: the next order's nudge tries again
    return False


def _nudge_clear() -> None:
    try:
        cache.delete(NUDGE_KEY)
    except Exception:
        logger.warning("confirmations: the cache did not answer; the nudge note expires by itself")


def orders_confirm_batch(*, limit: int | None = None, order_pks: list[int] | None = None) -> BatchOutcome:
    """Confirm up to ``limit`` (``ORDER_CONFIRMATION_BATCH``) waiting orders; see the module docstring.

    ``order_pks``: confirm those orders now, waiting for any other confirmation that holds one (test mode's
    advance waits for the outcome).
    """
    limit = limit or settings.ORDER_CONFIRMATION_BATCH
    if order_pks is None:
        # Cleared before the claim: an order committed after it nudges a batch of its own.
        _nudge_clear()
    outcome = BatchOutcome()
    failures: list[tuple[int, BaseException]] = []
    with transaction.atomic():
        orders = order_services.orders_confirmation_claim(limit=limit, order_pks=order_pks)
        outcome.claimed = len(orders)
        _confirm_split(orders, outcome, failures)
    for pk, exc in failures:
        if isinstance(exc, TRANSIENT):
            outcome.retried.append(pk)
        else:
            outcome.failed.append(pk)
            # Left to the confirmation sweep, which publishes it again once it is stale, as a one-order task.
            logger.error("The confirmation of order pk=%s failed", pk, exc_info=exc)
    try:
        sent, owed = order_services.orders_confirmation_email_many(order_pks=outcome.confirmed)
    except Exception:
        # The orders are confirmed; their e-mails are left to the one-order task, which retries them.
        logger.warning("The confirmation e-mails of a batch failed", exc_info=True)
        sent, owed = [], list(outcome.confirmed)
    outcome.mailed = sent
    for pk in [*outcome.retried, *owed]:
        publish("payouts.tasks.order_confirm", pk)
    if order_pks is None and outcome.claimed >= limit:
        confirmations_nudge()  # more may be waiting
    return outcome


def _confirm_split(orders: list[Order], outcome: BatchOutcome, failures: list) -> None:
    """Confirm ``orders`` in a savepoint; on an error, roll it back and confirm each half the same way."""
    if not orders:
        return
    try:
        with transaction.atomic():
            confirmed, canceled, retried = _confirm(orders)
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
        _confirm_split(orders[:middle], outcome, failures)
        _confirm_split(orders[middle:], outcome, failures)
        return
    outcome.confirmed += confirmed
    outcome.canceled += canceled
    outcome.retried += retried


def _confirm(orders: list[Order]) -> tuple[list[int], list[int], list[int]]:
    """Charge and move ``orders`` (locked, ``accepted``): the pks confirmed, canceled, and left for a retry."""
    canceled: list[int] = []
    retried: list[int] = []
    payable = []
    for order in orders:
        if order.event.is_canceled:
            # The event was canceled between the order and its confirmation: never charge for it.
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
        **charges_for_orders(orders=[order for order in payable if order.livemode]),
        **test_charges_for_orders(orders=[order for order in payable if not order.livemode]),
    }
    charged = []
    for order in payable:
        answer = answers[order.pk]
        if isinstance(answer, PlatformUnavailable):
            retried.append(order.pk)  # the charge stays pending; the one-order task retries with backoff
            continue
        if isinstance(answer, Exception):
            raise answer  # refused for good: this order fails alone, as the one-order path fails
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
    order_services.orders_transition_many(
        orders=charged, to=S.AWAITING_TRANSFER, actor="system:confirmation", reason="Card charged"
    )
    return [order.pk for order in charged], canceled, retried
