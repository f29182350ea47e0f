"""One writer of a row's quantity: the admin never writes back a quantity it read, and staff corrections
are explicit, relative adjustments with a reason that can neither undo orders nor go below zero."""

import io
import json
import threading
import time

import pytest
from django.core.management import call_command
from django.db import connections, transaction

from catalog import services
from catalog.models import Row, RowQuantityAdjustment
from quotes.services import quote_create
from tests.confirming import post_confirmed

from .conftest import section_change_form
from .factories import RowFactory

pytestmark = pytest.mark.django_db


def _order(partner, event, *, quantity: int):
    from orders.services import order_create

    quote = quote_create(
        partner_pk=partner.pk,
        event_id=event.event_id,
        section_name="Lower 101",
        row_name="A",
        quantity=quantity,
    )
    return order_create(
        partner_pk=partner.pk,
        actor="partner:test",
        quote_id=_quote_token(quote),
        delivery_type="mobile_transfer",
        is_ready_to_deliver=True,
    )


def _quote_token(quote) -> str:
    from quotes.codec import encode_quote_id

    return encode_quote_id(quote)


# --- the admin never writes a quantity it read -------------------------------------------------------------
def test_a_price_edit_after_an_order_leaves_the_quantity_alone(admin_client, auth_client, partner, event):
    section = event.sections.get(name="Lower 101")
    page = admin_client.get(f"/admin/catalog/section/{section.pk}/change/").content.decode()
    assert "Adjust quantity" in page and 'name="rows-0-available_quantity"' not in page
    form = section_change_form(section)  # row A shows 8 as the page opens
    assert form["rows-0-available_quantity"] == 8
    _order(partner, event, quantity=3)  # meanwhile an order takes 3
    form["rows-0-offer_price"] = "150.00"
    form["rows-0-available_quantity"] = 99  # a tampered form changes nothing either
    response = admin_client.post(f"/admin/catalog/section/{section.pk}/change/", form)
    assert response.status_code == 302, response.content.decode()[:3000]
    row = Row.objects.get(section=section, name="A")
    assert (row.offer_price, row.available_quantity) == (150, 5)
    rows = auth_client.get(f"/v1/events/{event.event_id}/sections/Lower%20101/rows").json()["data"]["results"]
    assert (rows[0]["offer_price"], rows[0]["available_quantity"]) == (150.0, 5)


def test_the_row_change_page_shows_the_quantity_read_only_and_never_saves_it(admin_client, partner, event):
    row = Row.objects.get(section__event=event, name="A")
    page = admin_client.get(f"/admin/catalog/row/{row.pk}/change/").content.decode()
    assert 'name="available_quantity"' not in page  # shown as text, no input to type over
    assert '<span class="readonly" id="id_available_quantity">8</span>' in page
    _order(partner, event, quantity=2)
    response = admin_client.post(
        f"/admin/catalog/row/{row.pk}/change/",
        {
            "section": row.section_id,
            "name": row.name,
            "name_display": "Row A (aisle)",
            "available_quantity": 8,
            "offer_price": "142.25",
            "face_value": row.face_value,
            "restrictions": "[]",
            "quantity_adjustments-TOTAL_FORMS": "0",
            "quantity_adjustments-INITIAL_FORMS": "0",
        },
    )
    assert response.status_code == 302, response.content.decode()[:3000]
    row.refresh_from_db()
    assert (row.name_display, row.available_quantity) == ("Row A (aisle)", 6)


def test_a_row_added_in_the_admin_starts_with_the_quantity_given(admin_client, event):
    section = event.sections.get(name="Lower 101")
    form = section_change_form(section)
    form.update(
        {
            "rows-TOTAL_FORMS": "3",
            "rows-2-section": section.pk,
            "rows-2-name": "C",
            "rows-2-name_display": "Row C",
            "rows-2-available_quantity": "12",
            "rows-2-offer_price": "80.00",
            "rows-2-face_value": "90.00",
            "rows-2-restrictions": "[]",
        }
    )
    response = admin_client.post(f"/admin/catalog/section/{section.pk}/change/", form)
    assert response.status_code == 302, response.content.decode()[:3000]
    assert Row.objects.get(section=section, name="C").available_quantity == 12


