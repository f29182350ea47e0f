"""``POST /payments/stripe/events``: Stripe's deliveries, signed with the endpoint's secret as Stripe signs them,
verified by the library, stored once, and acted on through the payout, refund and dispute services. The
library's HTTP client records (the refund check asks Stripe)."""

import json
import threading
import time
from decimal import Decimal

import pytest
from django.db import connection
from django.test import Client

from orders.models import Order
from payouts.backoffice.dashboard import staff_dashboard
from payouts.models import Charge, Dispute, PlatformEvent
from payouts.models import Payout as PayoutRecord
from payouts.services.progression import payouts_progress
from tests.payouts import stripe_recording as s
from tests.payouts.stripe_events_support import ACCOUNT, URL, alerts, deliver, payout_event, queue


# --- verification ---------------------------------------------------------------------------------------------------
@pytest.mark.django_db
def test_a_signed_payout_paid_event_pays_the_order(payout_in_flight, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        response = deliver(payout_event("payout.paid", "paid"))
    assert response.status_code == 200
    assert response.json() == {"received": "evt_payout", "duplicate": False}
    payout_in_flight.refresh_from_db()
    assert payout_in_flight.status == "paid"
    assert PayoutRecord.objects.get(order=payout_in_flight).status == "paid"
    event = PlatformEvent.objects.get()
    assert (event.type, event.account, event.processed_at is not None) == ("payout.paid", ACCOUNT, True)
    assert "paid" in event.outcome


@pytest.mark.django_db
@pytest.mark.parametrize(
    "tamper",
    [
        pytest.param(lambda body, sig: (body.replace(b'"paid"', b'"failed"'), sig), id="body changed"),
        pytest.param(
            lambda body, sig: (body, s.sign(body, secret="whsec_someone_else")), id="another secret"
        ),
        pytest.param(
            lambda body, sig: (body, s.sign(body, at=int(time.time()) - 301)), id="older than 5 minutes"
        ),
        pytest.param(lambda body, sig: (body, sig.replace("v1=", "v0=")), id="no v1 signature"),
        pytest.param(lambda body, sig: (body, "garbage"), id="unreadable header"),
        pytest.param(lambda body, sig: (body, ""), id="no header"),
        pytest.param(lambda body, sig: (body, sig + ",v1=" + "0" * 64 * 40), id="header over the bound"),
    ],
)
def test_a_tampered_or_unsigned_event_is_refused_and_moves_nothing(payout_in_flight, tamper):
    body = json.dumps(payout_event("payout.paid", "paid")).encode()
    body, signature = tamper(body, s.sign(body))
    response = deliver(body, signature=signature)
    assert response.status_code == 400
    assert not PlatformEvent.objects.exists()
    payout_in_flight.refresh_from_db()
    assert payout_in_flight.status == "payout_in_process"


@pytest.mark.django_db
def test_an_event_signed_within_the_tolerance_is_accepted(payout_in_flight):
    body = json.dumps(payout_event("payout.paid", "paid")).encode()
    assert deliver(body, signature=s.sign(body, at=int(time.time()) - 290)).status_code == 200


@pytest.mark.django_db
def test_without_a_webhook_secret_every_event_is_refused(payout_in_flight, settings, caplog):
    settings.STRIPE_WEBHOOK_SECRET = []
    assert deliver(payout_event("payout.paid", "paid")).status_code == 400
    assert "STRIPE_WEBHOOK_SECRET is not set" in caplog.text
    assert not PlatformEvent.objects.exists()


@pytest.mark.django_db
def test_either_endpoint_secret_verifies(payout_in_flight, settings):
    # The platform's endpoint and the Connect endpoint each have their own secret.
    settings.STRIPE_WEBHOOK_SECRET = ["whsec_platform_endpoint", s.WEBHOOK_SECRET]
    assert deliver(payout_event("payout.paid", "paid")).status_code == 200


@pytest.mark.django_db
def test_a_body_over_the_bound_is_refused_before_it_is_read(recording_stripe, settings):
    settings.STRIPE_WEBHOOK_MAX_BYTES = 4096
    padded = s.event("payout.paid", {**s.payout("po_1", status="paid"), "description": "x" * 5000})
    response = deliver(padded)
    assert response.status_code == 413
    assert not PlatformEvent.objects.exists()


@pytest.mark.django_db
def test_the_endpoint_is_not_there_on_the_sandbox(settings):
    settings.PAYMENT_PLATFORM = "sandbox"
    assert deliver(payout_event("payout.paid", "paid")).status_code == 404
    assert Client().get(URL).status_code == 404


@pytest.mark.django_db
def test_only_post_is_answered(recording_stripe):
    assert Client().get(URL).status_code == 405


@pytest.mark.django_db
def test_an_event_the_service_does_not_act_on_is_stored_and_acknowledged(recording_stripe):
    response = deliver(s.event("customer.created", s.customer("cus_1"), event_id="evt_other"))
    assert response.status_code == 200
    assert PlatformEvent.objects.get().outcome == "not an event the service acts on"


# --- payouts --------------------------------------------------------------------------------------------------------
@pytest.mark.django_db
def test_an_event_delivered_twice_moves_nothing_twice(payout_in_flight, django_capture_on_commit_callbacks):
    body = json.dumps(payout_event("payout.paid", "paid")).encode()
    with django_capture_on_commit_callbacks(execute=True):
        first = deliver(body)
    history = list(payout_in_flight.status_history.values_list("to_status", flat=True))
    with django_capture_on_commit_callbacks(execute=True):
        second = deliver(body, signature=s.sign(body))  # Stripe's retry: signed afresh
    assert (first.json()["duplicate"], second.json()["duplicate"]) == (False, True)
    assert list(payout_in_flight.status_history.values_list("to_status", flat=True)) == history
    assert history[-2:] == ["scheduled", "paid"]
    assert PlatformEvent.objects.count() == 1


@pytest.mark.django_db
def test_a_failed_payout_reaches_the_partner_and_the_staff_queue(
    payout_in_flight, django_capture_on_commit_callbacks
):
    event = payout_event(
        "payout.failed",
        "failed",
        failure_code="account_closed",
        failure_message="The bank account has been closed.",
    )
    with django_capture_on_commit_callbacks(execute=True):
        assert deliver(event).status_code == 200
    with django_capture_on_commit_callbacks(execute=True):
        assert deliver(event).status_code == 200  # again: still one alert
    payout = PayoutRecord.objects.get(order=payout_in_flight)
    assert (payout.status, payout.failure_reason) == ("failed", "The bank account has been closed.")
    [alert] = alerts("Payout failed")
    assert alert.to == ["ops@harbour.example"]
    assert payout_in_flight.order_id in alert.subject
    assert "The bank account has been closed." in alert.body
    assert "reported this payout as paid" not in alert.body  # it never was
    assert queue("Failed payouts") == 1
    payout_in_flight.refresh_from_db()
    assert payout_in_flight.status == "payout_in_process"  # staff retry it from there


@pytest.mark.django_db
def test_the_minute_poll_still_moves_a_payout_whose_event_was_missed(payout_in_flight, recording_stripe):
    recording_stripe.answer("GET", "/v1/payouts/po_1", (200, s.payout("po_1", status="in_transit")))
    payouts_progress()
    payout_in_flight.refresh_from_db()
    assert payout_in_flight.status == "scheduled"
    [asked] = recording_stripe.requests
    assert asked.headers["stripe-account"] == ACCOUNT
    # The event arrives late: the payout is where it says already, so it moves only what is left.
    assert deliver(payout_event("payout.paid", "paid")).status_code == 200
    payout_in_flight.refresh_from_db()
    assert payout_in_flight.status == "paid"


@pytest.mark.django_db
def test_a_payout_event_of_a_payout_not_ours_moves_nothing(payout_in_flight):
    event = s.event("payout.paid", s.payout("po_unknown", status="paid"), account=ACCOUNT)
    assert deliver(event).status_code == 200
    assert "nothing moved" in PlatformEvent.objects.get().outcome
    payout_in_flight.refresh_from_db()
    assert payout_in_flight.status == "payout_in_process"


# --- refunds --------------------------------------------------------------------------------------------------------
@pytest.mark.django_db
def test_charge_refunded_settles_the_pending_refund_at_once(
    charged_order,
    recording_stripe,
    django_capture_on_commit_callbacks,
):
    recording_stripe.answer(
        "POST", "/v1/refunds", (200, s.refund("re_9", status="pending", intent_id="pi_9"))
    )
    from orders.services import order_transition

    with django_capture_on_commit_callbacks(execute=True):
        order_transition(order=charged_order, to="canceled", actor="staff:test", reason="test")
    assert Charge.objects.get(order=charged_order).refund_status == "pending"

    recording_stripe.answer(
        "GET", "/v1/refunds/re_9", (200, s.refund("re_9", status="succeeded", intent_id="pi_9"))
    )
    amount = int(charged_order.total_price * 100)
    event = s.event("charge.refunded", s.charge(intent_id="pi_9", amount=amount, amount_refunded=amount))
    assert deliver(event).status_code == 200
    charge = Charge.objects.get(order=charged_order)
    assert (charge.refund_status, charge.platform_refund_id) == ("succeeded", "re_9")
    assert [r.path for r in recording_stripe.posts()].count("/v1/refunds") == 1  # asked, never refunded again
    assert deliver(event, signature=None).json()["duplicate"] is True


@pytest.mark.django_db
def test_a_refund_made_at_stripe_by_hand_is_recorded_for_staff_and_moves_nothing(charged_order):
    amount = int(charged_order.total_price * 100)
    event = s.event("charge.refunded", s.charge(intent_id="pi_9", amount=amount, amount_refunded=amount))
    assert deliver(event).status_code == 200
    assert PlatformEvent.objects.get().outcome == "refunded at the platform, no refund owed here"
    assert Charge.objects.get(order=charged_order).refund_status == "none"


# --- disputes -------------------------------------------------------------------------------------------------------
@pytest.mark.django_db
def test_a_dispute_opens_a_staff_case_on_the_order_and_alerts_the_partner_once(
    charged_order, django_capture_on_commit_callbacks
):
    amount = int(charged_order.total_price * 100)
    created = s.event(
        "charge.dispute.created", s.dispute("dp_1", intent_id="pi_9", amount=amount), event_id="evt_dispute"
    )
    for _ in range(2):  # delivered twice
        with django_capture_on_commit_callbacks(execute=True):
            assert deliver(created).status_code == 200
    dispute = Dispute.objects.get()
    assert (dispute.order_id, dispute.status, dispute.reason) == (charged_order.pk, "open", "fraudulent")
    assert dispute.amount == charged_order.total_price
    assert list(dispute.status_history.values_list("to_status", flat=True)) == ["open"]
    assert queue("Open disputes") == 1
    [alert] = alerts("Card charge disputed")
    assert alert.to == ["ops@harbour.example"]
    assert charged_order.order_id in alert.subject and "fraudulent" in alert.body

    closed = s.event(
        "charge.dispute.closed",
        s.dispute("dp_1", intent_id="pi_9", amount=amount, status="won"),
        event_id="evt_dispute_closed",
    )
    assert deliver(closed).status_code == 200
    dispute.refresh_from_db()
    assert (dispute.status, dispute.platform_status) == ("closed", "won")
    assert queue("Open disputes") == 0
    charged_order.refresh_from_db()
    assert charged_order.status == Order.Status.AWAITING_TRANSFER  # the order itself goes on


@pytest.mark.django_db
def test_the_staff_queue_links_the_open_disputes(charged_order, admin_client):
    amount = int(charged_order.total_price * 100)
    deliver(s.event("charge.dispute.created", s.dispute("dp_1", intent_id="pi_9", amount=amount)))
    link = next(q.url for q in staff_dashboard().queues if q.label == "Open disputes")
    page = admin_client.get(link)
    assert page.status_code == 200
    assert charged_order.order_id in page.content.decode()
    assert Decimal(amount) / 100 == Dispute.objects.get().amount


# --- two deliveries at once -----------------------------------------------------------------------------------------
@pytest.mark.django_db(transaction=True)
def test_two_deliveries_at_once_move_the_payout_once(payout_in_flight):
    body = json.dumps(payout_event("payout.failed", "failed", failure_message="Closed.")).encode()
    barrier = threading.Barrier(2)
    answers: list[int] = []

    def post() -> None:
        try:
            barrier.wait(timeout=10)
            answers.append(deliver(body).status_code)
        finally:
            connection.close()

    threads = [threading.Thread(target=post) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert answers == [200, 200]
    assert PlatformEvent.objects.count() == 1
    payout = PayoutRecord.objects.get(order=payout_in_flight)
    assert list(payout.status_history.values_list("to_status", flat=True)).count("failed") == 1
    assert len(alerts("Payout failed")) == 1
