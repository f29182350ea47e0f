"""Staff admin for orders: list, search, filters, detail, the private PDF download, life-cycle actions."""

from datetime import timedelta

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Permission
from django.contrib.messages import get_messages
from django.test import Client

from catalog.models import Row
from orders.models import Order, OrderStatusHistory
from orders.outbox import REASON_ACCEPTED_BY_STAFF
from orders.services import order_transition
from orders.transfers.decision.state import transfer_accept
from payouts.services.progression import payouts_progress
from tests.confirming import post_confirmed
from tests.conftest import issue_token

from .conftest import PDF_BYTES, create_order, order_form, pdf_upload, post_order

pytestmark = pytest.mark.django_db

CHANGELIST = "/admin/orders/order/"


@pytest.fixture
def staff_client():
    user = get_user_model().objects.create_superuser("root", "root@example.com", "pw-long-enough-123")
    client = Client()
    client.force_login(user)
    return client


def test_changelist_searches_by_order_id_transfer_address_and_reference(staff_client, partner):
    a = create_order(partner, partner_reference="REF-A")
    b = create_order(partner, partner_reference="REF-B")
    for term, expected in ((a.order_id, a), (b.transfer_address, b), ("REF-A", a)):
        response = staff_client.get(CHANGELIST, {"q": term})
        assert response.status_code == 200
        content = response.content.decode()
        assert expected.order_id in content
        other = b if expected is a else a
        assert other.order_id not in content


def test_changelist_searches_by_partner_seller_and_event(staff_client, partner, other_partner_creds):
    mine = create_order(partner)
    theirs = create_order(other_partner_creds.partner)
    Order.objects.filter(pk=mine.pk).update(seller_email="seller.one@example.com")
    Order.objects.filter(pk=theirs.pk).update(seller_email="other.seller@example.com")
    theirs.event.name = "Unique Symphony Night"
    theirs.event.save(update_fields=["name"])
    assert mine.event_id != theirs.event_id
    cases = (
        (partner.public_id, mine, theirs),
        (other_partner_creds.partner.name, theirs, mine),
        # The seller's e-mail whole, in any case (pasted from a mail): an exact, indexed match.
        ("Seller.One@Example.com", mine, theirs),
        ("Symphony Night", theirs, mine),
    )
    for term, shown, hidden in cases:
        content = staff_client.get(CHANGELIST, {"q": term}).content.decode()
        assert shown.order_id in content and hidden.order_id not in content, term


def test_changelist_lists_partner_reference_and_event_date(staff_client, partner):
    order = create_order(partner, partner_reference="REF-LISTED")
    content = staff_client.get(CHANGELIST).content.decode()
    assert "REF-LISTED" in content
    assert "column-event_date" in content and "column-reference" in content
    assert f'<td class="field-event_date">{order.event.event_date.isoformat()}</td>' in content


def test_changelist_filters(staff_client, partner, other_partner_creds):
    mine = create_order(partner, delivery_type="mobile_qr")
    theirs = create_order(other_partner_creds.partner)
    order_transition(order=theirs, to="canceled", actor="staff:x")
    cases = [
        ({"status__exact": "canceled"}, theirs, mine),
        ({"partner__id__exact": partner.pk}, mine, theirs),
        ({"event__id__exact": mine.event_id}, mine, theirs),
        ({"delivery_type__exact": "mobile_qr"}, mine, theirs),
    ]
    for params, shown, hidden in cases:
        content = staff_client.get(CHANGELIST, params).content.decode()
        assert shown.order_id in content and hidden.order_id not in content, params
    year = str(mine.created_at.year)
    assert mine.order_id in staff_client.get(CHANGELIST, {"created_at__year": year}).content.decode()


