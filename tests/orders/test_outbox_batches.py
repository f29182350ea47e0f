"""Notifications delivered in batches: a batch delivers each notification once per subscriber whatever fails in
its middle, retries only what it left, and is a no-op when repeated; the confirmation batch's notifications go
as one message, and the sweep publishes in batches too."""

from datetime import timedelta

import pytest
from django.conf import settings
from django.db import ProgrammingError, transaction
from django.utils import timezone

from orders import outbox, signals, tasks
from orders.models import Notification, NotificationReceipt, Order
from orders.services import orders_transition_many

from .conftest import create_order

S = Order.Status
MANY = "orders.tasks.notifications_deliver_many"


@pytest.fixture
def subscribers(monkeypatch):
    """Only the tests' subscribers: ``tests.first`` (told to fail on given notifications) and ``tests.after``."""
    monkeypatch.setattr(signals, "_subscribers", {})
    got: dict[str, list[int]] = {"tests.first": [], "tests.after": []}
    failing: dict[int, list[BaseException]] = {}

    def first(notification):
        errors = failing.get(notification.pk)
        if errors:
            raise errors.pop(0)
        got["tests.first"].append(notification.pk)

    signals.subscribe("tests.first", handler=first)
    signals.subscribe("tests.after", handler=lambda n: got["tests.after"].append(n.pk))
    return got, failing


@pytest.fixture
def published(monkeypatch):
    """``outbox.publish`` as a broker that keeps the messages: recorded, run only when the test says so."""
    queued: list[tuple[str, tuple, dict]] = []

    def keep(task, *args, **kwargs):
        queued.append((task, args, kwargs))
        return True

    monkeypatch.setattr(outbox, "publish", keep)
    return queued


def _created(partner, count: int) -> list[Notification]:
    orders = [create_order(partner) for _ in range(count)]  # no on_commit in the test's transaction
    return list(Notification.objects.filter(order__in=orders).order_by("pk"))


def _deliveries(notifications) -> list[list]:
    return [[n.pk, ["tests.first", "tests.after"]] for n in notifications]


def _run(queued) -> None:
    """Run what was published, in order, as a worker takes it (what it publishes meanwhile too)."""
    while queued:
        name, args, kwargs = queued.pop(0)
        kwargs.pop("countdown", None)
        getattr(tasks, name.rsplit(".", 1)[1]).apply(args=args, kwargs=kwargs).get()


def _later():
    return timezone.now() + timedelta(seconds=settings.NOTIFICATION_DISPATCH_GRACE_SECONDS + 1)


# --- the batched delivery -----------------------------------------------------------------------------------
@pytest.mark.django_db
@pytest.mark.embedded
def test_a_subscriber_failing_for_good_in_the_middle_leaves_the_others_delivered_once(
    partner, subscribers, caplog
):
    got, failing = subscribers
    n1, n2, n3 = _created(partner, 3)
    failing[n2.pk] = [ProgrammingError("relation does not exist")]
    assert tasks.notifications_deliver_many.apply(args=[_deliveries([n1, n2, n3])]).get() == 3
    assert got == {"tests.first": [n1.pk, n3.pk], "tests.after": [n1.pk, n2.pk, n3.pk]}
    assert "Subscriber tests.first failed on notification" in caplog.text
    receipts = set(NotificationReceipt.objects.values_list("notification_id", "subscriber"))
    assert (n2.pk, "tests.first") not in receipts and len(receipts) == 5
    # Every subscriber had its turn: the one that failed for good is left to its own sweep.
    assert not Notification.objects.filter(pk__in=[n1.pk, n2.pk, n3.pk], dispatched_at__isnull=True).exists()

    # The same message again (a redelivery): nothing runs twice.
    tasks.notifications_deliver_many.apply(args=[_deliveries([n1, n2, n3])]).get()
    assert got["tests.after"] == [n1.pk, n2.pk, n3.pk] and got["tests.first"] == [n1.pk, n3.pk, n2.pk]
    assert NotificationReceipt.objects.count() == 6


@pytest.mark.django_db
@pytest.mark.embedded
def test_a_transient_error_retries_only_the_notifications_left(partner, subscribers, monkeypatch):
    got, failing = subscribers
    n1, n2, n3 = _created(partner, 3)
    failing[n2.pk] = [ConnectionError("subscriber unreachable")]
    retried = []
    real_retry = tasks.notifications_deliver_many.retry

    def recording_retry(*args, **kwargs):
        retried.append(([pk for pk, _ in kwargs["exc"].remaining], kwargs["countdown"]))
        return real_retry(*args, **kwargs)

    monkeypatch.setattr(tasks.notifications_deliver_many, "retry", recording_retry)
    tasks.notifications_deliver_many.apply(args=[_deliveries([n1, n2, n3])])
    # The retry carries n2 (where the batch stopped) and n3, after a backoff; n1 was delivered and marked.
    assert [(pks, countdown >= 10) for pks, countdown in retried] == [([n2.pk, n3.pk], True)]
    assert got == {"tests.first": [n1.pk, n2.pk, n3.pk], "tests.after": [n1.pk, n2.pk, n3.pk]}
    assert NotificationReceipt.objects.count() == 6
    assert not Notification.objects.filter(pk__in=[n1.pk, n2.pk, n3.pk], dispatched_at__isnull=True).exists()


@pytest.mark.django_db
@pytest.mark.embedded
def test_the_old_one_notification_message_still_delivers(partner, subscribers):
    got, _ = subscribers
    (n1,) = _created(partner, 1)
    assert tasks.notifications_deliver.apply(args=[n1.pk, ["tests.first"]]).get() == ["tests.first"]
    assert tasks.notifications_deliver_many.apply(args=[[[n1.pk, ["tests.first"]]]]).get() == 1
    assert got["tests.first"] == [n1.pk]
    assert Notification.objects.get(pk=n1.pk).dispatched_at is not None


@pytest.mark.django_db
@pytest.mark.embedded
def test_the_confirmation_batchs_notifications_go_as_one_message(
    partner, subscribers, published, django_capture_on_commit_callbacks
):
    got, _ = subscribers
    pks = [create_order(partner).pk for _ in range(3)]
    published.clear()
    with django_capture_on_commit_callbacks(execute=True), transaction.atomic():
        orders = list(
            Order.objects.select_related("event").select_for_update().filter(pk__in=pks).order_by("pk")
        )
        orders_transition_many(orders=orders, to=S.AWAITING_TRANSFER, actor="system:test")
    changed = list(
        Notification.objects.filter(order_id__in=pks, type="order.status_changed")
        .order_by("pk")
        .values_list("pk", flat=True)
    )
    assert [(name, [pk for pk, _ in args[0]]) for name, args, _ in published] == [(MANY, changed)]
    _run(published)
    assert got["tests.after"] == changed
    assert not Notification.objects.filter(pk__in=changed, dispatched_at__isnull=True).exists()


@pytest.mark.django_db
@pytest.mark.embedded
def test_the_sweep_hands_over_in_batched_messages(partner, subscribers, published, monkeypatch):
    got, _ = subscribers
    monkeypatch.setattr(outbox, "DELIVERY_BATCH", 2)
    created = _created(partner, 3)
    assert outbox.notifications_dispatch_pending(now=_later()) == 3
    assert [(name, [pk for pk, _ in args[0]]) for name, args, _ in published] == [
        (MANY, [n.pk for n in created[:2]]),
        (MANY, [created[2].pk]),
    ]
    # On their way: the next beat leaves them to the worker.
    assert outbox.notifications_dispatch_pending(now=_later()) == 0
    _run(published)
    assert got["tests.after"] == [n.pk for n in created]
