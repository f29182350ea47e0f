"""The notification outbox: one notification per change, in the change's transaction, handed to every
subscriber after commit exactly once per subscriber, re-published when the broker lost it, purged after 30 days."""

from datetime import timedelta

import pytest
import time_machine
from django.conf import settings
from django.db import transaction
from django.utils import timezone

from orders import delivery, dispatch, outbox, signals, tasks
from orders.models import Notification, NotificationReceipt, Order
from orders.services import order_cancel, order_transition, orders_expire_overdue
from tests.confirming import post_confirmed

from .conftest import create_order, order_form, post_order

pytestmark = pytest.mark.django_db

S = Order.Status


@pytest.fixture
def recorder():
    """A subscriber of every type that records what it receives (and can be told to fail)."""
    received: list[tuple[str, str]] = []
    fail = {"times": 0, "error": ConnectionError("subscriber unreachable")}

    def handler(notification: Notification) -> None:
        if fail["times"]:
            fail["times"] -= 1
            raise fail["error"]
        received.append((notification.notification_id, notification.type))

    signals.subscribe("tests.recorder", handler=handler)
    yield received, fail
    signals.unsubscribe("tests.recorder")


def test_every_transition_writes_exactly_one_notification_with_its_previous_status(partner):
    order = create_order(partner)
    for step in [Order.Status.AWAITING_TRANSFER, *Order.PAYOUT_PATH]:
        order = order_transition(order=order, to=step, actor="staff:test")
    rows = list(Notification.objects.filter(order=order).order_by("id"))
    assert [
        (n.type, n.payload["data"]["previous_status"], n.payload["data"]["order"]["status"]) for n in rows
    ] == [
        ("order.created", None, "accepted"),
        ("order.status_changed", "accepted", "awaiting_transfer"),
        ("order.status_changed", "awaiting_transfer", "ticket_received"),
        ("order.status_changed", "ticket_received", "payout_in_process"),
        ("order.status_changed", "payout_in_process", "scheduled"),
        ("order.status_changed", "scheduled", "paid"),
    ]
    for n in rows:
        assert n.partner_id == partner.pk and n.livemode is True
        assert n.payload["id"] == n.notification_id and n.notification_id.startswith("ntf_")
        assert n.payload["type"] == n.type and n.payload["livemode"] is True
        assert n.payload["created_at"].endswith("Z")
        assert n.payload["data"]["reason"] is None
        assert (
            n.payload["data"]["order"]["status_history"][-1]["to_status"]
            == n.payload["data"]["order"]["status"]
        )


def test_a_rolled_back_transition_writes_no_notification(partner):
    order = create_order(partner)
    before = Notification.objects.count()
    with pytest.raises(RuntimeError), transaction.atomic():
        order_transition(order=order, to=S.CANCELED, actor="staff:test")
        raise RuntimeError("the surrounding work failed")
    assert Notification.objects.count() == before
    assert Order.objects.get(pk=order.pk).status == S.ACCEPTED


def test_an_illegal_transition_writes_no_notification(partner):
    order = create_order(partner)
    order_transition(order=order, to=S.CANCELED, actor="staff:test")
    count = Notification.objects.count()
    with pytest.raises(Exception):  # noqa: B017 - IllegalTransition
        order_transition(order=order, to=S.AWAITING_TRANSFER, actor="staff:test")
    assert Notification.objects.count() == count


