"""Staff confirmations in a real browser (Debian's chromium): the page's form sent twice at the same instant
is carried out once (config/core/confirmation.py: the database consumes the page's id once).

Screenshots at 1280 px go to ``ADMIN_SCREENSHOTS`` (default /tmp/admin-shots).
"""

import os
from pathlib import Path

import pytest

from catalog.models import RowQuantityAdjustment
from tests.catalog.factories import RowFactory
from tests.partners.test_admin_browser import staff_sign_in
from tests.portal.test_browser import browser_page, live_server  # noqa: F401  (fixtures)

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_a_quantity_adjustment_sent_twice_at_once_from_the_page_is_made_once(
    live_server,  # noqa: F811
    browser_page,  # noqa: F811
):
    """The page's form sent twice at the same instant (a double click, a second tab), then sent with an id the
    server never issued: one adjustment, and a page that says why nothing was done."""
    page, base = browser_page, live_server.url
    shots = Path(os.getenv("ADMIN_SCREENSHOTS", "/tmp/admin-shots"))
    shots.mkdir(parents=True, exist_ok=True)
    row = RowFactory(available_quantity=8)
    staff_sign_in(page, base)
    page.goto(f"{base}/admin/catalog/row/{row.pk}/adjust-quantity/")
    page.fill("#id_delta", "5")
    page.fill("#id_reason", "Supplier added seats")
    page.click("input[type=submit]")
    confirmation = page.locator("[data-testid=confirm-adjust-quantity]")
    assert "Add 5 tickets" in page.locator("h1, #content").first.inner_text()
    page.screenshot(path=str(shots / "staff-confirmation-adjust-1280.png"), full_page=True)

    statuses = page.eval_on_selector(
        "[data-testid=confirm-adjust-quantity]",
        """async form => {
            const send = () => fetch(form.action || location.href, {method: "POST", body: new FormData(form)});
            const answers = await Promise.all([send(), send()]);
            return answers.map(a => a.status);
        }""",
    )
    assert statuses == [200, 200]  # each followed its redirect
    assert RowQuantityAdjustment.objects.filter(row=row).count() == 1
    row.refresh_from_db()
    assert row.available_quantity == 13

    # The same page, its id replaced by one the server never issued: refused, nothing done, the page again.
    confirmation.locator("input[name=confirmation_id]").evaluate("input => { input.value = 'forged-id'; }")
    page.click("input[value='Yes, adjust']")
    refused = page.locator(".errornote")
    assert "could not be checked" in refused.inner_text() and "nothing was done" in refused.inner_text()
    page.screenshot(path=str(shots / "staff-confirmation-refused-1280.png"), full_page=True)
    page.reload()  # the browser asks to send the form again: the refused form changes nothing either
    assert RowQuantityAdjustment.objects.filter(row=row).count() == 1
    page.goto(f"{base}/admin/catalog/row/{row.pk}/change/")
    page.reload()
    assert RowQuantityAdjustment.objects.filter(row=row).count() == 1