def test_detail_shows_history_quote_snapshot_and_pdf_link(staff_client, auth_client, quote):
    form = order_form(quote, delivery_type="pdf", file=pdf_upload())
    order_id = post_order(auth_client, form).json()["data"]["order_id"]
    order = Order.objects.get(order_id=order_id)
    order_transition(order=order, to="awaiting_transfer", actor="system:confirmation", reason="Card charged")

    response = staff_client.get(f"{CHANGELIST}{order.pk}/change/")

    assert response.status_code == 200
    content = response.content.decode()
    assert "Card charged" in content and "system:confirmation" in content  # status history inline
    assert form["quote_id"] in content and "Partial view of the stage" in content  # quote snapshot
    assert "jane.doe@example.com" in content  # the seller from the quote's user_metadata
    assert f"/admin/orders/order/{order.pk}/ticket.pdf" in content


def test_staff_download_the_pdf_and_nobody_else(staff_client, auth_client, quote):
    post_order(auth_client, order_form(quote, delivery_type="pdf", file=pdf_upload()))
    order = Order.objects.get()
    url = f"/admin/orders/order/{order.pk}/ticket.pdf"

    response = staff_client.get(url)
    assert response.status_code == 200
    assert response["Content-Type"] == "application/pdf"
    assert "attachment" in response["Content-Disposition"]
    assert b"".join(response.streaming_content) == PDF_BYTES

    anonymous = Client().get(url)
    assert anonymous.status_code == 302 and "/admin/login/" in anonymous["Location"]
    assert auth_client.get(url).status_code == 302  # a partner's bearer token is no staff login

    user_model = get_user_model()
    not_staff = user_model.objects.create_user("joe", "joe@example.com", "pw-long-enough-123")
    client = Client()
    client.force_login(not_staff)
    assert client.get(url).status_code == 302

    staff_without_permission = user_model.objects.create_user(
        "sue", "sue@example.com", "pw-long-enough-123", is_staff=True
    )
    client = Client()
    client.force_login(staff_without_permission)
    assert client.get(url).status_code == 403
    staff_without_permission.user_permissions.add(Permission.objects.get(codename="view_order"))
    client.force_login(staff_without_permission)
    assert client.get(url).status_code == 200


def test_download_of_an_order_without_pdf_is_404(staff_client, partner):
    order = create_order(partner)
    assert staff_client.get(f"/admin/orders/order/{order.pk}/ticket.pdf").status_code == 404


def test_bulk_mark_ticket_received_goes_through_the_life_cycle(staff_client, partner):
    ready = create_order(partner)
    order_transition(order=ready, to="awaiting_transfer", actor="system:confirmation")
    too_early = create_order(partner)

    selection = {"action": "mark_ticket_received", "_selected_action": [ready.pk, too_early.pk]}
    confirmation = staff_client.post(CHANGELIST, selection).content.decode()
    assert "Were the tickets accepted on the platform?" in confirmation
    assert Order.objects.get(pk=ready.pk).status == "awaiting_transfer"  # nothing before the confirmation
    response = post_confirmed(
        staff_client, CHANGELIST, {**selection, "confirmed": "yes", "reason": "Ticket received"}, follow=True
    )

    assert response.status_code == 200
    ready.refresh_from_db()
    too_early.refresh_from_db()
    assert ready.status == "ticket_received"
    assert too_early.status == "accepted"
    last = ready.status_history.order_by("-at", "-id").first()
    assert last.actor == "staff:root"
    assert (ready.transfer.state, ready.transfer.source) == ("detected", "staff")
    messages = [str(m) for m in get_messages(response.wsgi_request)]
    assert any(ready.order_id in m and "Marked" in m for m in messages)
    assert any(too_early.order_id in m and "accepted" in m and "Not" in m for m in messages)


def _cancel(client, orders, **extra):
    data = {"action": "cancel_orders", "_selected_action": [o.pk for o in orders], **extra}
    if extra.get("confirmed") == "yes":
        return post_confirmed(client, CHANGELIST, data, follow=True)
    return client.post(CHANGELIST, data, follow=True)


