"""Stripe's events in any order of arrival, through ``POST /payments/stripe/events`` signed with the endpoint's
secret: each is applied to the object's current state, so every order of the same events ends in the same state.
A payout that fails after it was reported paid takes its order out of ``paid``, and is made again, once, when the
partner connects a working payout account."""

import itertools
import json
import threading
import time
from datetime import timedelta

import pytest
import time_machine
from django.db import connection
from django.test import Client
from django.utils import timezone

from orders.models import Notification
from partners.portal_services import portal_user_invite
from payouts.models import Dispute, PayoutAccount, PlatformEvent
from payouts.models import Payout as PayoutRecord
from payouts.services.progression import payouts_progress
from tests.conftest import login_with_password
from tests.payouts import stripe_recording as s
from tests.payouts.stripe_events_support import alerts, deliver, payout_event, queue
from tests.portal.fixtures import PASSWORD, query_of

# --- disputes -------------------------------------------------------------------------------------------------------
DUE_BY = 1_900_000_000


def dispute_deliveries(order) -> dict[str, bytes]:
    """The dispute's two events, as Stripe sends them: the same dispute, its status at each event's time."""
    amount = int(order.total_price * 100)

    def event(kind: str, status: str) -> bytes:
        dispute = s.dispute("dp_1", intent_id="pi_9", amount=amount, status=status)
        dispute["evidence_details"] = {"due_by": DUE_BY}
        return json.dumps(s.event(kind, dispute, event_id=f"evt_{kind}")).encode()

    return {
        "created": event("charge.dispute.created", "needs_response"),
        "closed": event("charge.dispute.closed", "won"),
    }


CASE_FIELDS = ("status", "platform_status", "amount", "reason", "evidence_due_by")


def case_state(dispute: Dispute) -> dict:
    state = {name: getattr(dispute, name) for name in CASE_FIELDS}
    state["evidence_due_by"] = state["evidence_due_by"].timestamp()
    state["closed"] = dispute.closed_at is not None
    state["history"] = list(dispute.status_history.order_by("pk").values_list("from_status", "to_status"))
    return state


# Each event delivered twice (Stripe's retry after a 500 or a timeout), in every order of arrival.
ARRIVALS = sorted(set(itertools.permutations(["created", "closed", "created", "closed"])))


@pytest.mark.django_db
@pytest.mark.parametrize("arrival", ARRIVALS, ids="-".join)
def test_every_order_of_a_disputes_events_ends_in_the_same_closed_case(
    charged_order, arrival, django_capture_on_commit_callbacks
):
    bodies = dispute_deliveries(charged_order)
    for name in arrival:
        with django_capture_on_commit_callbacks(execute=True):
            assert deliver(bodies[name]).status_code == 200
    dispute = Dispute.objects.get()
    assert case_state(dispute) == {
        "status": "closed",
        "platform_status": "won",
        "amount": charged_order.total_price,
        "reason": "fraudulent",
        "evidence_due_by": DUE_BY,
        "closed": True,
        "history": [("", "open"), ("open", "closed")],
    }
    assert queue("Open disputes") == 0
    # The partner is told while the case is open: not of a dispute already over when the service learns of it.
    assert len(alerts("Card charge disputed")) == (1 if arrival[0] == "created" else 0)


@pytest.mark.django_db(transaction=True)
def test_a_disputes_opening_and_close_delivered_at_once_end_in_one_closed_case(charged_order):
    bodies = dispute_deliveries(charged_order)
    barrier = threading.Barrier(2)
    answers: list[int] = []

    def post(body: bytes) -> None:
        try:
            barrier.wait(timeout=10)
            answers.append(deliver(body).status_code)
        finally:
            connection.close()

    threads = [threading.Thread(target=post, args=(body,)) for body in bodies.values()]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert answers == [200, 200]
    dispute = Dispute.objects.get()
    state = case_state(dispute)
    assert (state["status"], state["platform_status"]) == ("closed", "won")
    assert state["history"] == [("", "open"), ("open", "closed")]


