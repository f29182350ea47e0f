"""The endpoint's status and the delivery's state move only through their machines: an illegal move is
refused and writes nothing, the endpoint's moves say who and why, one outcome wins a race on a delivery."""

import threading
from datetime import timedelta

import pytest
from django.db import connections
from django.utils import timezone

from config.core.statemachine import IllegalStateMove
from orders.webhooks import sending, services
from orders.webhooks.machines import delivery_transition, endpoint_transition
from orders.webhooks.models import (
    WebhookAttempt,
    WebhookDelivery,
    WebhookEndpoint,
    WebhookEndpointStatusHistory,
)
from orders.webhooks.request import Outcome

from .conftest import order_notification, register

E = WebhookEndpoint.Status
D = WebhookDelivery.State


def _history(endpoint) -> list[tuple[str, str, str, str]]:
    rows = WebhookEndpointStatusHistory.objects.filter(endpoint=endpoint).order_by("at", "pk")
    return list(rows.values_list("from_status", "to_status", "actor", "reason"))


def _delivery(partner, url: str) -> WebhookDelivery:
    endpoint, _ = register(partner, url)
    return WebhookDelivery.objects.create(
        notification=order_notification(partner), endpoint=endpoint, next_attempt_at=timezone.now()
    )


@pytest.mark.django_db
def test_enabling_an_enabled_endpoint_is_refused_and_writes_nothing(partner, receiver):
    endpoint, _ = register(partner, receiver.url())
    before = WebhookEndpoint.objects.get(pk=endpoint.pk).updated_at
    with pytest.raises(IllegalStateMove):
        endpoint_transition(endpoint=endpoint, to=E.ENABLED, actor="staff:alice", reason="again")
    fresh = WebhookEndpoint.objects.get(pk=endpoint.pk)
    assert (fresh.status, fresh.updated_at) == (E.ENABLED, before)
    assert _history(endpoint) == []


@pytest.mark.django_db
def test_a_delivery_that_succeeded_never_moves_again(partner, receiver):
    delivery = _delivery(partner, receiver.url())
    delivery_transition(delivery=delivery, to=D.SUCCEEDED, changes={"next_attempt_at": None})
    later = timezone.now() + timedelta(minutes=5)
    for to in (D.RETRYING, D.FAILED, D.SUCCEEDED, D.PENDING):
        with pytest.raises(IllegalStateMove):
            delivery_transition(delivery=delivery, to=to, changes={"next_attempt_at": later})
    fresh = WebhookDelivery.objects.get(pk=delivery.pk)
    assert (fresh.state, fresh.next_attempt_at) == (D.SUCCEEDED, None)


@pytest.mark.django_db
def test_endpoint_history_says_who_disabled_and_enabled_it_and_why(partner, receiver):
    endpoint, _ = register(partner, receiver.url())
    services.endpoint_update(endpoint=endpoint, status=E.DISABLED, actor="portal:ops@acme.example")
    services.endpoint_update(endpoint=endpoint, status=E.ENABLED)  # the API: its partner
    services.endpoint_disable(
        endpoint=WebhookEndpoint.objects.get(pk=endpoint.pk),
        reason=WebhookEndpoint.DisabledReason.GONE,
        notify=False,
    )
    assert _history(endpoint) == [
        ("enabled", "disabled", "portal:ops@acme.example", "Disabled by the partner"),
        ("disabled", "enabled", f"partner:{partner.pk}", "enabled again (was: Disabled by the partner)"),
        ("enabled", "disabled", "system:webhooks", "The endpoint answered 410 Gone"),
    ]
    fresh = WebhookEndpoint.objects.get(pk=endpoint.pk)
    assert (fresh.status, fresh.disabled_reason) == (E.DISABLED, WebhookEndpoint.DisabledReason.GONE)


@pytest.mark.django_db
def test_staff_see_the_endpoint_history_in_the_admin(partner, receiver, admin_client):
    endpoint, _ = register(partner, receiver.url())
    services.endpoint_update(endpoint=endpoint, status=E.DISABLED, actor="portal:ops@acme.example")
    page = admin_client.get(f"/admin/webhooks/webhookendpoint/{endpoint.pk}/change/").content.decode()
    assert "who disabled or enabled it" in page and "portal:ops@acme.example" in page


@pytest.mark.django_db
def test_an_outcome_recorded_after_the_delivery_ended_leaves_it_as_it_ended(partner, receiver, monkeypatch):
    published = []
    monkeypatch.setattr(services, "delivery_enqueue", lambda **kwargs: published.append(kwargs))
    delivery = _delivery(partner, receiver.url())
    claim = sending._claim(delivery_pk=delivery.pk)
    assert isinstance(claim, sending.Claim)
    delivery_transition(delivery=delivery, to=D.SUCCEEDED, changes={"next_attempt_at": None})
    attempt = sending._record(
        claim=claim, outcome=Outcome(succeeded=False, response_status=500, error="http_error: HTTP 500")
    )
    fresh = WebhookDelivery.objects.get(pk=delivery.pk)
    assert (fresh.state, fresh.next_attempt_at, fresh.last_error) == (D.SUCCEEDED, None, "")
    assert WebhookAttempt.objects.get(pk=attempt.pk).status == WebhookAttempt.Status.FAILED
    assert [p for p in published if p.get("countdown")] == []  # no retry scheduled


@pytest.mark.django_db(transaction=True)
def test_two_workers_recording_outcomes_of_one_delivery_have_one_winner(partner, receiver):
    delivery = _delivery(partner, receiver.url())
    count = 6
    barrier = threading.Barrier(count)
    results: list[str] = []

    def worker(index: int) -> None:
        to = D.SUCCEEDED if index % 2 else D.FAILED
        try:
            barrier.wait(timeout=10)
            moved = delivery_transition(
                delivery=WebhookDelivery.objects.get(pk=delivery.pk), to=to, changes={"next_attempt_at": None}
            )
            results.append(moved.state)
        except IllegalStateMove:
            results.append("refused")
        finally:
            connections.close_all()

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)
    winners = [r for r in results if r != "refused"]
    assert len(results) == count and len(winners) == 1
    assert WebhookDelivery.objects.get(pk=delivery.pk).state == winners[0]
