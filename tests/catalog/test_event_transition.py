"""An event's status changes only through event_transition: legal moves, a history row each, one winner
under a race; and a catalog import that cancels an event cancels its open orders as staff's cancel does."""

import json
import threading

import pytest
from django.core.management import call_command
from django.db import connections

from catalog import services
from catalog.models import Event, EventStatusHistory, Row
from catalog.services import EVENT_TRANSITIONS, event_cancel, event_save, event_transition
from config.core.statemachine import IllegalStateMove
from orders.models import Order
from orders.services import EVENT_CANCELED_REASON, order_transition
from tests.confirming import post_confirmed
from tests.orders.conftest import create_order

from .factories import EventFactory, RowFactory, VenueFactory

E = Event.Status
pytestmark = pytest.mark.django_db


def _history(event: Event) -> list[tuple[str, str, str, str]]:
    rows = EventStatusHistory.objects.filter(event=event).order_by("at", "pk")
    return list(rows.values_list("from_status", "to_status", "actor", "reason"))


def test_every_event_status_has_a_row_in_the_table():
    assert set(EVENT_TRANSITIONS) == set(E.values)


@pytest.mark.parametrize(("start", "to"), [(E.SCHEDULED, E.SCHEDULED), (E.CANCELED, E.CANCELED)])
def test_event_transition_refuses_a_move_the_table_does_not_have(start, to):
    event = EventFactory(status=start)
    with pytest.raises(IllegalStateMove) as refused:
        event_transition(event=event, to=to, actor="staff:ops")
    assert str(refused.value) == f"Event {event.event_id} cannot move from {start} to {to}."
    assert not EventStatusHistory.objects.filter(event=event).exists()


def test_event_transition_refuses_an_unknown_status():
    with pytest.raises(ValueError, match="Unknown event status"):
        event_transition(event=EventFactory(), to="postponed", actor="staff:ops")


def test_cancel_and_reinstate_are_recorded_with_actor_and_reason():
    event = EventFactory()
    assert event_cancel(event=event, actor="staff:ops", reason="Artist ill")
    assert event.status == E.CANCELED and event.canceled_at is not None
    assert event_cancel(event=event, actor="staff:ops") is False  # already canceled: refused, nothing written
    event_transition(event=event, to=E.SCHEDULED, actor="staff:ops", reason="New date confirmed")
    event.refresh_from_db()
    assert (event.status, event.canceled_at) == (E.SCHEDULED, None)
    assert _history(event) == [
        (E.SCHEDULED, E.CANCELED, "staff:ops", "Artist ill"),
        (E.CANCELED, E.SCHEDULED, "staff:ops", "New date confirmed"),
    ]
    assert all(h.at is not None for h in EventStatusHistory.objects.filter(event=event))


def test_an_admin_edit_of_the_status_goes_through_the_transition():
    event = EventFactory()
    event.status = E.CANCELED
    event.name = "Renamed"
    event_save(event=event, actor="staff:ops")
    event.refresh_from_db()
    assert (event.name, event.status) == ("Renamed", E.CANCELED)
    assert event.canceled_at is not None
    assert _history(event) == [(E.SCHEDULED, E.CANCELED, "staff:ops", "Status edited")]
    event.name = "Renamed again"  # an edit that leaves the status alone writes no history
    event_save(event=event, actor="staff:ops")
    assert len(_history(event)) == 1


def test_the_admin_cancel_action_is_recorded_and_shown_on_the_event_page():
    from django.contrib.auth import get_user_model
    from django.test import Client

    staff = Client()
    staff.force_login(get_user_model().objects.create_superuser("ops", "ops@service.example", "pass 5511 x"))
    event = EventFactory()
    response = post_confirmed(
        staff,
        "/admin/catalog/event/",
        {
            "action": "cancel_events",
            "_selected_action": [event.pk],
            "confirmed": "yes",
            "reason": "Artist ill",
        },
        follow=True,
    )
    assert "Canceled 1 event(s)" in response.content.decode()
    assert _history(event) == [(E.SCHEDULED, E.CANCELED, "staff:ops", "Artist ill")]
    page = staff.get(f"/admin/catalog/event/{event.pk}/change/").content.decode()
    assert "Artist ill" in page and "staff:ops" in page


def test_a_created_event_records_its_first_status():
    event = services.event_create(
        name="New Show",
        venue=VenueFactory(),
        starts_at=EventFactory.build().starts_at,
        primary_site="axs",
        status=E.CANCELED,
    )
    assert event.canceled_at is not None
    assert _history(event) == [("", E.CANCELED, "system:catalog", "Event created")]


