"""``POST /payments/stripe/events`` with bodies signed with the endpoint's own secret that are not Stripe's events,
or events whose objects hold anything: never a 5xx. A signed body that is not an event is 400 and stores nothing;
an event whose object cannot be read is stored, acknowledged and moves nothing."""

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from payouts.models import Dispute, PlatformEvent
from tests.payouts import stripe_recording as s
from tests.payouts.stripe_events_support import deliver

DEEP = 100_000


@pytest.mark.django_db
@pytest.mark.parametrize(
    "body",
    [
        b"[]",
        b"[1, 2]",
        b"null",
        b"0",
        b'"event"',
        b"true",
        b"{}",
        b'{"object": "event"}',
        b'{"object": "event", "id": "evt_1"}',
        b'{"object": "event", "id": ["evt_1"], "type": "payout.paid"}',
        b'{"object": "event", "id": "", "type": "payout.paid"}',
        b"[" * DEEP + b"]" * DEEP,
        b'{"a":' * 40_000 + b"1" + b"}" * 40_000,  # under the size bound
        b"not json",
        b"\xff\xfe\x00",
        b'{"object": "event", "id": "evt_nan", "type": "payout.paid", "created": NaN}',
        b'{"object": "event", "id": "evt_big", "type": "payout.paid", "created": 1e400}',
        b'{"object": "v2.core.event", "id": "evt_thin", "type": "v1.billing.meter.error_report_triggered"}',
        json.dumps({"object": "event", "id": "e" * 256, "type": "payout.paid"}).encode(),
    ],
    ids=lambda body: body[:40].decode("utf-8", "replace"),
)
def test_a_signed_body_that_is_not_an_event_is_400_and_stores_nothing(recording_stripe, body):
    response = deliver(body)
    assert response.status_code == 400
    assert response["Content-Type"] == "application/json"
    assert not PlatformEvent.objects.exists()


@pytest.mark.django_db
@pytest.mark.parametrize(
    "fields",
    [
        {"created": 10**30},
        {"created": -5},
        {"id": "evt_\u0000nul", "account": "acct_\u0000"},
        {"data": []},
        {"data": {"object": []}},
        {"data": {"object": {"object": "payout", "id": 5, "status": "paid"}}},
        {"data": {"object": {"object": "payout", "id": "po_1", "status": "paid", "arrival_date": 10**30}}},
        {"data": {"object": {"object": "payout", "id": "po_1", "status": "failed", "failure_message": {}}}},
    ],
    ids=str,
)
def test_a_signed_event_with_odd_fields_is_stored_and_acknowledged(recording_stripe, fields):
    event = {**s.event("payout.paid", s.payout("po_1", status="paid"), event_id="evt_odd"), **fields}
    response = deliver(json.dumps(event).encode())
    assert response.status_code == 200
    assert PlatformEvent.objects.count() == 1


JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=30),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=12), inner, max_size=4),
    max_leaves=12,
)
ID = st.one_of(st.sampled_from(["po_1", "pi_9", "dp_1", "evt_1"]), st.text(max_size=300), JSON)
OBJECT = st.fixed_dictionaries(
    {"object": st.sampled_from(["payout", "charge", "dispute", "customer"]) | JSON},
    optional={
        "id": ID,
        "status": st.sampled_from(["paid", "failed", "in_transit", "won", "needs_response"]) | JSON,
        "amount": st.integers() | JSON,
        "amount_refunded": st.integers() | JSON,
        "currency": st.sampled_from(["usd", "USD", "usdollar", ""]) | JSON,
        "payment_intent": ID,
        "reason": JSON,
        "arrival_date": st.integers() | JSON,
        "failure_message": JSON,
        "failure_code": JSON,
        "evidence_details": st.fixed_dictionaries({}, optional={"due_by": st.integers() | JSON}) | JSON,
    },
)
EVENT = st.fixed_dictionaries(
    {
        "object": st.just("event"),
        "id": st.text(min_size=1, max_size=260),
        "type": st.sampled_from(
            [
                "payout.paid",
                "payout.failed",
                "charge.refunded",
                "charge.dispute.created",
                "charge.dispute.closed",
            ]
        )
        | st.text(max_size=120),
    },
    optional={
        "created": st.integers() | JSON,
        "livemode": JSON,
        "account": st.text(max_size=120) | JSON,
        "data": st.fixed_dictionaries({"object": OBJECT}) | JSON,
    },
)


@pytest.mark.django_db
@settings(
    max_examples=100,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(body=st.one_of(EVENT.map(json.dumps), JSON.map(json.dumps), st.binary(max_size=64).map(repr)))
def test_no_signed_body_answers_a_server_error(charged_order, payout_in_flight, body):
    """Every body signed with the endpoint's secret, event-shaped or not: 200 or 400, never 5xx; the order's
    dispute and payout, where a fuzzed event names them, keep a valid state."""
    raw = body.encode("utf-8", "surrogatepass")
    response = deliver(raw)
    assert response.status_code in (200, 400), (response.status_code, raw[:200])
    assert response["Content-Type"] == "application/json"
    assert set(Dispute.objects.values_list("status", flat=True)) <= {"open", "closed"}