def test_bulk_cancel_asks_for_confirmation_first_and_changes_nothing(staff_client, partner):
    order = create_order(partner)

    response = _cancel(staff_client, [order])

    content = response.content.decode()
    assert 'data-testid="confirm-cancel"' in content
    assert order.order_id in content
    assert (
        "quantity goes back to the row" in content
        and "refunded" in content
        and "seller is e-mailed" in content
    )
    assert Order.objects.get(pk=order.pk).status == "accepted"
    assert order.status_history.count() == 1  # only the creation


def test_bulk_cancel_without_a_reason_is_asked_again(staff_client, partner):
    order = create_order(partner)

    response = _cancel(staff_client, [order], confirmed="yes", reason="   ")

    content = response.content.decode()
    assert 'data-testid="confirm-cancel"' in content and "Give a reason" in content
    assert Order.objects.get(pk=order.pk).status == "accepted"


def test_bulk_cancel_with_a_reason_cancels_and_keeps_the_reason(staff_client, partner):
    order = create_order(partner)
    row_before = Row.objects.get(pk=order.row_id).available_quantity

    _cancel(staff_client, [order], confirmed="yes", reason="Seller asked by phone")

    order.refresh_from_db()
    assert order.status == "canceled"
    last = order.status_history.order_by("-at", "-id").first()
    assert (last.to_status, last.actor, last.reason) == ("canceled", "staff:root", "Seller asked by phone")
    assert Row.objects.get(pk=order.row_id).available_quantity == row_before + order.quantity
    notification = order.notifications.order_by("-id").first()
    assert notification.payload["data"]["reason"] == "canceled_by_staff"


def test_bulk_cancel_refuses_orders_past_awaiting_transfer(staff_client, partner):
    open_order = create_order(partner)
    received = create_order(partner)
    for step in ("awaiting_transfer", "ticket_received"):
        order_transition(order=received, to=step, actor="staff:x")

    response = _cancel(staff_client, [open_order, received], confirmed="yes", reason="Duplicate")

    assert Order.objects.get(pk=open_order.pk).status == "canceled"
    assert Order.objects.get(pk=received.pk).status == "ticket_received"
    messages = [str(m) for m in get_messages(response.wsgi_request)]
    assert any(received.order_id in m and "ticket_received" in m for m in messages)


def test_order_page_lists_its_notifications(staff_client, partner):
    order = create_order(partner)
    order_transition(order=order, to="canceled", actor="staff:x")
    content = staff_client.get(f"{CHANGELIST}{order.pk}/change/").content.decode()
    for notification in order.notifications.all():
        assert notification.notification_id in content
    assert "order.status_changed" in content or "Order status changed" in content
    assert order.notifications.count() >= 2


def test_orders_cannot_be_added_edited_or_deleted_as_raw_rows(staff_client, partner):
    order = create_order(partner)
    assert staff_client.get(f"{CHANGELIST}add/").status_code == 403
    assert staff_client.get(f"{CHANGELIST}{order.pk}/delete/").status_code == 403
    staff_client.post(f"{CHANGELIST}{order.pk}/change/", {"status": "paid"})
    assert Order.objects.get(pk=order.pk).status == "accepted"