@pytest.mark.django_db(transaction=True)
def test_concurrent_cancels_are_decided_by_the_row_lock():
    event = EventFactory()
    barrier = threading.Barrier(8)
    results = []

    def worker(index: int) -> None:
        try:
            barrier.wait(timeout=10)
            results.append(event_cancel(event=Event.objects.get(pk=event.pk), actor=f"staff:{index}"))
        except Exception as exc:
            results.append(type(exc).__name__)
        finally:
            connections.close_all()

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)
    assert sorted(results, key=str) == [False] * 7 + [True]
    assert EventStatusHistory.objects.filter(event=event, to_status=E.CANCELED).count() == 1


# --- catalog imports ------------------------------------------------------------------------------------------
def _import_line(event: Event, *, status: str) -> dict:
    return {
        "external_id": event.external_id,
        "event_name": event.name,
        "starts_at": event.starts_at.isoformat(),
        "timezone": event.timezone,
        "venue_name": event.venue.name,
        "city": event.venue.city,
        "state": event.venue.state,
        "country": event.venue.country,
        "primary_site": event.primary_site,
        "status": status,
        "section_name": "Imported",
        "row_name": "Z",
        "quantity": 4,
        "offer_price": "50.00",
        "face_value": "60.00",
    }


def _run_import(tmp_path, lines: list[dict], *args: str) -> None:
    path = tmp_path / "catalog.json"
    path.write_text(json.dumps(lines))
    call_command("import_catalog", str(path), "--json", *args)


def test_an_import_that_cancels_an_event_cancels_its_open_orders(
    partner, tmp_path, django_capture_on_commit_callbacks
):
    row = RowFactory(section__event__external_id="SUP-77", available_quantity=20)
    accepted = create_order(partner, row=row, quantity=3)
    awaiting = create_order(partner, row=row, quantity=2)
    order_transition(order=awaiting, to=Order.Status.AWAITING_TRANSFER, actor="staff:test")
    received = create_order(partner, row=row, quantity=1)
    for step in (Order.Status.AWAITING_TRANSFER, Order.Status.TICKET_RECEIVED):
        received = order_transition(order=received, to=step, actor="staff:test")
    before = Row.objects.get(pk=row.pk).available_quantity
    event = row.section.event

    with django_capture_on_commit_callbacks(execute=True):
        _run_import(tmp_path, [_import_line(event, status=E.CANCELED)])

    event.refresh_from_db()
    assert event.status == E.CANCELED and event.canceled_at is not None
    assert _history(event) == [(E.SCHEDULED, E.CANCELED, "system:import", "Catalog import")]
    for order in (accepted, awaiting):
        order.refresh_from_db()
        assert order.status == Order.Status.CANCELED  # at once, not at the next periodic run
        last = order.status_history.order_by("-at", "-pk").first()
        assert (last.actor, last.reason) == ("system:catalog", EVENT_CANCELED_REASON)
    received.refresh_from_db()
    assert received.status == Order.Status.TICKET_RECEIVED  # past the point where an order can be canceled
    assert Row.objects.get(pk=row.pk).available_quantity == before + 5


def test_a_dry_run_import_that_cancels_an_event_cancels_nothing(
    partner, tmp_path, django_capture_on_commit_callbacks
):
    row = RowFactory(section__event__external_id="SUP-78", available_quantity=20)
    order = create_order(partner, row=row)
    event = row.section.event
    with django_capture_on_commit_callbacks(execute=True) as callbacks:
        _run_import(tmp_path, [_import_line(event, status=E.CANCELED)], "--dry-run")
    assert callbacks == []
    event.refresh_from_db()
    order.refresh_from_db()
    assert (event.status, order.status) == (E.SCHEDULED, Order.Status.ACCEPTED)
    assert not EventStatusHistory.objects.filter(event=event).exists()


def test_an_import_that_reinstates_or_creates_events_records_it(tmp_path):
    event = EventFactory(external_id="SUP-79", status=E.CANCELED)
    line = _import_line(event, status=E.SCHEDULED)
    created = {**line, "external_id": "SUP-80"}
    _run_import(tmp_path, [line, created])
    event.refresh_from_db()
    assert (event.status, event.canceled_at) == (E.SCHEDULED, None)
    assert _history(event) == [(E.CANCELED, E.SCHEDULED, "system:import", "Catalog import")]
    new = Event.objects.get(external_id="SUP-80")
    assert _history(new) == [("", E.SCHEDULED, "system:import", "Catalog import")]
