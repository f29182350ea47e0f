"""New orders confirmed in batches: one task charges, moves and mails many waiting orders, each once; a failing
order never fails or repeats the others; two batches at once never confirm one order twice."""

import collections
import re
import threading
import time
from datetime import timedelta

import pytest
import time_machine
from django.conf import settings
from django.core import mail
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from orders import delivery, outbox
from orders.models import Notification, NotificationReceipt, Order, OrderStatusHistory
from payouts import tasks
from payouts.lifecycle import confirmation, reactions
from payouts.lifecycle.confirmation import order_confirm, orders_requeue_unconfirmed
from payouts.models import Charge
from payouts.sandbox.models import SandboxCard, SandboxCharge
from tests.conftest import make_partner
from tests.orders.factories import confirmation_mail, confirmation_mailed, make_orders

pytestmark = pytest.mark.django_db

S = Order.Status


def assert_confirmed_once(order: Order, *, attempts: int = 1) -> None:
    order.refresh_from_db()
    assert order.status == S.AWAITING_TRANSFER
    assert confirmation_mailed([order]) == {order.pk}
    moves = OrderStatusHistory.objects.filter(order=order, to_status=S.AWAITING_TRANSFER)
    assert moves.count() == 1
    changed = Notification.objects.filter(order=order, type=Notification.Type.ORDER_STATUS_CHANGED)
    assert changed.count() == 1
    if order.livemode:
        charge = Charge.objects.get(order=order)
        assert charge.status == Charge.Status.SUCCEEDED and charge.attempts == attempts
        assert charge.status_history.filter(to_status="succeeded").count() == 1
    assert SandboxCharge.objects.filter(idempotency_key__endswith=order.order_id).count() == 1
    mails = [m for m in mail.outbox if f"order {order.order_id} confirmed" in m.subject]
    assert len(mails) == 1


def test_one_batch_charges_moves_and_mails_every_waiting_order_once():
    live = make_orders(4)
    test = make_orders(2, livemode=False)

    outcome = confirmation.orders_confirm_batch()

    assert outcome.claimed == 6 and sorted(outcome.confirmed) == sorted(o.pk for o in live + test)
    for order in live + test:
        assert_confirmed_once(order)
    assert len(mail.outbox) == 6
    # Test mode: the sandbox's test card, no Charge row, the [TEST] e-mail to the partner's contact address.
    assert not Charge.objects.filter(order__in=test).exists()
    assert all(m.subject.startswith("[TEST] ") for m in mail.outbox if m.to == ["ops@acme.example"])
    # A second batch finds nothing left to do.
    assert confirmation.orders_confirm_batch().claimed == 0
    assert len(mail.outbox) == 6


def test_a_batch_counts_each_live_move_once_it_commits(django_capture_on_commit_callbacks):
    from config.core.metrics import ORDER_TRANSITIONS

    make_orders(3)
    make_orders(2, livemode=False)  # test orders are not counted
    moved = ORDER_TRANSITIONS.labels(to_status=S.AWAITING_TRANSFER, reason="")
    before = moved._value.get()
    with django_capture_on_commit_callbacks(execute=True):
        assert len(confirmation.orders_confirm_batch().confirmed) == 5
    assert moved._value.get() - before == 3


def test_a_batch_writes_what_the_one_order_confirmation_writes():
    """The partner sees the same notification, history and e-mail whichever path confirmed the order."""
    single, batched = make_orders(2)
    order_confirm(order_pk=single.pk)
    confirmation.orders_confirm_batch()

    def seen(order):
        notification = Notification.objects.get(order=order, type=Notification.Type.ORDER_STATUS_CHANGED)
        data = notification.payload["data"]
        history = [{k: v for k, v in h.items() if k != "at"} for h in data["order"]["status_history"]]
        row = OrderStatusHistory.objects.get(order=order, to_status=S.AWAITING_TRANSFER)
        return (
            data["order"]["status"],
            data["previous_status"],
            data["reason"],
            history,
            sorted(data["order"]),
            (row.from_status, row.actor, row.reason),
            notification.payload["type"],
        )

    assert seen(single) == seen(batched)
    assert seen(batched)[0] == S.AWAITING_TRANSFER and seen(batched)[1] == S.ACCEPTED
    # The payload's timestamps are the move's own.
    batched.refresh_from_db()
    payload = Notification.objects.get(order=batched, type=Notification.Type.ORDER_STATUS_CHANGED).payload
    assert payload["data"]["order"]["status_history"][-1]["at"] == payload["created_at"]
    assert payload["data"]["order"]["status_changed_at"] == payload["created_at"]


