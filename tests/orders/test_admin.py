"""Staff admin for orders: list, search, filters, detail, the private PDF download, life-cycle actions."""

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Permission
from django.contrib.messages import get_messages
from django.test import Client

from orders.models import Order
from orders.services import order_transition

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

    response = staff_client.post(
        CHANGELIST,
        {"action": "mark_ticket_received", "_selected_action": [ready.pk, too_early.pk]},
        follow=True,
    )

    assert response.status_code == 200
    ready.refresh_from_db()
    too_early.refresh_from_db()
    assert ready.status == "ticket_received"
    assert too_early.status == "accepted"
    last = ready.status_history.order_by("-at", "-id").first()
    assert last.actor == "staff:root"
    messages = [str(m) for m in get_messages(response.wsgi_request)]
    assert any(ready.order_id in m and "Marked" in m for m in messages)
    assert any(too_early.order_id in m and "accepted" in m and "Not" in m for m in messages)


def test_bulk_cancel_refuses_orders_past_awaiting_transfer(staff_client, partner):
    open_order = create_order(partner)
    received = create_order(partner)
    for step in ("awaiting_transfer", "ticket_received"):
        order_transition(order=received, to=step, actor="staff:x")

    response = staff_client.post(
        CHANGELIST, {"action": "cancel_orders", "_selected_action": [open_order.pk, received.pk]}, follow=True
    )

    assert Order.objects.get(pk=open_order.pk).status == "canceled"
    assert Order.objects.get(pk=received.pk).status == "ticket_received"
    messages = [str(m) for m in get_messages(response.wsgi_request)]
    assert any(received.order_id in m and "ticket_received" in m for m in messages)


def test_orders_cannot_be_added_edited_or_deleted_as_raw_rows(staff_client, partner):
    order = create_order(partner)
    assert staff_client.get(f"{CHANGELIST}add/").status_code == 403
    assert staff_client.get(f"{CHANGELIST}{order.pk}/delete/").status_code == 403
    staff_client.post(f"{CHANGELIST}{order.pk}/change/", {"status": "paid"})
    assert Order.objects.get(pk=order.pk).status == "accepted"
