"""Notifications delivered in batches: a batch delivers each notification once per subscriber whatever fails in
its middle, retries only what it left, and is a no-op when repeated; the confirmation batch's notifications go
as one message; the notifications written one at a time (an order's creation) are coalesced in Redis, a burst
publishing a few tasks and a lone order its task at once, and the sweep still recovers any lost publish."""

import random
import threading
import time
from collections import Counter
from datetime import timedelta

import pytest
import time_machine
from django.conf import settings
from django.core.cache import cache
from django.db import OperationalError, ProgrammingError, connection, transaction
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from config.core import rawsql
from config.core.retrying import MAX_RETRIES
from orders import delivery, dispatch, signals, tasks
from orders.models import Notification, NotificationReceipt, Order
from orders.services import orders_transition

from .conftest import create_order

S = Order.Status
MANY = "orders.tasks.notifications_deliver_many"
DRAIN = MANY  # without deliveries: it takes those waiting in Redis
ONE = "orders.tasks.notifications_deliver"


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
    """``dispatch.publish`` as a broker that keeps the messages: recorded, run only when the test says so."""
    queued: list[tuple[str, tuple, dict]] = []

    def keep(task, *args, **kwargs):
        queued.append((task, args, kwargs))
        return True

    monkeypatch.setattr(dispatch, "publish", keep)
    return queued


@pytest.fixture
def batch_retries(monkeypatch):
    """The retries of batched delivery tasks, as they are asked for: the pks each carries and its countdown."""
    retried: list[tuple[list[int], float]] = []
    real_retry = tasks.notifications_deliver_many.retry

    def recording_retry(*args, **kwargs):
        retried.append(([pk for pk, _ in kwargs["exc"].remaining], kwargs["countdown"]))
        return real_retry(*args, **kwargs)

    monkeypatch.setattr(tasks.notifications_deliver_many, "retry", recording_retry)
    return retried


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
def test_a_transient_error_sends_that_notification_alone_and_the_batch_goes_on(
    partner, subscribers, published, batch_retries
):
    got, failing = subscribers
    n1, n2, n3 = _created(partner, 3)
    failing[n2.pk] = [ConnectionError("subscriber unreachable")]
    assert tasks.notifications_deliver_many.apply(args=[_deliveries([n1, n2, n3])]).get() == 2
    # n3 was not held back: n2 left the batch, published alone after the first backoff; the batch is not retried.
    assert batch_retries == [] and got == {"tests.first": [n1.pk, n3.pk], "tests.after": [n1.pk, n3.pk]}
    assert [(name, args, kwargs["countdown"] >= 10) for name, args, kwargs in published] == [
        (ONE, (n2.pk, ["tests.first", "tests.after"]), True)
    ]
    assert list(Notification.objects.filter(dispatched_at__isnull=True).values_list("pk", flat=True)) == [
        n2.pk
    ]
    _run(published)
    assert got == {"tests.first": [n1.pk, n3.pk, n2.pk], "tests.after": [n1.pk, n3.pk, n2.pk]}
    assert NotificationReceipt.objects.count() == 6
    assert not Notification.objects.filter(pk__in=[n1.pk, n2.pk, n3.pk], dispatched_at__isnull=True).exists()


@pytest.mark.django_db
def test_a_database_error_still_retries_the_batch_with_only_the_notifications_left(
    partner, subscribers, batch_retries
):
    got, failing = subscribers
    n1, n2, n3 = _created(partner, 3)
    failing[n2.pk] = [OperationalError("the server closed the connection")]  # the next ones would fail too
    tasks.notifications_deliver_many.apply(args=[_deliveries([n1, n2, n3])])
    assert [(pks, countdown >= 10) for pks, countdown in batch_retries] == [([n2.pk, n3.pk], True)]
    assert got == {"tests.first": [n1.pk, n2.pk, n3.pk], "tests.after": [n1.pk, n2.pk, n3.pk]}
    assert not Notification.objects.filter(pk__in=[n1.pk, n2.pk, n3.pk], dispatched_at__isnull=True).exists()