def test_a_declined_card_in_the_middle_cancels_that_order_alone():
    orders = make_orders(2)
    declined = make_orders(1, livemode=False, seller_email="someone@decline.test")[0]
    orders += make_orders(2)

    outcome = confirmation.orders_confirm_batch()

    assert outcome.canceled == [declined.pk]
    declined.refresh_from_db()
    assert declined.status == S.CANCELED
    changed = Notification.objects.get(order=declined, type=Notification.Type.ORDER_STATUS_CHANGED)
    assert changed.payload["data"]["reason"] == outbox.REASON_CARD_DECLINED
    for order in orders:
        assert_confirmed_once(order)


def test_an_exception_in_the_middle_of_a_batch_leaves_that_order_alone_to_the_sweep(monkeypatch):
    orders = make_orders(7)
    poisoned = orders[3]
    real_payload = outbox.order_payload

    def payload(*, order, history=None):
        if order.pk == poisoned.pk:
            raise RuntimeError("poisoned order")
        return real_payload(order=order, history=history)

    monkeypatch.setattr(outbox, "order_payload", payload)
    outcome = confirmation.orders_confirm_batch()

    assert outcome.failed == [poisoned.pk] and len(outcome.confirmed) == 6
    for order in orders:
        if order is not poisoned:
            assert_confirmed_once(order)
    # Left as the one-order confirmation leaves an order it failed on: begun, accepted, nothing charged.
    poisoned.refresh_from_db()
    assert poisoned.status == S.ACCEPTED and poisoned.confirmation_started_at is not None
    assert not Charge.objects.filter(order=poisoned).exists()
    assert not SandboxCharge.objects.filter(idempotency_key=poisoned.order_id).exists()
    assert confirmation.orders_confirm_batch().claimed == 0  # a batch never takes it up again

    # The sweep publishes it again once stale; without the fault it is confirmed once, the others untouched.
    monkeypatch.setattr(outbox, "order_payload", real_payload)
    later = timezone.now() + timedelta(seconds=settings.ORDER_CONFIRMATION_STALE_SECONDS + 1)
    with time_machine.travel(later, tick=False):
        assert orders_requeue_unconfirmed() == [poisoned.pk]
    for order in orders:
        assert_confirmed_once(order)
    assert len(mail.outbox) == 7


def test_a_database_error_on_one_row_of_a_batch_confirms_the_others_once():
    """A real statement failure: PostgreSQL refuses the poisoned order's history row inside the set-based insert."""
    orders = make_orders(9)
    poisoned = orders[4]
    with connection.cursor() as cursor:
        cursor.execute(
            f"""
            CREATE FUNCTION poison_history() RETURNS trigger AS $$
            BEGIN
                IF NEW.order_id = {poisoned.pk} AND NEW.to_status = 'awaiting_transfer' THEN
                    RAISE EXCEPTION 'poisoned row';
                END IF;
                RETURN NEW;
            END $$ LANGUAGE plpgsql;
            CREATE TRIGGER poison_history BEFORE INSERT ON {OrderStatusHistory._meta.db_table}
                FOR EACH ROW EXECUTE FUNCTION poison_history();
            """
        )
    with CaptureQueriesContext(connection) as queries:
        outcome = confirmation.orders_confirm_batch()

    assert outcome.failed == [poisoned.pk] and len(outcome.confirmed) == 8
    for order in orders:
        if order is not poisoned:
            assert_confirmed_once(order)
    poisoned.refresh_from_db()
    assert poisoned.status == S.ACCEPTED and not Charge.objects.filter(order=poisoned).exists()
    # Split in halves down to the poisoned order: the halves that failed were rolled back, none charged twice.
    assert sum("ROLLBACK TO SAVEPOINT" in q["sql"] for q in queries.captured_queries) >= 3
    assert SandboxCharge.objects.count() == 8