def test_order_page_cancel_button_confirms_then_cancels_once_and_returns_to_the_order(staff_client, partner):
    order = create_order(partner)
    page_url, cancel_url = f"{CHANGELIST}{order.pk}/change/", f"{CHANGELIST}{order.pk}/cancel/"
    page = staff_client.get(page_url).content.decode()
    assert "Cancel order" in page and f'action="{cancel_url}"' in page
    assert staff_client.get(cancel_url)["Location"] == page_url  # a GET changes nothing

    confirm = staff_client.post(cancel_url).content.decode()
    assert 'data-testid="confirm-cancel"' in confirm and order.order_id in confirm
    assert "refunded in full" in confirm and "seller is e-mailed" in confirm
    assert 'name="action"' not in confirm and f'href="{page_url}"' in confirm  # "No, take me back"
    assert (
        "Give a reason"
        in post_confirmed(staff_client, cancel_url, {"confirmed": "yes", "reason": " "}).content.decode()
    )
    assert Order.objects.get(pk=order.pk).status == "accepted"

    done = post_confirmed(staff_client, cancel_url, {"confirmed": "yes", "reason": "Seller sold elsewhere"})
    assert done.status_code == 302 and done["Location"] == page_url
    order.refresh_from_db()
    assert order.status == "canceled"
    last = order.status_history.order_by("-at", "-id").first()
    assert (last.to_status, last.actor, last.reason) == ("canceled", "staff:root", "Seller sold elsewhere")

    # The confirmation sent again (the browser's back button): refused, and still one cancellation.
    again = post_confirmed(staff_client, cancel_url, {"confirmed": "yes", "reason": "again"}, follow=True)
    assert any("Not canceled" in str(m) for m in get_messages(again.wsgi_request))
    assert order.status_history.filter(to_status="canceled").count() == 1
    assert "Cancel order" not in staff_client.get(page_url).content.decode()


def test_order_page_offers_no_cancel_past_awaiting_transfer_or_without_change_permission(
    staff_client, partner
):
    received = create_order(partner)
    for step in ("awaiting_transfer", "ticket_received"):
        order_transition(order=received, to=step, actor="staff:x")
    assert "Cancel order" not in staff_client.get(f"{CHANGELIST}{received.pk}/change/").content.decode()

    viewer = get_user_model().objects.create_user(
        "viewer", "v@example.com", "pw-long-enough-456", is_staff=True
    )
    viewer.user_permissions.add(Permission.objects.get(codename="view_order"))
    client = Client()
    client.force_login(viewer)
    order = create_order(partner)
    assert "Cancel order" not in client.get(f"{CHANGELIST}{order.pk}/change/").content.decode()
    post_confirmed(client, f"{CHANGELIST}{order.pk}/cancel/", {"confirmed": "yes", "reason": "not allowed"})
    assert Order.objects.get(pk=order.pk).status == "accepted"


# --- "Mark tickets received" on the order page ---------------------------------------------------------------------
def _received_rows(order) -> list[tuple[str, str]]:
    return list(
        OrderStatusHistory.objects.filter(order=order, to_status="ticket_received").values_list(
            "actor", "reason"
        )
    )


def test_order_page_marks_tickets_received_after_a_confirmation_with_a_reason(staff_client, partner):
    order = create_order(partner)
    page = f"{CHANGELIST}{order.pk}/change/"
    url = f"{CHANGELIST}{order.pk}/mark-received/"
    assert "Mark tickets received" not in staff_client.get(page).content.decode()  # accepted: not yet
    order_transition(order=order, to="awaiting_transfer", actor="system:confirmation")
    assert "Mark tickets received" in staff_client.get(page).content.decode()

    assert staff_client.get(url)["Location"] == page  # a GET does nothing: the button POSTs
    confirmation = staff_client.post(url)
    assert confirmation.status_code == 200
    html = confirmation.content.decode()
    assert 'data-testid="confirm-mark-received"' in html and order.order_id in html and "payout" in html
    missing_reason = post_confirmed(staff_client, url, {"confirmed": "yes", "reason": "  "})
    assert "Give a reason" in missing_reason.content.decode()
    assert Order.objects.get(pk=order.pk).status == "awaiting_transfer"

    done = post_confirmed(
        staff_client, url, {"confirmed": "yes", "reason": "Arrived in the transfer account"}
    )
    assert done.status_code == 302 and done["Location"] == page
    assert Order.objects.get(pk=order.pk).status == "ticket_received"
    assert _received_rows(order) == [("staff:root", "Arrived in the transfer account")]

    # The same form sent again (a second tab, a resubmission): the life cycle refuses it, the page says so.
    again = post_confirmed(
        staff_client, url, {"confirmed": "yes", "reason": "Arrived in the transfer account"}
    )
    assert again["Location"] == page
    refused = [str(m) for m in get_messages(again.wsgi_request)]
    assert any("does not allow it" in m and order.order_id in m for m in refused), refused
    assert _received_rows(order) == [("staff:root", "Arrived in the transfer account")]
    assert "Mark tickets received" not in staff_client.get(page).content.decode()


