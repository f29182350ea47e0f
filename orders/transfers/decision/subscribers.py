"""The transfer detection's reactions to order changes (``orders.signals``).

A transfer e-mail can arrive before the order's confirmation ran (the seller is quick, the worker busy): it
is authenticated and matched at once, and waits (``deferred``) for the order to reach
``awaiting_transfer``. The confirmation's move (its ``Transition``) makes it due at once, so the order moves
on within a task's latency of its confirmation instead of at the next retry.
"""

from __future__ import annotations

from collections.abc import Iterable

from django.db import connection
from django.db.models import Q
from django.utils import timezone

from config.core.publish import publish
from orders.models import Order
from orders.signals import Transition
from orders.transfers.decision.services.decide import WAITING
from orders.transfers.models import InboundMessage

PROCESS_TASK = "orders.transfers.tasks.message_process"


def _waiting_for_confirmation(order_pks: Iterable[int]):
    """The messages of these orders that wait for their confirmation."""
    return InboundMessage.objects.filter(
        Q(verdicts__decision__action=WAITING),
        order_id__in=order_pks,
        stage=InboundMessage.Stage.DEFERRED,
        authentic=True,
    )


def waiting_messages_release(*, order_pk: int) -> list[int]:
    """Make the order's messages that wait for its confirmation due now and publish them; returns their pks."""
    pks = list(_waiting_for_confirmation([order_pk]).values_list("pk", flat=True))
    if pks:
        InboundMessage.objects.filter(pk__in=pks).update(next_attempt_at=timezone.now())
        for pk in pks:
            publish(PROCESS_TASK, pk)
    return pks


# ``_waiting_for_confirmation``'s orders, in SQL whose text does not change with the batch (the pks as one array
# parameter): prepared once per connection, where the ORM compiled it for every delivery batch.
_WAITING_ORDERS = (
    f'SELECT DISTINCT order_id FROM "{InboundMessage._meta.db_table}"'  # noqa: S608 - the model's table
    " WHERE order_id = ANY(%s::bigint[]) AND stage = %s AND authentic"
    " AND (verdicts #> '{decision,action}') = to_jsonb(%s::text)"
)


def orders_without_waiting_mail(transitions: list[Transition]) -> set[int]:
    """``on_order_status_changed``'s ``idle`` (``orders.signals``): the pks of the orders among these moves that
    have no message waiting for their confirmation; one statement for a delivery batch."""
    ids = {t.order_pk for t in transitions}
    with connection.cursor() as cursor:
        cursor.execute(_WAITING_ORDERS, [sorted(ids), str(InboundMessage.Stage.DEFERRED), WAITING])
        return ids - {pk for (pk,) in cursor.fetchall()}


def on_order_status_changed(transition: Transition) -> None:
    if transition.to_status == Order.Status.AWAITING_TRANSFER:
        waiting_messages_release(order_pk=transition.order_pk)
