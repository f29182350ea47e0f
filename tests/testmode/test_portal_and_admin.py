"""The portal's Test/Live switch and test credentials, and the staff admin's mode filter
(docs/partners/test-mode.md "Test mode": staff views show live data by default)."""

import re

import pytest
from django.contrib.auth import get_user_model
from django.test import Client

from partners.portal_services import portal_user_invite
from tests.confirming import post_confirmed
from tests.conftest import login_with_password
from tests.quotes.factories import quotes_written

from .conftest import api_order, client_for

PASSWORD = "correct horse battery staple 42"


@pytest.fixture(autouse=True)
def _fast_password_hashing(settings):
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@pytest.fixture
def portal_client(pairs) -> Client:
    portal_user_invite(partner=pairs.partner, email="alice@acme.example", password=PASSWORD)
    client = Client()
    assert login_with_password(client, username="alice@acme.example", password=PASSWORD)
    return client


@pytest.fixture
def one_order_each(live_client, test_client, row):
    return {"live": api_order(live_client, row), "test": api_order(test_client, row)}


def switch(client: Client, mode: str, next_url: str = "/portal/orders"):
    return client.post("/portal/mode", {"mode": mode, "next": next_url})


def test_portal_shows_live_orders_until_switched_to_test(portal_client, one_order_each):
    live_id, test_id = one_order_each["live"]["order_id"], one_order_each["test"]["order_id"]
    page = portal_client.get("/portal/orders").content.decode()
    assert live_id in page and test_id not in page
    assert 'data-testid="test-mode-banner"' not in page
    assert portal_client.get(f"/portal/orders/{test_id}").status_code == 404

    response = switch(portal_client, "test")
    assert response.status_code == 302 and response["Location"] == "/portal/orders"
    page = portal_client.get("/portal/orders").content.decode()
    assert test_id in page and live_id not in page
    assert 'data-testid="test-mode-banner"' in page
    assert portal_client.get(f"/portal/orders/{test_id}").status_code == 200
    assert portal_client.get(f"/portal/orders/{live_id}").status_code == 404
    csv = b"".join(portal_client.get("/portal/orders.csv").streaming_content).decode()
    assert test_id in csv and live_id not in csv

    switch(portal_client, "live")
    page = portal_client.get("/portal/orders").content.decode()
    assert live_id in page and 'data-testid="test-mode-banner"' not in page


def test_portal_test_order_page_says_no_real_charge_and_no_payout(portal_client, one_order_each):
    """A test order is charged on a sandbox test card and never paid out: its page says so instead of
    "Not charged yet" and "Starts once the ticket is received", which only a live order can expect."""
    switch(portal_client, "test")
    page = portal_client.get(f"/portal/orders/{one_order_each['test']['order_id']}").content.decode()
    assert "test orders are never charged to a real card" in page
    assert "test orders are never paid out" in page
    assert "Not charged yet" not in page and "Starts once the ticket is received" not in page


def test_portal_notifications_follow_the_switch_and_filter_by_type(portal_client, one_order_each, pairs):
    from orders.models import Notification

    live_id, test_id = one_order_each["live"]["order_id"], one_order_each["test"]["order_id"]
    live = Notification.objects.filter(partner=pairs.partner, livemode=True)
    test = Notification.objects.filter(partner=pairs.partner, livemode=False)
    assert live.exists() and test.exists()

    page = portal_client.get("/portal/notifications").content.decode()
    assert all(n in page for n in live.values_list("notification_id", flat=True))
    assert not any(n in page for n in test.values_list("notification_id", flat=True))
    assert live_id in page and test_id not in page

    switch(portal_client, "test", "/portal/notifications")
    page = portal_client.get("/portal/notifications").content.decode()
    assert all(n in page for n in test.values_list("notification_id", flat=True))
    assert not any(n in page for n in live.values_list("notification_id", flat=True))

    created = test.filter(type="order.created").values_list("notification_id", flat=True)
    changed = test.exclude(type="order.created").values_list("notification_id", flat=True)
    page = portal_client.get("/portal/notifications?type=order.created").content.decode()
    assert all(n in page for n in created) and not any(n in page for n in changed)
    # An unknown type shows everything rather than an error page.
    assert portal_client.get("/portal/notifications?type=nonsense").status_code == 200


def test_switch_never_redirects_off_the_portal(portal_client):
    response = switch(portal_client, "test", next_url="https://evil.example/")
    assert response["Location"] == "/portal/"


def test_portal_webhooks_follow_the_switch(portal_client, live_client, test_client):
    live = live_client.post(
        "/v1/webhook_endpoints", {"url": "http://127.0.0.1:9/live", "event_types": ["*"]}, format="json"
    ).json()["data"]
    test = test_client.post(
        "/v1/webhook_endpoints", {"url": "http://127.0.0.1:9/test", "event_types": ["*"]}, format="json"
    ).json()["data"]
    page = portal_client.get("/portal/settings/webhooks/").content.decode()
    assert live["endpoint_id"] in page and test["endpoint_id"] not in page
    switch(portal_client, "test")
    page = portal_client.get("/portal/settings/webhooks/").content.decode()
    assert test["endpoint_id"] in page and live["endpoint_id"] not in page
    assert portal_client.get(f"/portal/settings/webhooks/{live['endpoint_id']}").status_code == 404
    # An endpoint added while in test mode is a test-mode endpoint.
    portal_client.post(
        "/portal/settings/webhooks/",
        {"url": "http://127.0.0.1:9/added", "event_types": ["*"], "description": ""},
    )
    listed = test_client.get("/v1/webhook_endpoints").json()["data"]["results"]
    assert {e["url"] for e in listed} >= {"http://127.0.0.1:9/test"}
    assert all(e["livemode"] is False for e in listed)


