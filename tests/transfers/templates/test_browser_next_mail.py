"""In a real browser (Debian's chromium): a new staff member teaches BleacherBox (``bleacherbox.py``: its own domain,
DKIM key and selector; a multipart mail whose values sit in the seller's sentence, an "EVENT DETAILS" block, a
padded table without colons and a ticket line with labels mid-line) from the first order's mail, keeping every
proposal and typing no pattern; the test reads the stored mail and its variants; a second staff member
activates the version. The first order is received by the re-processing, and the next order's mail — another
seller, other seats, section and row — reaches ``ticket_received`` with no staff step. A template fitted to
that one mail (the event read from the seller's sentence) shows its variants read wrong, and no Activate.

Screenshots at 1280 px go to ``ADMIN_SCREENSHOTS`` (default /tmp/admin-shots); docs/staff-guide/ keeps smaller
copies of the learn page and of the tests with their variants.
"""

import re

import pytest

from orders.models import Order
from orders.transfers.models import PlatformTemplateVersion
from orders.transfers.reading import platforms
from orders.transfers.reading.learn import learn
from orders.transfers.reading.services import version_create
from tests.portal.test_browser import browser_page, live_server  # noqa: F401  (fixtures)

from .bleacherbox import ACCEPT_HOST, DOMAIN, EVENT, VENUE, bleacherbox_mail
from .conftest import staff
from .test_browser import _shots, activate, eventually, fits_the_width, save_draft, sign_in
from .test_generalise import FITTED_EVENT, template_of

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]
V = PlatformTemplateVersion


@pytest.fixture
def two_members():
    """Alice makes and tests templates (and resolves cases); Bob, another staff member, activates."""
    return (
        staff("alice@service.example", "manage_platform_templates", "resolve_transfer_case"),
        staff("bob@service.example", "manage_platform_templates"),
    )


@pytest.fixture
def admin_page(live_server, browser_page):  # noqa: F811
    """The browser's page, the live server's address and the screenshots' folder."""
    return browser_page, live_server.url, _shots()


@pytest.fixture
def first_case(bleacherbox, two_members):
    """BleacherBox's first order (Maria Gonzalez's seats 5 and 6) and the unparsed case its mail opened."""
    order = bleacherbox.order(section="114", row="12", section__event__venue__name=VENUE, event=EVENT)
    return order, bleacherbox.unparsed(order)


def test_a_template_kept_as_proposed_reads_the_next_sellers_mail(admin_page, bleacherbox, first_case):
    (page, base, shots), (first, case) = admin_page, first_case

    sign_in(page, base, "alice@service.example")
    page.goto(f"{base}/admin/transfers/transfercase/{case.pk}/change/")
    page.click("[data-testid=learn-template]")
    page.wait_for_url(re.compile(r".*/learn/\d+/$"))
    rows = page.locator("[data-testid=proposals] tbody tr").all()
    reads = {row.get_attribute("data-field"): row.locator(".reads").inner_text() for row in rows}
    patterns = [row.locator("textarea[name^=pattern_]").input_value() for row in rows]
    assert {k: v for k, v in reads.items() if k not in ("start", "accept_link")} == {
        "event": EVENT,
        "venue": VENUE,
        "section": "114",
        "row": "12",
        "seats": "5, 6",
        "quantity": "2",
    }
    assert reads["accept_link"].startswith("https://claim.bleacherbox-tickets.com/t/")
    assert not any("Maria" in p or "Gonzalez" in p or "Chiefs" in p for p in patterns)
    assert "Maria" not in page.input_value("#id_subject_pattern")
    page.screenshot(path=str(shots / "template-learn-bleacherbox-1280.png"), full_page=True)
    assert fits_the_width(page)

    save_draft(page, f"BleacherBox transfer offers, from case #{case.pk}")
    draft = V.objects.get(platform="bleacherbox", state="draft")
    summary = page.inner_text("[data-testid=trial-summary]")
    assert "1 would be received automatically" in summary
    assert "2 variants of the mail it would receive" in summary and "0 read wrong or not at all" in summary
    page.screenshot(path=str(shots / "template-test-variants-1280.png"), full_page=True)
    assert fits_the_width(page)
    page.reload()  # read-only
    assert V.objects.filter(platform="bleacherbox").count() == 2

    # A second staff member activates it.
    page.context.clear_cookies()
    sign_in(page, base, "bob@service.example")
    page.goto(f"{base}/admin/transfers/platformtemplateversion/{draft.pk}/test/")
    reason = "Tested: the stored mail and its variants read right"
    said = activate(page, base, draft.pk, button="Activate this version", reason=reason)
    assert "Activate: bleacherbox version" in said
    draft.refresh_from_db()
    assert (draft.state, draft.created_by, draft.activated_by) == (
        "active",
        "staff:alice@service.example",
        "staff:bob@service.example",
    )
    eventually(lambda: Order.objects.get(pk=first.pk).status == "ticket_received")

    # The next order: another seller, other seats, section and row — received with no staff step.
    following = bleacherbox.order(
        quantity=3, section="221", row="7", section__event__venue__name=VENUE, event=EVENT
    )
    message = bleacherbox.mail(following, seller="Devon Brooks", seats=["17", "18", "19"])
    assert message.authentic is True and message.verdicts["parse"]["template_version"] == draft.version
    following.refresh_from_db()
    assert (following.status, following.transfer.state, following.transfer.source) == (
        "ticket_received",
        "detected",
        "email",
    )
    assert following.status_history.filter(to_status="ticket_received").count() == 1


def test_a_template_fitted_to_one_mail_shows_its_variants_read_wrong_and_no_activate(admin_page, first_case):
    (page, base, shots), (order, _) = admin_page, first_case
    text = platforms.mail_text(bleacherbox_mail(order))
    learned = learn(text=text.text, subject=text.subject, order=order, accept_hosts=(ACCEPT_HOST,))
    patterns = {name: p.pattern for name, p in learned.proposals.items()}
    fitted = version_create(
        platform="bleacherbox",
        data={
            **template_of({**patterns, "event": FITTED_EVENT}, learned.subject_pattern),
            "sender_domains": [DOMAIN],
        },
        actor="staff:alice@service.example",
        reason="The event from the seller's sentence",
    )
    sign_in(page, base, "alice@service.example")
    page.goto(f"{base}/admin/transfers/platformtemplateversion/{fitted.pk}/test/")
    assert "0 would be received automatically against a different staff outcome" in page.inner_text(
        "[data-testid=trial-summary]"
    )
    assert "2 read wrong or not at all" in page.inner_text("[data-testid=variants-summary]")
    wrong = page.locator("[data-testid=variants] div.bad")
    assert wrong.count() == 2 and "reads wrong: event (read: nothing)" in wrong.first.inner_text()
    assert "seller Maria Gonzalez → Devon Brooks" in wrong.first.inner_text()
    assert page.locator("[data-testid=cannot-activate]").count() == 1
    assert page.locator("button:has-text('Activate this version')").count() == 0
    page.screenshot(path=str(shots / "template-test-variants-wrong-1280.png"), full_page=True)
    assert fits_the_width(page)
    fitted.refresh_from_db()
    assert fitted.state == "draft" and Order.objects.get(pk=order.pk).status == "awaiting_transfer"
