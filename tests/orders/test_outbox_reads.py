"""A delivery batch's reads and marks, written in SQL whose text does not change with the batch's size: they
answer what the ORM's statements answered, and a batch of one runs the same statements as a batch of many."""

import re

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from orders import delivery, dispatch
from orders.models import Notification, NotificationReceipt, Order, OrderStatusHistory
from orders.services import orders_transition
from orders.signals import transition_of
from orders.transfers.decision.subscribers import _waiting_for_confirmation, orders_without_waiting_mail
from orders.transfers.files.services import _checks_its_pdf, _verified_unapplied, orders_without_file_work
from orders.transfers.models import InboundMessage, TicketFileCheck
from orders.webhooks.services import notifications_without_endpoints
from tests.conftest import make_partner

from .factories import make_orders

pytestmark = pytest.mark.django_db

FIELDS = [f.attname for f in Notification._meta.concrete_fields]
HISTORY_FIELDS = [f.attname for f in OrderStatusHistory._meta.concrete_fields]


def _confirmed(orders) -> None:
    orders_transition(orders=orders, to="awaiting_transfer", actor="system:test", reason="confirmed")


def _values(obj, names) -> dict:
    return {name: getattr(obj, name) for name in names}


def test_a_batch_reads_its_notifications_with_their_moves_as_the_orm_does():
    orders = make_orders(3)
    _confirmed(orders[:2])
    lost = Notification.objects.filter(order=orders[1], type="order.status_changed").get()
    # A move whose history row is gone (no database constraint holds it): read as no move, as the ORM's join.
    Notification.objects.filter(pk=lost.pk).update(transition_id=10**9)
    pks = [*Notification.objects.filter(order__in=orders).values_list("pk", flat=True), 10**9]

    read = delivery.notifications_with_transitions(pks)
    expected = Notification.objects.select_related("transition").in_bulk(pks)

    assert (
        read.keys() == expected.keys() and len(read) == 5
    )  # three creations, two moves; the unknown pk absent
    for pk, notification in read.items():
        orm = expected[pk]
        assert _values(notification, FIELDS) == _values(orm, FIELDS)
        assert notification.payload == orm.payload and isinstance(notification.payload, dict)
        assert notification.created_at.tzinfo is not None and not notification._state.adding
        moved, moved_orm = notification.transition, orm.transition  # no statement: both cached
        assert (moved is None) == (moved_orm is None)
        if moved is not None:
            assert _values(moved, HISTORY_FIELDS) == _values(moved_orm, HISTORY_FIELDS)
    assert read[lost.pk].transition is None
    assert read[lost.pk].transition_id == 10**9


def test_the_receipts_and_the_marks_of_a_batch():
    orders = make_orders(2)
    first, second = Notification.objects.filter(order__in=orders).order_by("pk")
    NotificationReceipt.objects.bulk_create(
        [
            NotificationReceipt(notification=first, subscriber="a"),
            NotificationReceipt(notification=first, subscriber="b"),
            NotificationReceipt(notification=second, subscriber="a"),
        ]
    )
    assert delivery.receipts_of([first.pk, second.pk, 10**9]) == {first.pk: {"a", "b"}, second.pk: {"a"}}
    assert delivery.receipts_of([]) == {}

    earlier = timezone.now() - timezone.timedelta(hours=1)
    Notification.objects.filter(pk=first.pk).update(dispatched_at=earlier)
    dispatch.mark_dispatched([first.pk, second.pk])
    first.refresh_from_db()
    second.refresh_from_db()
    assert first.dispatched_at == earlier  # a mark is never moved
    assert second.dispatched_at is not None and second.dispatched_at > earlier


def test_a_batch_of_one_runs_the_statements_of_a_batch_of_many():
    orders = make_orders(4)
    _confirmed(orders)
    moves = list(
        Notification.objects.filter(order__in=orders, type="order.status_changed")
        .order_by("pk")
        .values_list("pk", flat=True)
    )

    def statements(pks) -> list[str]:
        """The statements' text as sent, with their placeholders (a savepoint's name apart)."""
        sent: list[str] = []

        def record(execute, sql, params, many, context):
            sent.append(re.sub(r'"s\d+_x\d+"', '"savepoint"', sql))
            return execute(sql, params, many, context)

        with connection.execute_wrapper(record):
            delivery.notifications_deliver(deliveries=[(pk, None) for pk in pks])
        return sent

    one, many = statements(moves[:1]), statements(moves[1:])
    assert one == many
    assert Notification.objects.filter(pk__in=moves, dispatched_at__isnull=True).count() == 0


def test_the_idle_checks_read_what_each_subscriber_would_act_on():
    partner = make_partner(name="Idle Checks Resale").partner
    orders = make_orders(6, partner=partner)
    pdf, verified, applied, waiting, unauthentic, plain = orders
    pdf.delivery_type, pdf.ticket_file = "pdf", "tickets/seller.pdf"
    pdf.save(update_fields=["delivery_type", "ticket_file"])
    for order, applied_yet in ((verified, False), (applied, True)):
        TicketFileCheck.objects.create(
            order=order, file_sha256="0" * 64, verdict="verified", details={"applied": applied_yet}
        )
    TicketFileCheck.objects.create(order=plain, file_sha256="1" * 64, verdict="unparsed", details={})
    decided = {"decision": {"action": "waiting_for_confirmation"}}
    for order, authentic, stage in (
        (waiting, True, "deferred"),
        (unauthentic, False, "deferred"),
        (plain, True, "processed"),
    ):
        InboundMessage.objects.create(
            channel="smtp",
            recipient=order.transfer_address,
            sha256="2" * 64,
            order=order,
            verdicts=decided,
            authentic=authentic,
            stage=stage,
        )
    _confirmed(orders)
    notifications = list(
        delivery.notifications_with_transitions(
            list(
                Notification.objects.filter(order__in=orders, type="order.status_changed").values_list(
                    "pk", flat=True
                )
            )
        ).values()
    )
    moves = [transition_of(n) for n in notifications]
    everyone = {o.pk for o in orders}

    with CaptureQueriesContext(connection) as captured:
        assert orders_without_file_work(moves) == everyone - {pdf.pk, verified.pk}
        assert orders_without_waiting_mail(moves) == everyone - {waiting.pk}
        assert notifications_without_endpoints(notifications) == {n.pk for n in notifications}
    assert len(captured.captured_queries) == 3

    # The same orders as the ORM's definitions that the subscribers' handlers act on.
    with_file_work = {o.pk for o in Order.objects.filter(pk__in=everyone) if _checks_its_pdf(o)}
    with_file_work |= set(_verified_unapplied(everyone).values_list("order_id", flat=True))
    assert orders_without_file_work(moves) == everyone - with_file_work
    waiting_mail = set(_waiting_for_confirmation(everyone).values_list("order_id", flat=True))
    assert orders_without_waiting_mail(moves) == everyone - waiting_mail