def test_a_platform_outage_on_one_card_hands_that_order_to_the_retrying_task(monkeypatch):
    orders = make_orders(2)
    flaky_partner = make_partner(name="Flaky Tickets", email="ops@flaky.example").partner
    flaky = make_orders(1, partner=flaky_partner)[0]
    orders += make_orders(2)
    token = flaky_partner.credit_card.platform_card_token
    SandboxCard.objects.filter(token=token).update(behavior=SandboxCard.Behavior.PROCESSING_ERROR)
    retried = []
    monkeypatch.setattr(tasks.order_confirm, "delay", lambda pk: retried.append(pk))

    outcome = confirmation.orders_confirm_batch()

    assert outcome.retried == [flaky.pk] and retried == [flaky.pk]
    for order in orders:
        assert_confirmed_once(order)
    flaky.refresh_from_db()
    charge = Charge.objects.get(order=flaky)
    assert flaky.status == S.ACCEPTED and charge.status == Charge.Status.PENDING and charge.last_error
    # The platform answers again: the one-order task charges it once, under the same idempotency key.
    SandboxCard.objects.filter(token=token).update(behavior=SandboxCard.Behavior.SUCCEED)
    order_confirm(order_pk=flaky.pk)
    assert_confirmed_once(flaky, attempts=2)


def test_the_mail_server_refusing_one_message_leaves_that_e_mail_to_the_retrying_task(monkeypatch):
    import smtplib

    from orders import seller_mail

    orders = make_orders(3)
    real_send = seller_mail.send_order_confirmation

    def refuse_the_second(*, order, to, connection=None):
        if order.pk == orders[1].pk:
            raise smtplib.SMTPDataError(451, b"try again later")
        return real_send(order=order, to=to, connection=connection)

    monkeypatch.setattr(seller_mail, "send_order_confirmation", refuse_the_second)
    retried = []
    monkeypatch.setattr(tasks.order_confirm, "delay", lambda pk: retried.append(pk))
    outcome = confirmation.orders_confirm_batch()

    assert sorted(outcome.mailed) == sorted([orders[0].pk, orders[2].pk]) and retried == [orders[1].pk]
    refused = Order.objects.get(pk=orders[1].pk)
    assert refused.status == S.AWAITING_TRANSFER
    record = confirmation_mail(refused)
    assert record.claimed_at is None and record.handed_over_at is None
    monkeypatch.setattr(seller_mail, "send_order_confirmation", real_send)
    order_confirm(order_pk=refused.pk)  # the retry: no second charge, one e-mail
    for order in orders:
        assert_confirmed_once(order)


def test_a_burst_of_nudges_publishes_one_batch_until_it_starts(monkeypatch):
    published = []
    monkeypatch.setattr(confirmation, "publish", lambda name, *args, **kwargs: published.append(name) or True)
    for _ in range(20):
        confirmation.confirmations_nudge()
    assert published == ["payouts.tasks.orders_confirm_batch"]
    confirmation.orders_confirm_batch()  # the batch starts: the next order nudges another
    confirmation.confirmations_nudge()
    assert len(published) == 2


@pytest.fixture
def published(monkeypatch) -> list[tuple[str, dict]]:
    """The batch tasks the confirmation publishes (name and options), not sent to the broker."""
    sent: list[tuple[str, dict]] = []
    monkeypatch.setattr(
        confirmation, "publish", lambda name, *args, **kwargs: sent.append((name, kwargs)) or True
    )
    return sent