@pytest.mark.django_db
def test_a_batch_records_its_receipts_and_marks_in_one_transaction(partner, subscribers):
    got, _ = subscribers
    notifications = _created(partner, 5)
    with CaptureQueriesContext(connection) as captured:
        assert tasks.notifications_deliver_many.apply(args=[_deliveries(notifications)]).get() == 5
    statements = [q["sql"] for q in captured.captured_queries]
    receipt_table = NotificationReceipt._meta.db_table
    # One INSERT for the ten receipts and one UPDATE for the five marks, not one commit per handler that ran.
    assert sum(sql.startswith(f'INSERT INTO "{receipt_table}"') for sql in statements) == 1
    assert sum(sql.startswith(f'UPDATE "{Notification._meta.db_table}"') for sql in statements) == 1
    assert NotificationReceipt.objects.count() == 10 and len(got["tests.after"]) == 5
    assert not Notification.objects.filter(dispatched_at__isnull=True).exists()


@pytest.mark.django_db
def test_a_record_that_fails_writes_the_receipts_and_the_marks_apart(partner, subscribers, monkeypatch):
    got, _ = subscribers
    n1, n2, n3 = _created(partner, 3)
    real_insert_many = rawsql.insert_many
    calls = []

    def failing_once(objs, **kwargs):
        if objs and isinstance(objs[0], NotificationReceipt):
            calls.append(len(objs))
            if len(calls) == 1:
                raise OperationalError("the server closed the connection")
        return real_insert_many(objs, **kwargs)

    monkeypatch.setattr(rawsql, "insert_many", failing_once)
    assert tasks.notifications_deliver_many.apply(args=[_deliveries([n1, n2, n3])]).get() == 3
    assert calls == [6, 6]  # the transaction's, rolled back, then the receipts alone
    assert NotificationReceipt.objects.count() == 6
    assert not Notification.objects.filter(pk__in=[n1.pk, n2.pk, n3.pk], dispatched_at__isnull=True).exists()
    # A redelivery runs nothing again: the receipts were written.
    tasks.notifications_deliver_many.apply(args=[_deliveries([n1, n2, n3])]).get()
    assert got == {"tests.first": [n1.pk, n2.pk, n3.pk], "tests.after": [n1.pk, n2.pk, n3.pk]}


@pytest.mark.django_db
def test_a_notification_alone_that_fails_keeps_the_receipts_of_the_handlers_before(partner, subscribers):
    got, _ = subscribers
    (n1,) = _created(partner, 1)
    calls = {"n": 0}

    def after(notification):
        calls["n"] += 1
        if calls["n"] == 1:
            raise ConnectionError("subscriber unreachable")
        got["tests.after"].append(notification.pk)

    signals.subscribe("tests.after", handler=after)
    with pytest.raises(ConnectionError):
        delivery.notifications_deliver(deliveries=[(n1.pk, ["tests.first", "tests.after"])], alone=True)
    assert list(NotificationReceipt.objects.values_list("subscriber", flat=True)) == ["tests.first"]
    # The retry runs only the handler that failed.
    assert delivery.notifications_deliver(
        deliveries=[(n1.pk, ["tests.first", "tests.after"])], alone=True
    ) == {n1.pk: ["tests.after"]}
    assert got == {"tests.first": [n1.pk], "tests.after": [n1.pk]}


@pytest.mark.django_db
def test_the_old_one_notification_message_still_delivers(partner, subscribers):
    got, _ = subscribers
    (n1,) = _created(partner, 1)
    assert tasks.notifications_deliver.apply(args=[n1.pk, ["tests.first"]]).get() == ["tests.first"]
    assert tasks.notifications_deliver_many.apply(args=[[[n1.pk, ["tests.first"]]]]).get() == 1
    assert got["tests.first"] == [n1.pk]
    assert Notification.objects.get(pk=n1.pk).dispatched_at is not None


