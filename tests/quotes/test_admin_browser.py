"""Staff find a quote made a moment ago in the quote admin, in a real browser (Debian's chromium): with Redis the
quote is still on its way to the table, and the list runs the batched writer before it shows; the list fits
1280 px, and the quote's page shows the quote_id the partner holds. Screenshots go to ``ADMIN_SCREENSHOTS``
(default /tmp/admin-shots)."""

import os
from pathlib import Path

import pytest
from rest_framework.test import APIClient

from tests.catalog.factories import EventFactory, RowFactory, SectionFactory
from tests.conftest import issue_token, make_partner
from tests.partners.test_admin_browser import staff_sign_in
from tests.portal.test_browser import browser_page, live_server  # noqa: F401  (fixtures)

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_a_quote_made_a_moment_ago_is_listed_and_shows_its_id(live_server, browser_page):  # noqa: F811
    page, base = browser_page, live_server.url
    shots = Path(os.getenv("ADMIN_SCREENSHOTS", "/tmp/admin-shots"))
    shots.mkdir(parents=True, exist_ok=True)
    creds = make_partner(name="Harbourside Ticket Exchange International", email="ops@harbourside.example")
    event = EventFactory(name="Harbor Lights Tour — Madison Square Garden")
    RowFactory(section=SectionFactory(event=event, name="Lower 101"), name="B", offer_price="120.50")
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {issue_token(client, creds)}")
    body = {"event_id": event.event_id, "section_name": "Lower 101", "row_name": "B", "quantity": 2}
    quote_id = client.post("/v1/quotes", body, format="json").json()["data"]["quote_id"]
    staff_sign_in(page, base)

    page.goto(f"{base}/admin/quotes/quote/")
    assert page.locator("#result_list tbody tr").count() == 1
    page.screenshot(path=str(shots / "quote-list-1280.png"), full_page=True)
    assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")
    # Every column shows: the results table is no wider than the space beside the filters.
    assert page.evaluate("(r => r.scrollWidth <= r.clientWidth)(document.querySelector('.results'))")
    assert "2 × Lower 101 / B" in page.locator("#result_list").inner_text()

    page.fill("#searchbar", quote_id)  # support pastes the id a partner sent
    page.press("#searchbar", "Enter")
    assert page.locator("#result_list tbody tr").count() == 1
    page.locator("#result_list tbody tr a").first.click()
    page.wait_for_url("**/change/**")
    page.wait_for_load_state()
    assert quote_id in page.locator("#content").inner_text()
    page.screenshot(path=str(shots / "quote-page-1280.png"), full_page=True)
    page.reload()
    page.wait_for_load_state()
    assert page.locator("#result_list").count() == 0 and quote_id in page.locator("#content").inner_text()