def test_a_new_orders_nudge_gathers_the_next_orders_and_a_full_batchs_starts_at_once(published, settings):
    reactions.on_order_created(None)  # a new order's notification: the batch starts after the window
    confirmation._nudge_clear()  # the batch started
    confirmation.confirmations_nudge(full=True)  # a full batch's: the next one at once
    assert published == [
        ("payouts.tasks.orders_confirm_batch", {"countdown": settings.ORDER_CONFIRMATION_GATHER_SECONDS}),
        ("payouts.tasks.orders_confirm_batch", {"countdown": None}),
    ]


def full_batch_then_a_new_order(monkeypatch, settings, *, waiting: int) -> None:
    """A batch of 3 claimed out of ``waiting`` orders, and an order committed after its claim, whose nudge publishes
    a gathering batch."""
    settings.ORDER_CONFIRMATION_BATCH = 3
    make_orders(waiting)
    claim = confirmation.orders_confirmation_claim

    def claim_then_a_new_order(**kwargs):
        claimed = claim(**kwargs)
        make_orders(1)
        reactions.on_order_created(None)
        return claimed

    monkeypatch.setattr(confirmation, "orders_confirmation_claim", claim_then_a_new_order)
    assert confirmation.orders_confirm_batch().claimed == 3


def test_a_full_batch_publishes_the_next_one_at_once_while_a_gathering_one_waits(
    monkeypatch, settings, published
):
    """A busy flow: a new order nudges a gathering batch while a full one runs, which left two older orders
    waiting. Its next one must not wait for that countdown (the gathering batches alone would cap the flow at
    BATCH per window)."""
    full_batch_then_a_new_order(monkeypatch, settings, waiting=5)
    assert published == [
        ("payouts.tasks.orders_confirm_batch", {"countdown": settings.ORDER_CONFIRMATION_GATHER_SECONDS}),
        ("payouts.tasks.orders_confirm_batch", {"countdown": None}),
    ]
    # The note is kept: the orders created meanwhile wait for those two batches rather than publishing more.
    assert confirmation.confirmations_nudge(gather=True) is False
    assert len(published) == 2


def test_a_full_batch_that_left_no_order_waiting_leaves_the_next_to_the_gathering_one(
    monkeypatch, settings, published
):
    """A full batch whose claim took every order waiting: the orders committed after it nudged a gathering batch
    of their own, and a batch published at once would only take a few of them (batches cut small)."""
    full_batch_then_a_new_order(monkeypatch, settings, waiting=3)
    assert published == [
        ("payouts.tasks.orders_confirm_batch", {"countdown": settings.ORDER_CONFIRMATION_GATHER_SECONDS})
    ]


def test_a_full_batch_publishes_the_next_one(monkeypatch, settings):
    settings.ORDER_CONFIRMATION_BATCH = 3
    make_orders(5)
    outcome = confirmation.orders_confirm_batch()  # in process, the next batch runs at once
    assert outcome.claimed == 3
    assert Order.objects.filter(status=S.AWAITING_TRANSFER).count() == 5


def test_a_new_order_is_confirmed_through_its_notification(django_capture_on_commit_callbacks):
    """The order.created notification nudges a batch (in process here), which confirms the order."""
    with django_capture_on_commit_callbacks(execute=True):
        (order,) = make_orders(1)
    assert_confirmed_once(order)


def test_a_batch_of_50_costs_at_most_10_statements_per_order(monkeypatch):
    # The batch alone: the next batch a full one publishes would run here, in process.
    monkeypatch.setattr(confirmation, "confirmations_nudge", lambda **_: False)
    orders = make_orders(30) + make_orders(20, livemode=False)
    with CaptureQueriesContext(connection) as queries:
        outcome = confirmation.orders_confirm_batch()
    assert len(outcome.confirmed) == 50 and len(mail.outbox) == 50
    assert len(queries.captured_queries) <= 10 * 50, len(queries.captured_queries)
    for order in orders[:3] + orders[-3:]:
        assert_confirmed_once(order)

    # Set-based: a batch of 10 orders of the same kinds runs as many statements as the batch of 50, which being
    # full also asks once whether it left older orders waiting.
    make_orders(6) + make_orders(4, livemode=False)
    with CaptureQueriesContext(connection) as small:
        assert len(confirmation.orders_confirm_batch().confirmed) == 10
    assert len(queries.captured_queries) == len(small.captured_queries) + 1, [
        q["sql"][:80] for q in queries.captured_queries
    ]