@pytest.mark.django_db
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
        orders_transition(orders=orders, to=S.AWAITING_TRANSFER, actor="system:test")
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
def test_the_sweep_hands_over_in_batched_messages(partner, subscribers, published, monkeypatch):
    got, _ = subscribers
    monkeypatch.setattr(dispatch, "DELIVERY_BATCH", 2)
    created = _created(partner, 3)
    assert dispatch.notifications_dispatch_pending(now=_later()) == 3
    assert [(name, [pk for pk, _ in args[0]]) for name, args, _ in published] == [
        (MANY, [n.pk for n in created[:2]]),
        (MANY, [created[2].pk]),
    ]
    # On their way: the next beat leaves them to the worker.
    assert dispatch.notifications_dispatch_pending(now=_later()) == 0
    _run(published)
    assert got["tests.after"] == [n.pk for n in created]


# --- the notifications written one at a time, coalesced in Redis ------------------------------------------
@pytest.mark.django_db
def test_a_burst_of_orders_publishes_one_task_until_it_starts(
    partner, subscribers, published, django_capture_on_commit_callbacks
):
    got, _ = subscribers
    orders = []
    for _ in range(10):
        with django_capture_on_commit_callbacks(execute=True):
            orders.append(create_order(partner))
    # One task for ten orders, taking the list once the gathering window has passed.
    assert [(name, kwargs) for name, _, kwargs in published] == [
        (DRAIN, {"countdown": settings.NOTIFICATION_DELIVERY_GATHER_SECONDS})
    ]
    created = list(Notification.objects.filter(order__in=orders).order_by("pk").values_list("pk", flat=True))
    # Each is known to be on its way: the sweep leaves them to the task.
    assert dispatch.notifications_dispatch_pending(now=_later()) == 0
    _run(published)
    assert got == {"tests.first": created, "tests.after": created}
    assert not Notification.objects.filter(pk__in=created, dispatched_at__isnull=True).exists()
    # The task took them all: the next order publishes a task of its own.
    with django_capture_on_commit_callbacks(execute=True):
        create_order(partner)
    assert [name for name, _, _ in published] == [DRAIN]


@pytest.mark.django_db
def test_without_a_gathering_window_the_task_takes_the_list_at_once(
    partner, subscribers, published, settings, django_capture_on_commit_callbacks
):
    settings.NOTIFICATION_DELIVERY_GATHER_SECONDS = 0
    with django_capture_on_commit_callbacks(execute=True):
        create_order(partner)
    # A countdown of 0: publish sends it at once.
    assert [(name, kwargs) for name, _, kwargs in published] == [(DRAIN, {"countdown": 0})]


@pytest.mark.django_db
def test_a_task_takes_at_most_a_batch_and_publishes_the_next(
    partner, subscribers, published, monkeypatch, django_capture_on_commit_callbacks
):
    got, _ = subscribers
    monkeypatch.setattr(dispatch, "DELIVERY_BATCH", 3)
    orders = []
    for _ in range(7):
        with django_capture_on_commit_callbacks(execute=True):
            orders.append(create_order(partner))
    assert [name for name, _, _ in published] == [DRAIN]
    ran = []
    while published:
        ran.append(published[0][0])
        _run([published.pop(0)])
    created = list(Notification.objects.filter(order__in=orders).order_by("pk").values_list("pk", flat=True))
    assert got["tests.after"] == created
    assert ran == [DRAIN, DRAIN, DRAIN]  # 3, 3 and 1: each full task published the next


@pytest.mark.django_db
def test_a_lone_order_is_delivered_at_once(
    partner, subscribers, monkeypatch, django_capture_on_commit_callbacks
):
    got, _ = subscribers
    names = []
    real_publish = dispatch.publish

    def recording(task, *args, **kwargs):
        names.append(task)
        return real_publish(task, *args, **kwargs)  # in process: the task runs as it is published

    monkeypatch.setattr(dispatch, "publish", recording)
    with django_capture_on_commit_callbacks(execute=True):
        order = create_order(partner)
    notification = Notification.objects.get(order=order)
    # Published as the creation committed, not after a wait for others.
    assert names == [DRAIN]
    assert got["tests.first"] == [notification.pk]
    assert notification.dispatched_at is not None


