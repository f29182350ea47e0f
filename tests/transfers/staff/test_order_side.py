"""The transfer on the order's admin page and list (the panel, the bulk "Mark accepted on platform" with the
accept links, "Mark tickets received" asking whether the tickets were accepted on the platform), and the
"Transfers" queue on the dashboard and in the metrics."""

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Permission
from django.core.cache import cache
from django.test import Client
from django.urls import reverse
from prometheus_client.parser import text_string_to_metric_families

from orders.models import Notification, Order
from orders.transfers.decision import state
from orders.transfers.models import TransferCase
from payouts.backoffice.dashboard import staff_dashboard
from tests.confirming import post_confirmed
from tests.conftest import make_partner
from tests.orders.factories import make_order

from .fixtures import ACCEPT_LINK, detected_order, mismatch_case

pytestmark = pytest.mark.django_db
CHANGELIST = "/admin/orders/order/"


def staff(username: str, *codenames: str) -> Client:
    user = get_user_model().objects.create_user(
        username, f"{username}@service.example", "pw-long-123456", is_staff=True
    )
    user.user_permissions.add(*Permission.objects.filter(codename__in=["view_order", *codenames]))
    client = Client()
    client.force_login(user)
    return client


@pytest.fixture
def partner():
    return make_partner(name="Harbour Tickets").partner


def test_the_order_page_shows_the_transfer_panel_with_its_open_cases(partner):
    order = make_order(partner, status="awaiting_transfer")
    case = mismatch_case(order)
    html = staff("viewer").get(reverse("admin:orders_order_change", args=[order.pk])).content.decode()
    panel = html.split('data-testid="transfer-panel"')[1].split("</table>")[0]
    assert "Mismatch" in panel and f"0 of {order.quantity}" in panel and "E-mail" in panel
    assert reverse("admin:transfers_transfercase_change", args=[case.pk]) in panel


def test_mark_received_from_the_order_page_asks_about_the_platform_and_records_accepted(partner):
    order = make_order(partner, status="awaiting_transfer")
    client = staff("ops", "mark_received")
    url = reverse("admin:orders_order_mark_received", args=[order.pk])
    assert "Were the tickets accepted on the platform?" in client.post(url).content.decode()
    response = post_confirmed(
        client, url, {"confirmed": "yes", "reason": "In our platform account", "accepted": "yes"}
    )
    assert response.status_code == 302
    order.refresh_from_db()
    assert (order.status, order.transfer.state, order.transfer.source) == (
        "ticket_received",
        "accepted",
        "staff",
    )
    assert order.transfer.accepted_at is not None
    last = order.status_history.order_by("-id").first()
    assert (last.to_status, last.reason) == ("ticket_received", "In our platform account")
    reasons = set(Notification.objects.filter(order=order).values_list("payload__data__reason", flat=True))
    assert "received_by_staff" in reasons
    before = order.status_history.count()
    post_confirmed(client, url, {"confirmed": "yes", "reason": "again", "accepted": "yes"})
    assert Order.objects.get(pk=order.pk).status_history.count() == before  # a reload moves nothing twice


def test_the_order_list_records_detected_transfers_accepted_on_the_platform_in_bulk(partner):
    detected = make_order(partner, status="awaiting_transfer")
    mismatch_case(detected)
    state.order_receive(order=detected, source="email", actor="system:transfers", reason="matched")
    waiting = make_order(partner, status="awaiting_transfer")
    client = staff("ops", "mark_accepted_on_platform")
    selection = {
        "action": "mark_accepted_on_platform",
        "_selected_action": [detected.pk, waiting.pk],
        "index": "0",
    }
    confirmation = client.post(CHANGELIST, selection).content.decode()
    assert 'data-testid="confirm-accept"' in confirmation
    assert f'href="{ACCEPT_LINK.format(detected.order_id)}"' in confirmation
    assert 'rel="noopener noreferrer nofollow"' in confirmation
    assert (
        post_confirmed(client, CHANGELIST, {**selection, "confirmed": "yes", "reason": " "}).status_code
        == 200
    )
    assert Order.objects.get(pk=detected.pk).transfer.state == "detected"
    post_confirmed(
        client, CHANGELIST, {**selection, "confirmed": "yes", "reason": "accepted in the platform app"}
    )
    assert Order.objects.get(pk=detected.pk).transfer.state == "accepted"
    assert Order.objects.get(pk=waiting.pk).transfer.state == "none"
    assert Notification.objects.filter(order=detected, payload__data__reason="accepted_by_staff").count() == 1
    post_confirmed(
        client, CHANGELIST, {**selection, "confirmed": "yes", "reason": "accepted in the platform app"}
    )
    assert Notification.objects.filter(order=detected, payload__data__reason="accepted_by_staff").count() == 1


def test_the_order_list_action_needs_its_permission(partner):
    order = detected_order(partner)
    client = staff("viewer", "mark_received")
    assert 'value="mark_accepted_on_platform"' not in client.get(CHANGELIST).content.decode()
    post_confirmed(
        client,
        CHANGELIST,
        {
            "action": "mark_accepted_on_platform",
            "_selected_action": [order.pk],
            "confirmed": "yes",
            "reason": "x",
        },
    )
    assert Order.objects.get(pk=order.pk).transfer.state == "detected"


def test_the_dashboard_queue_and_the_metric_count_open_live_cases(partner, client, settings):
    live = make_order(partner, status="awaiting_transfer")
    mismatch_case(live)
    test_order = make_order(make_partner(name="T", email="t@t.example").partner, status="awaiting_transfer")
    Order.objects.filter(pk=test_order.pk).update(livemode=False)
    mismatch_case(Order.objects.get(pk=test_order.pk))
    resolved = mismatch_case(make_order(partner, status="awaiting_transfer"))
    state.case_move(case=resolved, to="resolved", actor="staff:x", reason="r", resolution="dismissed")

    dashboard = staff_dashboard()
    queue = next(q for q in dashboard.queues if q.label == "Transfer cases")
    assert queue.count == 1 and queue.url == "/admin/transfers/transfercase/?state=unresolved"
    assert [(q.label, q.count) for q in dashboard.transfer_cases] == [("Mismatch", 1)]
    assert TransferCase.objects.filter(state="open").count() == 2

    cache.clear()
    body = client.get("/metrics", REMOTE_ADDR="127.0.0.1").content.decode()
    staff_queue = {f.name: f for f in text_string_to_metric_families(body)}["buyback_staff_queue"]
    assert {s.labels["queue"]: s.value for s in staff_queue.samples}["transfer_cases"] == 1


def test_the_admin_index_shows_the_transfers_tile(partner):
    mismatch_case(make_order(partner, status="awaiting_transfer"))
    root = get_user_model().objects.create_superuser("root", "root@service.example", "pw-long-123456")
    client = Client()
    client.force_login(root)
    html = client.get("/admin/").content.decode()
    tile = html.split('data-testid="transfer-cases"')[1].split("</section>")[0]
    assert "Mismatch" in tile and "kind__exact=mismatch" in tile