def test_a_reimport_keeps_the_quantity_orders_left(tmp_path, partner, event):
    event.external_id = "TM-77"
    event.save()
    section = event.sections.get(name="Lower 101")
    _order(partner, event, quantity=3)
    line = {
        "external_id": "TM-77",
        "event_name": event.name,
        "starts_at": event.starts_at.isoformat(),
        "timezone": event.timezone,
        "venue_name": event.venue.name,
        "city": event.venue.city,
        "country": event.venue.country,
        "primary_site": event.primary_site,
        "section_name": section.name,
        "section_name_display": section.name_display,
        "row_name": "A",
        "row_name_display": "Row A",
        "quantity": 8,  # the figure of the first import: 3 were sold since
        "offer_price": "100.00",
        "face_value": "165.00",
    }
    path = tmp_path / "again.json"
    path.write_text(json.dumps([line]))
    out = io.StringIO()
    call_command("import_catalog", str(path), "--json", stdout=out)
    report = json.loads(out.getvalue())
    assert report["rows_quantity_kept"] == 1 and not report["refused"]
    row = Row.objects.get(section=section, name="A")
    assert (row.offer_price, row.available_quantity) == (100, 5)


# --- explicit adjustments ----------------------------------------------------------------------------------
def test_an_adjustment_is_confirmed_then_applied_and_listed_on_the_row_and_the_event(
    admin_client, auth_client, event, django_capture_on_commit_callbacks
):
    row = Row.objects.get(section__event=event, name="A")
    url = f"/admin/catalog/row/{row.pk}/adjust-quantity/"
    assert "Available now" in admin_client.get(url).content.decode()
    auth_client.get(f"/v1/events/{event.event_id}/sections/Lower%20101/rows")  # cached at 8

    review = admin_client.post(url, {"delta": "5", "reason": "Supplier added seats"})
    assert review.status_code == 200
    assert "Add 5 tickets" in review.content.decode()
    row.refresh_from_db()
    assert row.available_quantity == 8 and not RowQuantityAdjustment.objects.exists()  # nothing yet

    with django_capture_on_commit_callbacks(execute=True):
        done = post_confirmed(
            admin_client, url, {"delta": "5", "reason": "Supplier added seats", "confirmed": "yes"}
        )
    assert done.status_code == 302 and done["Location"] == f"/admin/catalog/row/{row.pk}/change/"
    row.refresh_from_db()
    assert row.available_quantity == 13
    adjustment = RowQuantityAdjustment.objects.get()
    assert (adjustment.delta, adjustment.quantity_after, adjustment.reason, adjustment.actor) == (
        5,
        13,
        "Supplier added seats",
        "staff:admin",
    )
    rows = auth_client.get(f"/v1/events/{event.event_id}/sections/Lower%20101/rows").json()["data"]["results"]
    assert rows[0]["available_quantity"] == 13
    for page in (f"/admin/catalog/row/{row.pk}/change/", f"/admin/catalog/event/{event.pk}/change/"):
        assert "Supplier added seats" in admin_client.get(page).content.decode(), page
    assert (
        "Supplier added seats" in admin_client.get("/admin/catalog/rowquantityadjustment/").content.decode()
    )