def test_mark_tickets_received_needs_its_own_permission(partner):
    order = create_order(partner)
    order_transition(order=order, to="awaiting_transfer", actor="system:confirmation")
    page, url = f"{CHANGELIST}{order.pk}/change/", f"{CHANGELIST}{order.pk}/mark-received/"
    viewer = get_user_model().objects.create_user(
        "viewer", "v@example.com", "pw-long-enough-456", is_staff=True
    )
    viewer.user_permissions.add(Permission.objects.get(codename="view_order"))
    client = Client()
    client.force_login(viewer)
    assert "Mark tickets received" not in client.get(page).content.decode()
    assert client.post(url).status_code == 403
    assert post_confirmed(client, url, {"confirmed": "yes", "reason": "forged"}).status_code == 403
    assert Order.objects.get(pk=order.pk).status == "awaiting_transfer" and _received_rows(order) == []

    viewer.user_permissions.add(Permission.objects.get(codename="mark_received"))
    viewer = get_user_model().objects.get(pk=viewer.pk)  # permissions are cached on the user
    client.force_login(viewer)
    html = client.get(page).content.decode()
    assert "Mark tickets received" in html and "Cancel order" not in html  # canceling is another permission
    post_confirmed(client, url, {"confirmed": "yes", "reason": "Arrived"})
    assert Order.objects.get(pk=order.pk).status == "ticket_received"


def test_a_live_api_order_marked_received_on_its_page_reaches_paid(
    auth_client, partner_creds, row, staff_client, django_capture_on_commit_callbacks, time_machine
):
    event = row.section.event
    quote = auth_client.post(
        "/v1/quotes",
        {"event_id": event.event_id, "section_name": row.section.name, "row_name": row.name, "quantity": 2},
        format="json",
    )
    assert quote.status_code == 201, quote.content
    form = {
        "quote_id": quote.json()["data"]["quote_id"],
        "delivery_type": "mobile_transfer",
        "is_ready_to_deliver": "false",
        "in_hand_date": (event.event_date - timedelta(days=7)).isoformat(),
    }
    with django_capture_on_commit_callbacks(execute=True):  # the confirmation charges the card after commit
        created = post_order(auth_client, form)
    assert created.status_code == 201, created.content
    order_id = created.json()["data"]["order_id"]
    assert auth_client.get(f"/v1/orders/{order_id}").json()["data"]["status"] == "awaiting_transfer"
    order = Order.objects.get(order_id=order_id)
    assert order.livemode

    with django_capture_on_commit_callbacks(execute=True):
        post_confirmed(
            staff_client, f"{CHANGELIST}{order.pk}/mark-received/", {"confirmed": "yes", "reason": "Arrived"}
        )
    assert auth_client.get(f"/v1/orders/{order_id}").json()["data"]["status"] == "ticket_received"
    # A mobile transfer pays out once staff record the tickets accepted on the platform.
    transfer_accept(
        order=order, actor="staff:test", reason="Accepted on platform", reason_code=REASON_ACCEPTED_BY_STAFF
    )

    # The payout runs (every few minutes in production) take it the rest of the way as time passes.
    payouts_progress()
    time_machine.move_to(order.created_at + timedelta(hours=2))
    payouts_progress()
    client = type(auth_client)()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {issue_token(client, partner_creds)}")
    assert client.get(f"/v1/orders/{order_id}").json()["data"]["status"] == "paid"
    assert [
        to for _, to in Order.objects.get(pk=order.pk).status_history.values_list("from_status", "to_status")
    ][-4:] == ["ticket_received", "payout_in_process", "scheduled", "paid"]
