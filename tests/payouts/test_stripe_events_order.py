"""Stripe's events in any order of arrival, through ``POST /payments/stripe/events`` signed with the endpoint's
secret: each is applied to the object's current state, so every order of the same events ends in the same state.
A payout that fails after it was reported paid takes its order out of ``paid``, and is made again, once, when the
partner connects a working payout account."""

import itertools
import json
import threading

import pytest
from django.db import connection

from payouts.models import Dispute
from tests.payouts import stripe_recording as s
from tests.payouts.stripe_events_support import alerts, deliver, queue

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


def case_state(dispute: Dispute) -> tuple:
    history = list(dispute.status_history.order_by("pk").values_list("from_status", "to_status"))
    return (
        dispute.status,
        dispute.platform_status,
        dispute.amount,
        dispute.reason,
        dispute.evidence_due_by.timestamp(),
        dispute.closed_at is not None,
        history,
    )


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
    assert case_state(dispute) == (
        "closed",
        "won",
        charged_order.total_price,
        "fraudulent",
        DUE_BY,
        True,
        [("", "open"), ("open", "closed")],
    )
    assert queue("Open disputes") == 0
    # The partner is told while the case is open: not of a dispute already over when the service learns of it.
    assert len(alerts("Card charge disputed")) == (1 if arrival[0] == "created" else 0)


@pytest.mark.production
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
    assert case_state(dispute)[:2] == ("closed", "won")
    assert case_state(dispute)[-1] == [("", "open"), ("open", "closed")]