# --- a payout that fails after it was paid ----------------------------------------------------------------------------
def failed_after_paid() -> dict:
    return payout_event(
        "payout.failed",
        "failed",
        event_id="evt_payout_failed",
        failure_code="account_closed",
        failure_message="The bank account has been closed.",
    )


def status_changes(order) -> list[tuple]:
    return [
        (
            n.payload["data"]["previous_status"],
            n.payload["data"]["order"]["status"],
            n.payload["data"]["reason"],
        )
        for n in Notification.objects.filter(order=order, type="order.status_changed").order_by("pk")
    ]


@pytest.mark.django_db
def test_a_payout_that_fails_after_paid_takes_the_order_out_of_paid_and_tells_the_partner_once(
    payout_in_flight, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        assert deliver(payout_event("payout.paid", "paid", event_id="evt_payout_paid")).status_code == 200
    payout_in_flight.refresh_from_db()
    assert payout_in_flight.status == "paid"
    for _ in range(2):  # Stripe's redelivery moves nothing twice
        with django_capture_on_commit_callbacks(execute=True):
            assert deliver(failed_after_paid()).status_code == 200

    payout = PayoutRecord.objects.get(order=payout_in_flight)
    assert (payout.status, payout.failure_reason, payout.paid_at) == (
        "failed",
        "The bank account has been closed.",
        None,
    )
    payout_in_flight.refresh_from_db()
    assert payout_in_flight.status == "payout_in_process"
    assert status_changes(payout_in_flight)[-1] == ("paid", "payout_in_process", "payout_failed")
    assert [c[2] for c in status_changes(payout_in_flight)].count("payout_failed") == 1
    [alert] = alerts("Payout failed")
    assert "The bank account has been closed." in alert.body
    assert "reported this payout as paid; the bank sent the money back" in alert.body
    assert "reported this payout as paid" in alert.alternatives[0][0]
    assert queue("Failed payouts") == 1
    assert "failed" in PlatformEvent.objects.get(event_id="evt_payout_failed").outcome
    # The GET of the order says it too.
    history = payout_in_flight.status_history.order_by("pk").values_list("from_status", "to_status")
    assert list(history)[-1] == ("paid", "payout_in_process")


@pytest.mark.django_db
@pytest.mark.parametrize("arrival", [("paid", "failed"), ("failed", "paid")], ids="-".join)
def test_a_payouts_paid_and_failed_in_either_order_end_in_the_same_state(
    payout_in_flight, arrival, django_capture_on_commit_callbacks
):
    events = {
        "paid": payout_event("payout.paid", "paid", event_id="evt_payout_paid"),
        "failed": failed_after_paid(),
    }
    for name in arrival:
        with django_capture_on_commit_callbacks(execute=True):
            assert deliver(events[name]).status_code == 200
    payout = PayoutRecord.objects.get(order=payout_in_flight)
    payout_in_flight.refresh_from_db()
    assert (payout.status, payout.failure_reason, payout.paid_at, payout_in_flight.status) == (
        "failed",
        "The bank account has been closed.",
        None,
        "payout_in_process",
    )
    assert len(alerts("Payout failed")) == 1
    assert queue("Failed payouts") == 1


@pytest.mark.django_db(transaction=True)
def test_the_partner_connecting_a_payout_account_twice_at_once_pays_the_failed_payout_again_once(
    payout_in_flight, recording_stripe
):
    for event in (payout_event("payout.paid", "paid", event_id="evt_payout_paid"), failed_after_paid()):
        assert deliver(event).status_code == 200
    payout_in_flight.refresh_from_db()
    assert payout_in_flight.status == "payout_in_process"

    # The partner connects a new bank account in the portal, in two tabs at once.
    portal_user_invite(partner=payout_in_flight.partner, email="rita@harbour.example", password=PASSWORD)
    portal = Client()
    assert login_with_password(portal, username="rita@harbour.example", password=PASSWORD)
    states = []
    for _ in range(2):
        start = portal.post(
            "/portal/settings/payment-methods/payout/connect", {"payout-confirm_replace": "on"}
        )
        assert start.status_code == 302 and start["Location"].startswith("https://connect.stripe.com/")
        states.append(query_of(start["Location"])["state"])
    recording_stripe.answer("POST", "/oauth/token", (200, s.oauth_token("acct_2New")))
    recording_stripe.answer(
        "GET", "/v1/accounts/acct_2New/external_accounts", (200, s.bank_accounts("acct_2New"))
    )
    recording_stripe.answer("POST", "/v1/payouts", (200, s.payout("po_2", status="pending")))
    recording_stripe.requests.clear()

    barrier = threading.Barrier(2)
    answers: list[int] = []

    def back_from_stripe(code: str, state: str) -> None:
        try:
            tab = Client()
            tab.cookies = portal.cookies
            barrier.wait(timeout=10)
            url = "/portal/settings/payment-methods/payout/return"
            answers.append(tab.get(url, {"code": code, "state": state}).status_code)
        finally:
            connection.close()

    threads = [
        threading.Thread(target=back_from_stripe, args=(f"ac_{n}", state)) for n, state in enumerate(states)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert answers == [302, 302]

    payout = PayoutRecord.objects.get(order=payout_in_flight)
    assert (payout.status, payout.attempt, payout.platform_payout_id) == ("in_process", 2, "po_2")
    retries = payout.status_history.filter(from_status="failed", to_status="pending")
    assert retries.count() == 1
    sent = [r.headers["idempotency-key"] for r in recording_stripe.posts() if r.path == "/v1/payouts"]
    assert sent == [f"{payout_in_flight.order_id}:payout:2:payout"]
    assert PayoutAccount.objects.get(partner=payout_in_flight.partner).platform_account_id == "acct_2New"

    # The new payout is disbursed: the order is paid again, once.
    paid = s.event(
        "payout.paid", s.payout("po_2", status="paid"), event_id="evt_po_2_paid", account="acct_2New"
    )
    assert deliver(paid).status_code == 200
    payout_in_flight.refresh_from_db()
    assert payout_in_flight.status == "paid"
    assert [c[1] for c in status_changes(payout_in_flight)].count("paid") == 2


@pytest.mark.django_db
def test_the_poll_finds_a_failure_after_paid_whose_event_was_lost(
    payout_in_flight, recording_stripe, django_capture_on_commit_callbacks
):
    paid = payout_event("payout.paid", "paid", event_id="evt_payout_paid", arrival_date=int(time.time()))
    assert deliver(paid).status_code == 200
    recording_stripe.answer(
        "GET",
        "/v1/payouts/po_1",
        (200, s.payout("po_1", status="failed", failure_code="account_closed", failure_message="Closed.")),
    )
    recording_stripe.requests.clear()
    payouts_progress()
    assert recording_stripe.requests == []  # asked when it was paid: not again within the hour
    with (
        time_machine.travel(timezone.now() + timedelta(hours=2)),
        django_capture_on_commit_callbacks(execute=True),
    ):
        payouts_progress()
    [asked] = recording_stripe.requests
    assert asked.path == "/v1/payouts/po_1"
    payout_in_flight.refresh_from_db()
    assert payout_in_flight.status == "payout_in_process"
    assert PayoutRecord.objects.get(order=payout_in_flight).status == "failed"
    assert len(alerts("Payout failed")) == 1


@pytest.mark.django_db
def test_the_poll_stops_asking_about_a_payout_paid_long_ago(payout_in_flight, recording_stripe):
    paid = payout_event("payout.paid", "paid", event_id="evt_payout_paid", arrival_date=int(time.time()))
    assert deliver(paid).status_code == 200
    recording_stripe.requests.clear()
    with time_machine.travel(timezone.now() + timedelta(days=10, hours=1)):
        payouts_progress()
    assert recording_stripe.requests == []