@pytest.mark.django_db
def test_a_transient_error_in_a_coalesced_task_sends_that_one_alone_not_the_list(
    partner, subscribers, published, django_capture_on_commit_callbacks
):
    got, failing = subscribers
    orders = []
    for _ in range(3):
        with django_capture_on_commit_callbacks(execute=True):
            orders.append(create_order(partner))
    n1, n2, n3 = Notification.objects.filter(order__in=orders).order_by("pk")
    failing[n2.pk] = [ConnectionError("subscriber unreachable")]
    assert [(name, args) for name, args, _ in published] == [(DRAIN, ())]
    published.clear()
    tasks.notifications_deliver_many.apply()
    assert got == {"tests.first": [n1.pk, n3.pk], "tests.after": [n1.pk, n3.pk]}
    # Only n2 is published again (with its subscribers), not a task taking the list.
    assert [(name, args[0]) for name, args, _ in published] == [(ONE, n2.pk)]
    _run(published)
    assert got["tests.after"] == [n1.pk, n3.pk, n2.pk]


@pytest.mark.django_db
def test_the_sweep_recovers_a_publish_the_broker_refused(
    partner, subscribers, monkeypatch, django_capture_on_commit_callbacks
):
    got, _ = subscribers
    real_publish = dispatch.publish
    monkeypatch.setattr(dispatch, "publish", lambda task, *args, **kwargs: False)
    with django_capture_on_commit_callbacks(execute=True):
        order = create_order(partner)
    notification = Notification.objects.get(order=order)
    # Nothing on its way: no note for the notification, and the next one tries to publish again.
    assert cache.get(dispatch._on_the_way_key(notification.pk)) is None
    assert cache.get(dispatch.DRAIN_NOTE_KEY) is None
    monkeypatch.setattr(dispatch, "publish", real_publish)  # the broker is back (tasks in process here)
    with time_machine.travel(_later()):
        assert tasks.notifications_dispatch_pending() == 1
    assert got["tests.first"] == [notification.pk]
    # Still in the list: a later task finds it, and its subscribers skip it by their receipts.
    assert tasks.notifications_deliver_many.apply().get() == 1
    assert got["tests.first"] == [notification.pk]


@pytest.mark.django_db
def test_the_sweep_recovers_a_task_lost_with_redis(
    partner, subscribers, published, django_capture_on_commit_callbacks
):
    got, _ = subscribers
    with django_capture_on_commit_callbacks(execute=True):
        order = create_order(partner)
    assert [name for name, _, _ in published] == [DRAIN]
    published.clear()  # the message is lost with Redis, and the list and the notes with it
    cache.clear()
    assert dispatch.notifications_dispatch_pending(now=_later()) == 1
    _run(published)
    assert got["tests.first"] == [Notification.objects.get(order=order).pk]


@pytest.mark.django_db
def test_the_sweep_recovers_a_task_lost_once_its_note_expired(
    partner, subscribers, published, django_capture_on_commit_callbacks
):
    got, _ = subscribers
    with django_capture_on_commit_callbacks(execute=True):
        order = create_order(partner)
    notification = Notification.objects.get(order=order)
    published.clear()  # the task is lost (a worker died with it), Redis kept the list and the note
    assert dispatch.notifications_dispatch_pending(now=_later()) == 0  # trusted to be on its way
    cache.delete(dispatch._on_the_way_key(notification.pk))  # NOTIFICATION_REDISPATCH_SECONDS later
    assert dispatch.notifications_dispatch_pending(now=_later()) == 1
    _run(published)
    assert got["tests.first"] == [notification.pk]


@pytest.mark.django_db
def test_while_redis_does_not_answer_each_notification_is_published_alone(
    partner, subscribers, published, monkeypatch, django_capture_on_commit_callbacks
):
    """The production fallback when Redis fails (docs/architecture/caching.md "When Redis fails")."""
    got, _ = subscribers

    def down(backend, pk):
        raise ConnectionError("redis is down")

    monkeypatch.setattr(dispatch, "_pending_add", down)
    with django_capture_on_commit_callbacks(execute=True):
        order = create_order(partner)
    notification = Notification.objects.get(order=order)
    assert [(name, args) for name, args, _ in published] == [
        ("orders.tasks.notifications_deliver", (notification.pk, ["tests.first", "tests.after"]))
    ]
    assert cache.get(dispatch._on_the_way_key(notification.pk)) == 1


