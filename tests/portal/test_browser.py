"""The whole portal flow in a real browser: Debian's chromium driven by Playwright against a live server.

A new partner signs in, connects a payout account on the sandbox's bank page, adds a card on the sandbox's
card page, sees the checklist complete, and from then on POST /v1/quotes succeeds (before: 403
PAYOUT_METHOD_NOT_CONFIGURED). The order it then sells is charged, paid out, and shown as paid.
"""

import json
import os
import urllib.error
import urllib.request
from datetime import timedelta

import pytest
import time_machine
from django.utils import timezone

from orders.models import Order
from orders.transfers.decision.state import order_receive
from partners.portal_services import portal_user_invite
from payouts.models import Charge, CreditCard, PayoutAccount
from payouts.services.progression import payouts_progress
from tests.catalog.factories import RowFactory
from tests.conftest import make_partner
from tests.faults.live import real_clock_env

CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
EMAIL, PASSWORD = "owner@newresale.example", "browser test pass 4242"
CARD_NUMBER, ACCOUNT_NUMBER = "4242 4242 4242 4242", "000123456789"


@pytest.fixture
def live_server(settings, transactional_db):
    """pytest-django's live server, started for this test: the service sets no MEDIA_URL (ticket PDFs are
    private) and Django's live-server thread needs one when it starts, so it is set first."""
    from django.db import connections
    from pytest_django.live_server_helper import LiveServer

    # An earlier test may have ended this thread's database connection (the fault tests terminate backends,
    # and so does the teardown below): a transactional test starts on a fresh one from the checked pool.
    connections.close_all()
    settings.MEDIA_URL = "/__live-server-media__/"
    server = LiveServer(os.getenv("DJANGO_LIVE_TEST_SERVER_ADDRESS") or "localhost")
    yield server
    server.stop()
    _end_leftover_connections()


def _close_connections_of_this_context() -> None:
    """While Playwright's event loop runs in this thread, Django's connections are those of the loop's
    context, not the thread's: left open, the next browser test would find its context's connection ended
    by ``_end_leftover_connections`` and its first query would fail."""
    from django.db import connections

    connections.close_all()


def _end_leftover_connections() -> None:
    """A request thread of the live server can still hold a pooled connection to the test database, which
    would then refuse to be dropped at the end of the run: close our pool, then end such leftovers."""
    import psycopg
    from django.db import connection, connections

    connections.close_all()
    connection.close_pool()
    params = {**connection.get_connection_params(), "dbname": "postgres"}
    params.pop("cursor_factory", None)
    params.pop("context", None)
    test_db = connection.settings_dict["NAME"]
    with psycopg.connect(**params, autocommit=True) as admin:
        admin.execute(
            "SELECT pg_terminate_backend(pid, 5000) FROM pg_stat_activity WHERE datname = %s AND pid <> %s",
            [test_db, admin.info.backend_pid],
        )
    # Whatever the pool handed out meanwhile was among those: start the next test with a fresh pool.
    connections.close_all()
    connection.close_pool()


def portal_sign_in(page, base: str, *, email: str, password: str) -> None:
    """A portal user signs in on the portal's sign-in page in ``page``."""
    page.goto(f"{base}/portal/login")
    page.fill("input[name=username]", email)
    page.fill("input[name=password]", password)
    page.click("button[type=submit]")
    page.wait_for_url(f"{base}/portal/")


@pytest.fixture
def browser_page():
    from playwright.sync_api import sync_playwright

    # Playwright's sync API keeps an event loop running in this thread; the ORM calls of the test are sync.
    previous = os.environ.get("DJANGO_ALLOW_ASYNC_UNSAFE")
    os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"
    with sync_playwright() as playwright:
        # The browser is the partner's own program: on the machine's real clock (libfaketime's preload, which
        # `make test-dates` gives every process, stops chromium from starting).
        browser = playwright.chromium.launch(
            executable_path="/usr/bin/chromium", args=CHROMIUM_ARGS, env=real_clock_env()
        )
        page = browser.new_page(viewport={"width": 1280, "height": 900})
        page.set_default_timeout(15_000)
        _close_connections_of_this_context()
        try:
            yield page
        finally:
            browser.close()
            _close_connections_of_this_context()
    if previous is None:
        os.environ.pop("DJANGO_ALLOW_ASYNC_UNSAFE", None)
    else:
        os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = previous


def _api(
    base: str, path: str, *, token: str | None = None, body: dict | None = None, form: dict | None = None
):
    headers = {"Accept": "application/json"}
    data = None
    if token:
        headers["Authorization"] = f"Bearer {token}"
    if body is not None:
        headers["Content-Type"] = "application/json"
        data = json.dumps(body).encode()
    if form is not None:
        boundary = "----browser-test-boundary"
        parts = [
            f'--{boundary}\r\nContent-Disposition: form-data; name="{key}"\r\n\r\n{value}\r\n'
            for key, value in form.items()
        ]
        data = ("".join(parts) + f"--{boundary}--\r\n").encode()
        headers["Content-Type"] = f"multipart/form-data; boundary={boundary}"
    request = urllib.request.Request(
        base + path, data=data, headers=headers, method="POST" if data else "GET"
    )
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