def test_a_batch_writes_each_confirmed_order_once_and_stamps_the_rest_of_its_claim(monkeypatch):
    """The move of a confirmed order records when its confirmation began (one write of its row, not a claim's write
    and then the move's); the orders of the claim that do not move (declined, left for the retrying task, failed)
    are stamped too, in the same transaction, so the sweep finds each of them as begun."""
    monkeypatch.setattr(confirmation, "confirmations_nudge", lambda **_: False)
    confirmed = make_orders(3)
    declined = make_orders(1, livemode=False, seller_email="someone@decline.test")[0]
    flaky_partner = make_partner(name="Flaky Tickets", email="ops@flaky.example").partner
    flaky = make_orders(1, partner=flaky_partner)[0]
    token = flaky_partner.credit_card.platform_card_token
    SandboxCard.objects.filter(token=token).update(behavior=SandboxCard.Behavior.PROCESSING_ERROR)
    monkeypatch.setattr(tasks.order_confirm, "delay", lambda pk: None)
    confirmed += make_orders(2)

    with CaptureQueriesContext(connection) as queries:
        outcome = confirmation.orders_confirm_batch()

    assert outcome.canceled == [declined.pk] and outcome.retried == [flaky.pk] and len(outcome.confirmed) == 5
    order_updates = [
        q["sql"] for q in queries.captured_queries if q["sql"].startswith('UPDATE "orders_order"')
    ]
    # The move of the five (one statement), the stamp of the two that stayed or were canceled, the cancel's move.
    writes = collections.Counter(
        int(pk)
        for sql in order_updates
        for pk in re.search(r'"orders_order"\."id" IN \(([^)]*)\)', sql).group(1).split(",")
    )
    # Each confirmed order is written once, by its move; the declined one by its cancel and its stamp.
    assert writes == {**{o.pk: 1 for o in confirmed}, declined.pk: 2, flaky.pk: 1}, order_updates
    stamps = set()
    for order in [*confirmed, declined, flaky]:
        order.refresh_from_db()
        assert order.confirmation_started_at is not None
        stamps.add(order.confirmation_started_at)
    assert len(stamps) == 1  # one start, the batch's
    assert flaky.status == S.ACCEPTED and declined.status == S.CANCELED
    for order in confirmed:
        assert_confirmed_once(order)
    assert confirmation.orders_confirm_batch().claimed == 0  # none of them is claimed again


@pytest.mark.django_db(transaction=True)
def test_two_batches_at_once_never_confirm_one_order_twice(settings, monkeypatch):
    """Real threads on PostgreSQL: each batch skips the orders the other has locked."""

    settings.ORDER_CONFIRMATION_BATCH = 7
    # The orders wait (no nudge runs a batch in process), and each thread runs its batches itself.
    monkeypatch.setattr(reactions, "confirmations_nudge", lambda **_: False)
    monkeypatch.setattr(confirmation, "confirmations_nudge", lambda **_: False)
    orders = make_orders(40)
    assert Order.objects.filter(status=S.ACCEPTED).count() == 40
    barrier = threading.Barrier(2)
    claimed: list[list[int]] = [[], []]
    errors = []

    def run(slot: int) -> None:
        try:
            barrier.wait()
            while True:
                outcome = confirmation.orders_confirm_batch()
                claimed[slot].extend(outcome.confirmed)
                if not outcome.claimed:
                    return
                time.sleep(0.01)
        except Exception as exc:  # pragma: no cover - reported below
            errors.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=run, args=(slot,)) for slot in (0, 1)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert not errors, errors
    assert claimed[0] and claimed[1], claimed  # both batches took part
    assert not set(claimed[0]) & set(claimed[1])
    assert sorted(claimed[0] + claimed[1]) == sorted(o.pk for o in orders)
    for order in orders:
        assert_confirmed_once(order)