# --- real threads: producers and tasks at once, on PostgreSQL and Redis --------------------------------------
@pytest.mark.django_db(transaction=True)
def test_notifications_added_while_tasks_take_the_list_are_each_delivered_once(partner, monkeypatch):
    monkeypatch.setattr(signals, "_subscribers", {})
    seen: Counter[int] = Counter()
    lock = threading.Lock()

    def record(notification):
        with lock:
            seen[notification.pk] += 1

    signals.subscribe("tests.threads", handler=record)
    monkeypatch.setattr(dispatch, "notification_dispatch_after_commit", lambda **kwargs: None)
    pks = [n.pk for n in _created(partner, 60)]
    queue: list[str] = []
    queue_lock = threading.Lock()
    producing = threading.Event()
    producing.set()

    def keep(task, *args, **kwargs):
        with queue_lock:
            queue.append(task)
        return True

    monkeypatch.setattr(dispatch, "publish", keep)

    def produce(part):
        try:
            for pk in part:
                assert dispatch.notification_dispatch_coalesced(
                    notification_pk=pk, notification_type="order.created", order_status="accepted"
                )
                time.sleep(random.uniform(0, 0.01))  # now bursts, now a quiet list that a task just emptied
        finally:
            connection.close()

    def work():
        try:
            while producing.is_set() or queue:
                with queue_lock:
                    task = queue.pop(0) if queue else None
                if task is not None:
                    assert task == DRAIN
                    # Not .get(): after a test that started a real worker, Celery refuses a join outside it.
                    result = tasks.notifications_deliver_many.apply()
                    assert result.successful(), result.traceback
        finally:
            connection.close()

    producers = [threading.Thread(target=produce, args=(pks[i::3],)) for i in range(3)]
    workers = [threading.Thread(target=work) for _ in range(2)]
    for thread in [*workers, *producers]:
        thread.start()
    for thread in producers:
        thread.join()
    producing.clear()
    for thread in workers:
        thread.join()
    # Nothing left waiting without a task on its way, and every notification delivered exactly once.
    assert seen == Counter({pk: 1 for pk in pks})
    assert not Notification.objects.filter(pk__in=pks, dispatched_at__isnull=True).exists()


# --- a real broker and worker: the retry carries only what was left ------------------------------------------
@pytest.fixture
def real_broker(monkeypatch):
    """Tasks go through the broker to a worker thread (not in-process); retries after 0.2 s."""
    from celery.contrib.testing.worker import start_worker

    from config.celery import app as celery_app

    monkeypatch.setattr("config.core.retrying.task_retry_seconds", lambda retries: 0.2)
    celery_app.conf.task_always_eager = False
    with celery_app.connection_for_write() as conn:
        conn.default_channel.queue_purge("celery")
    return lambda: start_worker(celery_app, pool="solo", perform_ping_check=False, shutdown_timeout=10)


def _wait_for(predicate, timeout: float = 20.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.05)
    return predicate()


