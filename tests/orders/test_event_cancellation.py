"""Canceling an event cancels its open orders and gives their quantity back; nothing is charged for it."""

from catalog import services as catalog_services
from catalog.models import Row
from orders import services
from orders.models import Order
from orders.tasks import orders_expire_overdue
from payouts.lifecycle.confirmation import order_confirm

from .conftest import create_order


def test_canceling_an_event_cancels_its_open_orders(partner, django_capture_on_commit_callbacks):
    order = create_order(partner, quantity=3)
    confirmed = create_order(partner, row=order.row, quantity=2)
    order_confirm(order_pk=confirmed.pk)
    confirmed.refresh_from_db()
    assert confirmed.status == "awaiting_transfer"
    before = Row.objects.get(pk=order.row_id).available_quantity

    with django_capture_on_commit_callbacks(execute=True):
        assert catalog_services.event_cancel(event=order.event)

    for o in (order, confirmed):
        o.refresh_from_db()
        assert o.status == "canceled"
        last = o.status_history.order_by("-at", "-pk").first()
        assert last.reason == services.EVENT_CANCELED_REASON
        assert last.actor == "system:catalog"
    assert Row.objects.get(pk=order.row_id).available_quantity == before + 5


def test_orders_of_other_events_and_later_statuses_are_left_alone(
    partner, django_capture_on_commit_callbacks
):
    order = create_order(partner)
    order_confirm(order_pk=order.pk)
    services.order_transition(order=order, to="ticket_received", actor="staff:test")
    other = create_order(partner)
    with django_capture_on_commit_callbacks(execute=True):
        catalog_services.event_cancel(event=order.event)
    assert Order.objects.get(pk=order.pk).status == "ticket_received"
    assert Order.objects.get(pk=other.pk).status == "accepted"


def test_confirmation_of_an_order_whose_event_was_canceled_charges_nothing(partner):
    from payouts.models import Charge

    order = create_order(partner)
    # canceled without the immediate task (e.g. its message was lost)
    type(order.event).objects.filter(pk=order.event_id).update(status="canceled")
    order_confirm(order_pk=order.pk)
    order.refresh_from_db()
    assert order.status == "canceled"
    assert not Charge.objects.filter(order=order).exists()


def test_the_periodic_run_catches_a_cancellation_whose_message_was_lost(partner):
    order = create_order(partner)
    type(order.event).objects.filter(pk=order.event_id).update(status="canceled")
    orders_expire_overdue()
    order.refresh_from_db()
    assert order.status == "canceled"


def test_an_import_or_edit_that_cancels_an_event_cancels_its_open_orders(
    partner, django_capture_on_commit_callbacks
):
    order = create_order(partner, quantity=2)
    event = order.event
    event.status = event.Status.CANCELED
    with django_capture_on_commit_callbacks(execute=True):
        catalog_services.event_save(event=event)
    order.refresh_from_db()
    assert order.status == "canceled"


def test_a_broker_outage_never_undoes_the_cancellation(
    partner, django_capture_on_commit_callbacks, monkeypatch
):
    from orders import tasks

    order = create_order(partner)

    def broker_down(*args, **kwargs):
        raise ConnectionError("broker unreachable")

    monkeypatch.setattr(tasks.orders_cancel_for_canceled_events, "delay", broker_down)
    with django_capture_on_commit_callbacks(execute=True):
        assert catalog_services.event_cancel(event=order.event)
    order.event.refresh_from_db()
    assert order.event.status == "canceled"
    assert Order.objects.get(pk=order.pk).status == "accepted"  # until the periodic run
    orders_expire_overdue()
    assert Order.objects.get(pk=order.pk).status == "canceled"