def test_a_platform_without_batches_answers_each_charge_with_its_own_result_or_error():
    """The default ``charge_cards`` (a real platform: one call per charge) keeps one card's outage to itself."""
    from decimal import Decimal

    from payouts.errors import PlatformUnavailable
    from payouts.platform.base import ChargeRequest, ChargeResult, PaymentPlatform
    from payouts.platform.sandbox.backend import SandboxPlatform

    good = make_partner().partner.credit_card.platform_card_token
    down = make_partner(name="Flaky Tickets").partner.credit_card.platform_card_token
    SandboxCard.objects.filter(token=down).update(behavior=SandboxCard.Behavior.PROCESSING_ERROR)
    requests = [
        ChargeRequest(
            card_token=token, amount=Decimal("10.00"), currency="USD", idempotency_key=key, description="t"
        )
        for token, key in ((good, "k1"), (down, "k2"), (good, "k3"))
    ]
    first, second, third = PaymentPlatform.charge_cards(SandboxPlatform(), requests)
    assert isinstance(first, ChargeResult) and first.status == "succeeded"
    assert isinstance(second, PlatformUnavailable)
    assert isinstance(third, ChargeResult) and third.charge_id != first.charge_id
    # The sandbox's own batch answers the same, and a repeat charges nothing twice.
    again = SandboxPlatform().charge_cards(requests)
    assert again[0] == first and again[2] == third and isinstance(again[1], PlatformUnavailable)
    assert SandboxCharge.objects.count() == 2


def test_test_mode_advance_confirms_an_order_whose_batch_has_not_run_yet(monkeypatch):
    """The order's creation only nudged a batch (still in the queue): advancing it confirms it at once."""
    from orders.testmode import order_advance

    monkeypatch.setattr(
        confirmation, "publish", lambda name, *args, **kwargs: True
    )  # the batch stays in the queue
    (order,) = make_orders(1, livemode=False)
    created = Notification.objects.get(order=order, type=Notification.Type.ORDER_CREATED)
    assert delivery.notification_deliver(notification_pk=created.pk, subscriber_name="payouts.confirmation")
    order.refresh_from_db()
    assert order.status == S.ACCEPTED

    advanced = order_advance(order=order, to=S.AWAITING_TRANSFER)

    assert advanced.status == S.AWAITING_TRANSFER
    assert_confirmed_once(order)
    assert confirmation.orders_confirm_batch().claimed == 0  # the queued batch finds nothing left


def test_a_delivery_batch_of_new_orders_nudges_once_and_every_order_is_confirmed(monkeypatch):
    """The batch the first new order's nudge publishes claims every order committed before it: the others' nudges
    are left out (one round trip to Redis per delivery batch), recorded as handled, and no order waits longer."""
    orders = make_orders(5)
    created = list(
        Notification.objects.filter(order__in=orders, type=Notification.Type.ORDER_CREATED)
        .order_by("pk")
        .values_list("pk", flat=True)
    )
    nudges = []
    real = confirmation.confirmations_nudge
    monkeypatch.setattr(reactions, "confirmations_nudge", lambda **kw: nudges.append(kw) or real(**kw))
    monkeypatch.setattr(confirmation, "publish", lambda *args, **kwargs: True)
    done = delivery.notifications_deliver(deliveries=[(pk, ["payouts.confirmation"]) for pk in created])
    assert nudges == [{"gather": True}]
    assert all(done[pk] == ["payouts.confirmation"] for pk in created), done
    assert NotificationReceipt.objects.filter(notification_id__in=created).count() == 5
    # The batch that nudge published confirms all five.
    assert sorted(confirmation.orders_confirm_batch().confirmed) == sorted(o.pk for o in orders)
    for order in orders:
        assert_confirmed_once(order)