@pytest.mark.django_db(transaction=True)
def test_through_a_worker_a_notification_that_keeps_failing_leaves_its_batch_and_the_others_go_on_time(
    partner, subscribers, real_broker, batch_retries, monkeypatch
):
    """Through Redis and a worker: one notification of a burst fails for now on every try. The batch delivers
    the others in its one run (it is never retried); the failing one is tried on its own with its own backoff
    until its retries are spent, then waits, undispatched, for the sweep; the others never wait for it."""
    got, failing = subscribers
    sent = []
    real_publish = dispatch.publish
    monkeypatch.setattr(
        dispatch, "publish", lambda task, *a, **k: sent.append(task) or real_publish(task, *a, **k)
    )
    orders = [create_order(partner) for _ in range(6)]  # each commits as it is created, with no worker yet
    pks = list(Notification.objects.filter(order__in=orders).order_by("pk").values_list("pk", flat=True))
    stuck, others = pks[2], [pk for pk in pks if pk != pks[2]]
    failing[stuck] = [ConnectionError("subscriber unreachable") for _ in range(100)]
    assert sent == [DRAIN]
    with real_broker():
        assert _wait_for(lambda: got["tests.after"] == others, timeout=10)
        tries_when_the_others_were_delivered = 100 - len(failing[stuck])
        # Tried in the batch, then alone once and MAX_RETRIES times more.
        assert _wait_for(lambda: 100 - len(failing[stuck]) == 2 + MAX_RETRIES, timeout=30)
        time.sleep(0.5)  # its retries are spent: no further try
    assert tries_when_the_others_were_delivered <= 1
    assert 100 - len(failing[stuck]) == 2 + MAX_RETRIES
    assert batch_retries == []  # the batch itself never waited for a retry
    assert got == {"tests.first": others, "tests.after": others}
    assert sent == [DRAIN, ONE]
    assert list(
        Notification.objects.filter(pk__in=pks, dispatched_at__isnull=True).values_list("pk", flat=True)
    ) == [stuck]
    assert NotificationReceipt.objects.filter(notification_id__in=pks).count() == 10


@pytest.mark.django_db(transaction=True)
def test_through_a_worker_a_burst_is_delivered_once_and_a_failing_one_alone_is_retried(
    partner, subscribers, real_broker
):
    got, failing = subscribers
    orders = [create_order(partner) for _ in range(5)]
    pks = list(Notification.objects.filter(order__in=orders).order_by("pk").values_list("pk", flat=True))
    failing[pks[2]] = [ConnectionError("subscriber unreachable") for _ in range(3)]
    with real_broker():
        assert _wait_for(lambda: len(got["tests.after"]) == 5 and len(got["tests.first"]) == 5)
        assert _wait_for(
            lambda: not Notification.objects.filter(pk__in=pks, dispatched_at__isnull=True).exists()
        )
    expected = [*pks[:2], *pks[3:], pks[2]]  # the one that failed three times comes last, alone
    assert got == {"tests.first": expected, "tests.after": expected}
    assert NotificationReceipt.objects.filter(notification_id__in=pks).count() == 10


# --- a subscriber with nothing to do ------------------------------------------------------------------------
@pytest.mark.django_db
def test_a_subscriber_is_asked_once_per_batch_and_not_called_where_it_has_nothing_to_do(partner, subscribers):
    got, _ = subscribers
    n1, n2, n3 = _created(partner, 3)
    asked: list[list[int]] = []

    def idle(notifications):
        asked.append([n.pk for n in notifications])
        return {n2.pk}

    signals.subscribe("tests.after", handler=lambda n: got["tests.after"].append(n.pk), idle=idle)
    assert tasks.notifications_deliver_many.apply(args=[_deliveries([n1, n2, n3])]).get() == 3
    assert asked == [[n1.pk, n2.pk, n3.pk]]
    assert got == {"tests.first": [n1.pk, n2.pk, n3.pk], "tests.after": [n1.pk, n3.pk]}
    # Recorded as handled: a redelivery asks nothing and runs nothing.
    assert NotificationReceipt.objects.count() == 6
    tasks.notifications_deliver_many.apply(args=[_deliveries([n1, n2, n3])]).get()
    assert len(asked) == 1 and got["tests.after"] == [n1.pk, n3.pk]


@pytest.mark.django_db
def test_a_subscriber_that_cannot_tell_what_it_has_to_do_has_its_handler_called_for_each(
    partner, subscribers, caplog
):
    got, _ = subscribers
    n1, n2 = _created(partner, 2)

    def idle(notifications):
        raise OperationalError("the server closed the connection")

    signals.subscribe("tests.after", handler=lambda n: got["tests.after"].append(n.pk), idle=idle)
    assert tasks.notifications_deliver_many.apply(args=[_deliveries([n1, n2])]).get() == 2
    assert got == {"tests.first": [n1.pk, n2.pk], "tests.after": [n1.pk, n2.pk]}
    assert "could not tell what it has to do" in caplog.text