def test_an_adjustment_below_zero_is_refused(admin_client, event):
    row = Row.objects.get(section__event=event, name="A")  # 8 available
    url = f"/admin/catalog/row/{row.pk}/adjust-quantity/"
    review = admin_client.post(url, {"delta": "-9", "reason": "Venue closed the row"})
    assert "Cannot remove 9 tickets: the row has only 8 available." in review.content.decode()
    confirmed = post_confirmed(
        admin_client, url, {"delta": "-9", "reason": "Venue closed the row", "confirmed": "yes"}
    )
    assert confirmed.status_code == 200
    assert "Cannot remove 9 tickets: the row has only 8 available." in confirmed.content.decode()
    row.refresh_from_db()
    assert row.available_quantity == 8 and not RowQuantityAdjustment.objects.exists()
    with pytest.raises(services.QuantityAdjustmentRefused, match="only 8 available"):
        services.row_quantity_adjust(row_pk=row.pk, delta=-9, reason="x", actor="staff:test")


def test_an_adjustment_needs_a_change_and_a_reason(admin_client, event):
    row = Row.objects.get(section__event=event, name="A")
    url = f"/admin/catalog/row/{row.pk}/adjust-quantity/"
    page = post_confirmed(
        admin_client, url, {"delta": "0", "reason": "  ", "confirmed": "yes"}
    ).content.decode()
    assert "An adjustment of 0 changes nothing." in page and "This field is required." in page
    row.refresh_from_db()
    assert row.available_quantity == 8 and not RowQuantityAdjustment.objects.exists()


def test_removing_every_remaining_ticket_leaves_zero(db):
    row = RowFactory(available_quantity=4)
    adjustment = services.row_quantity_adjust(row_pk=row.pk, delta=-4, reason="Sold out", actor="staff:test")
    row.refresh_from_db()
    assert row.available_quantity == 0 == adjustment.quantity_after


# --- concurrency (real threads on PostgreSQL) ----------------------------------------------------------------
def _wait_until_blocked_on_a_lock(timeout: float = 20) -> None:
    """Until another connection of this database waits on a row lock (the adjustment behind the order)."""
    deadline = time.monotonic() + timeout
    with connections["default"].cursor() as cursor:
        while time.monotonic() < deadline:
            cursor.execute(
                "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
                "AND wait_event_type = 'Lock' AND pid <> pg_backend_pid()"
            )
            if cursor.fetchone()[0]:
                return
            time.sleep(0.02)
    raise AssertionError("the adjustment never waited for the order's row lock")


def _adjust_in_thread(row_pk: int, delta: int, outcome: dict) -> threading.Thread:
    def run() -> None:
        try:
            outcome["adjustment"] = services.row_quantity_adjust(
                row_pk=row_pk, delta=delta, reason="Concurrent correction", actor="staff:test"
            )
        except services.QuantityAdjustmentRefused as exc:
            outcome["refused"] = str(exc)
        finally:
            connections.close_all()

    return threading.Thread(target=run)


@pytest.mark.django_db(transaction=True)
def test_an_adjustment_applies_relative_to_an_order_committed_meanwhile():
    row = RowFactory(available_quantity=10)
    outcome: dict = {}
    adjuster = _adjust_in_thread(row.pk, +5, outcome)
    with transaction.atomic():
        assert services.row_quantity_take(row_pk=row.pk, quantity=3)  # the order holds the row lock
        adjuster.start()
        _wait_until_blocked_on_a_lock()
    adjuster.join(timeout=30)
    row.refresh_from_db()
    assert row.available_quantity == 12  # 10 − 3 + 5: the order stays taken
    assert outcome["adjustment"].quantity_after == 12


@pytest.mark.django_db(transaction=True)
def test_a_removal_racing_an_order_never_goes_below_zero():
    row = RowFactory(available_quantity=5)
    outcome: dict = {}
    adjuster = _adjust_in_thread(row.pk, -4, outcome)
    with transaction.atomic():
        assert services.row_quantity_take(row_pk=row.pk, quantity=3)
        adjuster.start()
        _wait_until_blocked_on_a_lock()
    adjuster.join(timeout=30)
    row.refresh_from_db()
    assert row.available_quantity == 2
    assert outcome["refused"] == "Cannot remove 4 tickets: the row has only 2 available."
    assert not RowQuantityAdjustment.objects.exists()