def test_portal_rotates_the_test_pair_on_its_own_and_shows_the_secret_once(portal_client, pairs):
    live_api, test_api = client_for(pairs.live), client_for(pairs.test)
    page = portal_client.get("/portal/settings/api-credentials").content.decode()
    assert pairs.test.client_id in page and pairs.live.client_id in page

    response = portal_client.post("/portal/settings/api-credentials", {"test-password": PASSWORD})
    assert response.status_code == 302  # a reload of the next page does not rotate again
    shown = portal_client.get("/portal/settings/api-credentials").content.decode()
    secret = re.search(r'data-testid="client-secret">(sec_test_[^<]+)<', shown).group(1)
    assert secret not in portal_client.get("/portal/settings/api-credentials").content.decode()

    assert test_api.get("/v1/orders").status_code == 401  # old test tokens stop working
    assert live_api.get("/v1/orders").status_code == 200  # live ones do not
    from rest_framework.test import APIClient

    token = APIClient().post(
        "/v1/auth/token",
        {"client_id": pairs.test.client_id, "client_secret": secret, "grant_type": "client_credentials"},
        format="json",
    )
    assert token.status_code == 200


def test_portal_test_rotation_needs_the_password(portal_client, pairs):
    response = portal_client.post("/portal/settings/api-credentials", {"test-password": "wrong"})
    assert response.status_code == 400
    assert client_for(pairs.test).get("/v1/orders").status_code == 200


@pytest.fixture
def staff_client(db) -> Client:
    user = get_user_model().objects.create_superuser("root", "root@example.com", "pw-long-enough-123")
    client = Client()
    client.force_login(user)
    return client


@pytest.mark.parametrize("changelist", ["/admin/orders/order/", "/admin/orders/notification/"])
def test_admin_shows_live_by_default_and_test_on_request(staff_client, one_order_each, changelist):
    live_id, test_id = one_order_each["live"]["order_id"], one_order_each["test"]["order_id"]
    default = staff_client.get(changelist).content.decode()
    assert live_id in default and test_id not in default
    test = staff_client.get(changelist, {"mode": "test"}).content.decode()
    assert test_id in test and live_id not in test
    both = staff_client.get(changelist, {"mode": "all"}).content.decode()
    assert test_id in both and live_id in both


def test_admin_quotes_default_to_live(staff_client, live_client, test_client, row, pairs):
    from quotes.models import Quote

    from .conftest import api_quote

    api_quote(live_client, row)
    api_quote(test_client, row)
    quotes_written()
    live_pk = Quote.objects.get(livemode=True).pk
    quotes_written()
    test_pk = Quote.objects.get(livemode=False).pk
    default = staff_client.get("/admin/quotes/quote/")
    assert [q.pk for q in default.context["cl"].result_list] == [live_pk]
    test = staff_client.get("/admin/quotes/quote/", {"mode": "test"})
    assert [q.pk for q in test.context["cl"].result_list] == [test_pk]


def test_admin_rotates_the_test_pair_and_shows_it_once(staff_client, pairs):
    url = f"/admin/partners/partner/{pairs.partner.pk}/rotate-test/"
    assert staff_client.get(url).status_code == 200  # asks first
    response = post_confirmed(staff_client, url, {"confirmed": "yes", "reason": "lost"})
    assert response.status_code == 302
    page = staff_client.get(response["Location"]).content.decode()
    assert pairs.test.client_id in page and "sec_test_" in page
    assert client_for(pairs.live).get("/v1/orders").status_code == 200


def _stat(page: str, name: str) -> str | None:
    found = re.search(rf'data-testid="stat-{name}">.*?<div class="value">([^<]*)<', page)
    return found.group(1) if found else None


def test_the_dashboard_in_test_mode_shows_test_figures_only_and_says_payouts_are_live(
    portal_client, pairs, live_client, test_client, row
):
    from decimal import Decimal

    from django.utils import timezone

    from orders.models import Order
    from tests.portal.exports_data import payout_on

    live_id = api_order(live_client, row)["order_id"]
    test_ids = [api_order(test_client, row, quantity=1)["order_id"] for _ in range(3)]
    payout_on(
        Order.objects.get(order_id=live_id), status="paid", paid_at=timezone.now(), amount=Decimal("4321.00")
    )

    live = portal_client.get("/portal/").content.decode()
    assert _stat(live, "active-orders") == "1"
    assert _stat(live, "paid-out") == "$4,321.00" and _stat(live, "in-flight") == "$0.00"
    assert live_id in live and not any(test_id in live for test_id in test_ids)

    switch(portal_client, "test", "/portal/")
    test = portal_client.get("/portal/").content.decode()
    assert _stat(test, "active-orders") == "3"
    assert "Active test orders" in test and "Recent test orders" in test
    # No live money beside test counts: the payouts are named live-only, with the way to them.
    assert "4,321" not in test and _stat(test, "paid-out") is None and _stat(test, "in-flight") is None
    note = re.search(r'data-testid="stat-payouts-live-only">(.*?)</div>\s*</div>', test, re.S).group(1)
    assert "never paid out" in note and 'href="/portal/payouts"' in note
    assert all(test_id in test for test_id in test_ids) and live_id not in test
    # What stays live on the page says so: the payment readiness, and the client_id is the test pair's.
    assert "Live account and payments" in test and 'data-testid="readiness-live-note"' in test
    assert pairs.test.client_id in test and pairs.live.client_id not in test
    assert pairs.live.client_id in live and 'data-testid="readiness-live-note"' not in live