def test_the_payload_is_the_order_as_get_returns_it(auth_client, partner, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        data = post_order(auth_client, order_form_for(partner)).json()["data"]
    detail = auth_client.get(f"/v1/orders/{data['order_id']}").json()["data"]
    last = Notification.objects.filter(order__order_id=data["order_id"]).order_by("-id").first()
    assert last.type == "order.status_changed"  # the confirmation moved it to awaiting_transfer
    assert last.payload["data"]["order"] == detail
    created = Notification.objects.filter(order__order_id=data["order_id"], type="order.created").get()
    assert created.payload["data"]["order"]["status"] == "accepted"
    assert created.payload["data"]["order"]["status_history"] == detail["status_history"][:1]


def order_form_for(partner):
    from tests.orders.factories import order_row
    from tests.quotes.factories import QuoteFactory

    return order_form(QuoteFactory(partner=partner, row=order_row(available_quantity=10), quantity=2))


@pytest.mark.parametrize(
    "how,expected",
    [
        ("partner", "canceled_by_partner"),
        ("staff", "canceled_by_staff"),
        ("event", "event_canceled"),
    ],
)
def test_a_cancel_carries_its_machine_reason_and_the_history_its_human_one(
    partner, admin_client, how, expected
):
    order = create_order(partner)
    if how == "partner":
        order_cancel(order=order, actor="partner:test", reason="Seller changed their mind")
    elif how == "staff":
        response = post_confirmed(
            admin_client,
            "/admin/orders/order/",
            {
                "action": "cancel_orders",
                "_selected_action": [order.pk],
                "confirmed": "yes",
                "reason": "Seller phoned",
            },
        )
        assert response.status_code == 302
    else:
        from catalog import services as catalog_services

        catalog_services.event_cancel(event=order.event)
        from orders.services import orders_cancel_for_canceled_events

        orders_cancel_for_canceled_events(event_pk=order.event_id)
    last = Notification.objects.filter(order=order).order_by("-id").first()
    assert last.payload["data"]["order"]["status"] == "canceled"
    assert last.payload["data"]["reason"] == expected
    assert last.payload["data"]["order"]["status_history"][-1]["reason"]  # the human reason stays in history


def test_an_expiry_carries_in_hand_date_passed(partner):
    order = create_order(partner)
    order = order_transition(order=order, to=S.AWAITING_TRANSFER, actor="staff:test")
    with time_machine.travel(timezone.now() + timedelta(days=40)):
        assert orders_expire_overdue() == [order.order_id]
    last = Notification.objects.filter(order=order).order_by("-id").first()
    assert (last.payload["data"]["previous_status"], last.payload["data"]["reason"]) == (
        "awaiting_transfer",
        "in_hand_date_passed",
    )


def test_a_declined_card_carries_card_declined(db, django_capture_on_commit_callbacks):
    from rest_framework.test import APIClient

    from payouts.services.methods import payment_methods_create_sandbox
    from tests.conftest import issue_token, make_partner

    creds = make_partner(name="Declines Inc", payment_methods=False)
    payment_methods_create_sandbox(partner=creds.partner, card_number="4000000000000002")
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {issue_token(client, creds)}")
    with django_capture_on_commit_callbacks(execute=True):
        order_id = post_order(client, order_form_for(creds.partner)).json()["data"]["order_id"]
    last = Notification.objects.filter(order__order_id=order_id).order_by("-id").first()
    assert last.payload["data"]["order"]["status"] == "canceled"
    assert last.payload["data"]["reason"] == "card_declined"


def test_a_subscriber_gets_each_notification_once_even_when_delivered_twice(partner, recorder):
    received, _ = recorder
    order = create_order(partner)
    notification = Notification.objects.get(order=order)
    assert delivery.notification_deliver(notification_pk=notification.pk, subscriber_name="tests.recorder")
    assert not delivery.notification_deliver(
        notification_pk=notification.pk, subscriber_name="tests.recorder"
    )
    tasks.notifications_deliver.apply(args=[notification.pk, ["tests.recorder"]])
    assert received == [(notification.notification_id, "order.created")]
    assert (
        NotificationReceipt.objects.filter(notification=notification, subscriber="tests.recorder").count()
        == 1
    )


def test_a_failing_subscriber_is_retried_without_running_another_again(partner, recorder, monkeypatch):
    received, fail = recorder
    other = []
    signals.subscribe("tests.other", handler=lambda n: other.append(n.notification_id))
    try:
        order = create_order(partner)
        notification = Notification.objects.get(order=order)
        fail["times"] = 2
        retries = []
        real_retry = tasks.notifications_deliver.retry

        def recording_retry(*args, **kwargs):
            retries.append(kwargs.get("countdown"))
            return real_retry(*args, **kwargs)

        monkeypatch.setattr(tasks.notifications_deliver, "retry", recording_retry)
        dispatch.notification_dispatch(notification_pk=notification.pk, notification_type=notification.type)
        # Each failure retries the delivery after a backoff; the subscribers that ran before it (the service's
        # own) skip it by their receipts, and the one after it runs once, when the failing one has passed.
        assert len(retries) == 2 and retries[0] >= 10
        assert received == [(notification.notification_id, "order.created")]
        assert other == [notification.notification_id]
        notification.refresh_from_db()
        assert notification.dispatched_at is not None
    finally:
        signals.unsubscribe("tests.other")


def test_a_subscriber_filtering_by_type_gets_only_those(partner):
    got = []
    signals.subscribe("tests.created_only", handler=lambda n: got.append(n.type), types=["order.created"])
    try:
        order = create_order(partner)
        order_cancel(order=order, actor="partner:test")
        for n in Notification.objects.filter(order=order):
            dispatch.notification_dispatch(notification_pk=n.pk, notification_type=n.type)
        assert got == ["order.created"]
    finally:
        signals.unsubscribe("tests.created_only")


def test_the_sweeper_hands_over_only_what_was_not_dispatched_past_the_grace(partner, recorder, monkeypatch):
    received, _ = recorder
    order = create_order(partner)  # no on_commit in this test's transaction: never dispatched
    notification = Notification.objects.get(order=order)
    assert notification.dispatched_at is None
    assert tasks.notifications_dispatch_pending() == 0  # within the grace: its message may be on the way
    later = timezone.now() + timedelta(seconds=settings.NOTIFICATION_DISPATCH_GRACE_SECONDS + 1)
    with time_machine.travel(later):
        assert tasks.notifications_dispatch_pending() == 1
        assert tasks.notifications_dispatch_pending() == 0
    assert (notification.notification_id, "order.created") in received


def test_the_sweeper_stops_at_a_dead_broker_and_leaves_the_rows_for_the_next_beat(partner, monkeypatch):
    create_order(partner)
    create_order(partner)
    attempts = []

    def dead(task, *args, **kwargs):
        attempts.append(args)
        return False

    monkeypatch.setattr(dispatch, "publish", dead)
    later = timezone.now() + timedelta(seconds=settings.NOTIFICATION_DISPATCH_GRACE_SECONDS + 1)
    assert dispatch.notifications_dispatch_pending(now=later) == 0
    assert len(attempts) == 1  # not one slow failed publish per row
    assert Notification.objects.filter(dispatched_at__isnull=True).count() == 2


def test_notifications_older_than_30_days_are_purged_in_batches(partner):
    old = create_order(partner)
    order_cancel(order=old, actor="partner:test")
    Notification.objects.filter(order=old).update(created_at=timezone.now() - timedelta(days=31))
    NotificationReceipt.objects.create(
        notification=Notification.objects.filter(order=old).first(), subscriber="x"
    )
    recent = create_order(partner)
    Notification.objects.filter(order=recent).update(created_at=timezone.now() - timedelta(days=29))

    assert outbox.notifications_purge(batch=1) == 2
    assert not Notification.objects.filter(order=old).exists()
    assert Notification.objects.filter(order=recent).count() == 1
    assert tasks.notifications_purge() == 0
    assert "orders.tasks.notifications_purge" in {e["task"] for e in settings.CELERY_BEAT_SCHEDULE.values()}
    assert "orders.tasks.notifications_dispatch_pending" in {
        e["task"] for e in settings.CELERY_BEAT_SCHEDULE.values()
    }


def test_the_creation_notification_shows_the_order_as_read_back(partner):
    """order.created renders the rows just inserted, without reading them back: the same object as a read."""
    order = create_order(partner, seller_email="seller@example.com", partner_reference="ref-7")
    notification = Notification.objects.get(order=order, type="order.created")
    assert notification.payload["data"]["order"] == outbox.order_payload(order=Order.objects.get(pk=order.pk))


def test_the_order_output_is_the_serializers(partner):
    from orders.output import order_detail_output, order_output
    from orders.serializers import OrderDetailSerializer, OrderSerializer

    order = Order.objects.select_related("event").get(pk=create_order(partner).pk)
    assert order_output(order) == OrderSerializer(order).data
    order.history_rows = list(order.status_history.order_by("at", "id"))
    assert order_detail_output(order) == OrderDetailSerializer(order).data


def test_one_delivery_per_notification_to_the_subscribers_that_want_its_status(
    partner, monkeypatch, django_capture_on_commit_callbacks
):
    got: dict[str, list[str]] = {"awaiting": [], "every": []}
    signals.subscribe(
        "tests.awaiting",
        handler=lambda n: got["awaiting"].append(n.payload["data"]["order"]["status"]),
        types=["order.status_changed"],
        statuses=["awaiting_transfer"],
    )
    signals.subscribe(
        "tests.every", handler=lambda n: got["every"].append(n.payload["data"]["order"]["status"])
    )
    published: list[tuple[int, list[str]]] = []
    real_deliver_one = delivery._deliver_one

    def recording_deliver_one(notification, names, handled, receipts, **kwargs):
        published.append((notification.pk, list(names)))
        return real_deliver_one(notification, names, handled, receipts, **kwargs)

    monkeypatch.setattr(delivery, "_deliver_one", recording_deliver_one)
    try:
        # The confirmation (in-process here) moves the new order to awaiting_transfer; then it is canceled.
        with django_capture_on_commit_callbacks(execute=True):
            order = create_order(partner)
        order.refresh_from_db()
        assert order.status == S.AWAITING_TRANSFER
        with django_capture_on_commit_callbacks(execute=True):
            order_cancel(order=order, actor="partner:test")
    finally:
        signals.unsubscribe("tests.awaiting")
        signals.unsubscribe("tests.every")
    notifications = list(Notification.objects.filter(order=order).order_by("id"))
    # One delivery per notification, whatever the number of subscribers.
    assert [pk for pk, _ in published] == [n.pk for n in notifications]
    names = [set(n) for _, n in published]
    assert all("tests.every" in n for n in names)
    assert ["tests.awaiting" in n for n in names] == [False, True, False]
    assert got == {"awaiting": ["awaiting_transfer"], "every": ["accepted", "awaiting_transfer", "canceled"]}
    assert not Notification.objects.filter(order=order, dispatched_at__isnull=True).exists()


def test_the_sweep_leaves_out_the_subscribers_of_other_statuses_too(partner):
    got = []
    signals.subscribe("tests.canceled_only", handler=lambda n: got.append(n.type), statuses=["canceled"])
    try:
        order = create_order(partner)  # never dispatched: no on_commit in the test's transaction
        later = timezone.now() + timedelta(seconds=settings.NOTIFICATION_DISPATCH_GRACE_SECONDS + 1)
        with time_machine.travel(later):
            assert tasks.notifications_dispatch_pending() == 1
        assert got == []
        order_cancel(order=order, actor="partner:test")
        # The confirmation's awaiting_transfer (written by the delivery above) and the cancel.
        with time_machine.travel(later + timedelta(seconds=settings.NOTIFICATION_DISPATCH_GRACE_SECONDS + 1)):
            assert tasks.notifications_dispatch_pending() == 2
        assert got == ["order.status_changed"]
        assert not NotificationReceipt.objects.filter(
            subscriber="tests.canceled_only", notification__type="order.created"
        ).exists()
    finally:
        signals.unsubscribe("tests.canceled_only")


def test_a_database_failing_before_the_subscribers_run_retries_the_whole_delivery(
    partner, recorder, monkeypatch
):
    from django.db import OperationalError

    received, _ = recorder
    order = create_order(partner)
    notification = Notification.objects.get(order=order)
    real = delivery.notifications_deliver
    calls = {"n": 0}

    def flaky(**kwargs):
        calls["n"] += 1
        if calls["n"] == 1:
            raise OperationalError("server closed the connection unexpectedly")
        return real(**kwargs)

    retries = []
    real_retry = tasks.notifications_deliver.retry

    def recording_retry(*args, **kwargs):
        retries.append(kwargs.get("countdown"))
        return real_retry(*args, **kwargs)

    monkeypatch.setattr(delivery, "notifications_deliver", flaky)
    monkeypatch.setattr(tasks.notifications_deliver, "retry", recording_retry)
    tasks.notifications_deliver.apply(args=[notification.pk, ["tests.recorder"]])
    assert len(retries) == 1 and retries[0] >= 10
    assert received == [(notification.notification_id, "order.created")]


def test_a_subscriber_failing_for_good_is_logged_and_the_next_ones_still_run(partner, caplog):
    from django.db import ProgrammingError

    got = []

    def broken(notification):
        raise ProgrammingError("relation does not exist")

    signals.subscribe("tests.broken", handler=broken)
    signals.subscribe("tests.after", handler=lambda n: got.append(n.type))
    try:
        order = create_order(partner)
        notification = Notification.objects.get(order=order)
        ran = tasks.notifications_deliver.apply(args=[notification.pk, ["tests.broken", "tests.after"]]).get()
        assert ran == ["tests.after"] and got == ["order.created"]
        assert "Subscriber tests.broken failed" in caplog.text
        assert not NotificationReceipt.objects.filter(
            notification=notification, subscriber="tests.broken"
        ).exists()
    finally:
        signals.unsubscribe("tests.broken")
        signals.unsubscribe("tests.after")