def sandbox_authorize_account(page, *, method: str, holder: str, account_number: str) -> None:
    """The sandbox's bank authorization page (the browser is on it): the account typed and authorized."""
    page.wait_for_url("**/sandbox/authorize?**")
    page.check(f"input[name=method][value={method}]")
    page.fill("#id_holder_name", holder)
    page.fill("#id_routing_number", "110000000")
    page.fill("#id_account_number", account_number)
    page.fill("#id_account_number_confirm", account_number)
    page.click("button[name=authorize]")


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_portal_setup_in_a_browser_unlocks_quotes_and_the_sale_gets_paid(live_server, browser_page):
    page = browser_page
    base = live_server.url
    creds = make_partner(name="New Resale", email="ops@newresale.example", payment_methods=False)
    portal_user_invite(partner=creds.partner, email=EMAIL, password=PASSWORD)
    row = RowFactory(offer_price="75.25", available_quantity=10)
    event = row.section.event

    status, body = _api(
        base,
        "/v1/auth/token",
        body={
            "client_id": creds.client_id,
            "client_secret": creds.client_secret,
            "grant_type": "client_credentials",
        },
    )
    assert status == 200
    token = body["data"]["access_token"]
    quote_body = {
        "event_id": event.event_id,
        "section_name": row.section.name,
        "row_name": row.name,
        "quantity": 2,
    }
    status, body = _api(base, "/v1/quotes", token=token, body=quote_body)
    assert status == 403
    assert body["error"]["code"] == "PAYOUT_METHOD_NOT_CONFIGURED"
    assert sorted(body["error"]["details"]["missing"]) == ["credit_card", "payout_method"]

    portal_posts: list[str] = []
    page.on(
        "request",
        lambda r: (
            portal_posts.append(r.post_data or "") if r.method == "POST" and "/portal/" in r.url else None
        ),
    )

    # Sign in.
    portal_sign_in(page, base, email=EMAIL, password=PASSWORD)
    assert page.get_attribute("[data-testid=check-payout_method]", "data-done") == "false"
    assert page.get_attribute("[data-testid=check-credit_card]", "data-done") == "false"

    # Connect a payout account on the sandbox's bank authorization page.
    page.click("text=Connect payout account")  # dashboard → Payment Methods
    page.wait_for_url(f"{base}/portal/settings/payment-methods")
    page.click("button:has-text('Connect payout account')")
    sandbox_authorize_account(page, method="wire", holder="New Resale LLC", account_number=ACCOUNT_NUMBER)
    page.wait_for_url(f"{base}/portal/settings/payment-methods")
    assert "Sandbox Test Bank ••••6789" in page.inner_text("[data-testid=payout-account]")
    assert "Wire transfer" in page.inner_text("[data-testid=payout-account]")

    # Add a card on the sandbox's card page.
    page.click("button:has-text('Add card')")
    page.wait_for_url("**/sandbox/cards/new?**")
    page.fill("#id_holder_name", "New Resale LLC")
    page.fill("#id_number", CARD_NUMBER)
    page.fill("#id_expiry", "12 / 34")
    page.fill("#id_cvc", "123")
    page.click("button[name=save]")
    page.wait_for_url(f"{base}/portal/settings/payment-methods")
    assert "Visa ••••4242" in page.inner_text("[data-testid=credit-card]")

    # The checklist is complete.
    page.click("nav >> text=Dashboard")
    page.wait_for_url(f"{base}/portal/")
    assert page.get_attribute("[data-testid=check-payout_method]", "data-done") == "true"
    assert page.get_attribute("[data-testid=check-credit_card]", "data-done") == "true"
    assert page.inner_text("[data-testid=readiness-status]") == "Ready"
    assert "Your account is ready to sell." in page.inner_text("[data-testid=readiness]")

    # The portal never received a card or account number: they were typed on the platform's pages only.
    assert portal_posts, "the portal's own forms were posted"
    for posted in portal_posts:
        assert "4242424242424242" not in posted.replace(" ", "").replace("+", "")
        assert ACCOUNT_NUMBER not in posted
    account = PayoutAccount.objects.get(partner=creds.partner)
    assert (account.method, account.last4) == ("wire", "6789")
    assert CreditCard.objects.get(partner=creds.partner).last4 == "4242"

    # Now the API takes quotes and orders.
    status, body = _api(base, "/v1/quotes", token=token, body=quote_body)
    assert status == 201, body
    quote_id = body["data"]["quote_id"]
    in_hand = (event.event_date - timedelta(days=5)).isoformat()
    status, body = _api(
        base,
        "/v1/orders",
        token=token,
        form={
            "quote_id": quote_id,
            "delivery_type": "mobile_transfer",
            "is_ready_to_deliver": "false",
            "in_hand_date": in_hand,
        },
    )
    assert status == 201, body
    order = Order.objects.get(order_id=body["data"]["order_id"])
    assert order.status == "awaiting_transfer"  # confirmed in the background: the card was charged
    assert Charge.objects.get(order=order).status == "succeeded"

    # Tickets arrive; payouts progress on the platform's clock until paid.
    order_receive(order=order, source="staff", actor="staff:test", reason="Tickets received", accepted=True)
    start = timezone.now()
    with time_machine.travel(start, tick=False) as clock:
        payouts_progress()
        clock.move_to(start + timedelta(hours=1))
        payouts_progress()
    order.refresh_from_db()
    assert order.status == "paid"

    page.goto(f"{base}/portal/orders/{order.order_id}")
    assert page.inner_text("[data-testid=order-status]") == "Paid"
    assert "$150.50" in page.inner_text("[data-testid=order-payout]")
    history = page.inner_text("[data-testid=status-history]")
    for status_name in (
        "accepted",
        "awaiting_transfer",
        "ticket_received",
        "payout_in_process",
        "scheduled",
        "paid",
    ):
        assert status_name in history
