"""The first mail of a platform the service does not know, in a real browser (Debian's chromium), from the
unverified case to the order received, played by two staff members: the case says the sender is not a known
platform and offers "A new platform" pre-filled from the mail; the author of the entry is offered neither
approval nor activation (the page says who must act); a second member approves, the author activates, and the
case is processed again (an unparsed case of its own); the template made from that case is activated and the
order is received with no staff step on it. On the way: "A new platform" from the versions list opens a
commented skeleton, "no change" is words, the breadcrumbs name "Platform templates" everywhere, each pattern
has the learn page's whole width, and a case the service closed says so. Every POST is followed by a reload
that does nothing twice.

Screenshots at 1280 px go to ``ADMIN_SCREENSHOTS`` (default /tmp/admin-shots); with ``STAFF_GUIDE_SCREENSHOTS``
(docs/staff-guide), the guide's copies at 900 px are written there too."""

import os
import re
from pathlib import Path

import pytest

from orders.models import Order
from orders.transfers.models import PlatformTemplateVersion, TransferCase
from orders.transfers.reading.templates_store import KEY_ORDER
from tests.portal.test_browser import browser_page, live_server  # noqa: F401  (fixtures)
from tests.transfers.staff.stagepass import DOMAIN, PLATFORM

from .conftest import staff
from .test_browser import _shots, confirm, eventually, fits_the_width, sign_in
from .test_unknown_platform import newcomer  # noqa: F401  (fixture)

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]
V = PlatformTemplateVersion


def as_member(page, base: str, username: str) -> None:
    page.context.clear_cookies()
    sign_in(page, base, username)


def guide_shot(page, name: str, height: int = 900, at: str = "") -> None:
    """The staff guide's copy of the page, when asked for: ``height`` px of it at 1280 px (from its top or from
    ``at``), scaled to 900 px wide as the guide's other pictures."""
    folder = os.getenv("STAFF_GUIDE_SCREENSHOTS")
    if not folder:
        return
    from PIL import Image

    page.set_viewport_size({"width": 1280, "height": height})
    if at:
        page.eval_on_selector(at, "e => e.scrollIntoView()")
    path = Path(folder) / f"{name}.png"
    page.screenshot(path=str(path))
    picture = Image.open(path)
    picture.resize((900, round(picture.height * 900 / 1280)), Image.LANCZOS).save(path, optimize=True)
    page.set_viewport_size({"width": 1280, "height": 900})


def version_step(page, base: str, version, button: str, submit: str) -> None:
    """Press ``button`` on the version's page, confirm with a reason, and reload the page it returns to."""
    url = f"{base}/admin/transfers/platformtemplateversion/{version.pk}/change/"
    page.goto(url)
    page.click(f"button:has-text('{button}')")
    confirm(page, f"{button}: checked with StagePass", submit)
    page.wait_for_url(url)
    page.reload()


def crumbs(page) -> str:
    return page.inner_text("div.breadcrumbs")


def test_the_first_mail_of_an_unknown_platform_to_the_order_received(
    live_server,  # noqa: F811
    browser_page,  # noqa: F811
    newcomer,  # noqa: F811
):
    page, base, shots = browser_page, live_server.url, _shots()
    staff("alice@service.example", "manage_platform_templates", "resolve_transfer_case")
    staff("bob@service.example", "approve_platform_registry")
    order = newcomer.order()
    message = newcomer.mail(order)
    case = TransferCase.objects.get(message=message, kind="unverified", state="open")
    sign_in(page, base, "alice@service.example")

    # "A new platform" from the versions list: every key of a template file, commented.
    page.goto(f"{base}/admin/transfers/platformtemplateversion/")
    assert "Platform templates" in crumbs(page)
    page.click("text=A new platform")
    skeleton = page.input_value("#id_yaml")
    for key in KEY_ORDER:
        assert re.search(rf"^{key}:", skeleton, re.M), key
    assert skeleton.count("\n# ") >= 6
    page.screenshot(path=str(shots / "template-new-platform-1280.png"), full_page=True)

    # The case: the sender is not a known platform; "A new platform" pre-filled from the mail.
    case_url = f"{base}/admin/transfers/transfercase/{case.pk}/change/"
    page.goto(case_url)
    assert "the sender is not a known platform" in page.content()
    assert "Its sender is not a known platform" in page.inner_text("[data-testid=unknown-sender]")
    page.screenshot(path=str(shots / "template-unknown-sender-1280.png"), full_page=True)
    guide_shot(page, "template-unknown-sender", 600)
    assert fits_the_width(page)
    page.click("[data-testid=new-platform]")
    assert page.input_value("#id_platform") == PLATFORM
    entry_text = page.input_value("#id_yaml")
    assert f"sender_domains: [{DOMAIN}]" in entry_text
    assert "d=stagepass-tickets.com" in page.inner_text("[data-testid=first-mail]")
    page.screenshot(path=str(shots / "template-first-mail-entry-1280.png"), full_page=True)
    guide_shot(page, "template-first-mail-entry", 860)
    page.fill("#id_reason", f"StagePass's registry entry, from case #{case.pk}")
    page.click("input[value='Save as a draft version']")
    page.wait_for_url(re.compile(r".*/platformtemplateversion/\d+/change/$"))
    entry = V.objects.get(platform=PLATFORM)
    page.reload()
    assert V.objects.filter(platform=PLATFORM).count() == 1
    # The author: no Approve, no Activate, and the page says who must act.
    assert [t.lower() for t in page.locator("form.version-step button").all_inner_texts()] == ["discard"]
    assert "a second staff member (not its author" in page.inner_text("[data-testid=registry-change]")
    assert "Platform templates" in crumbs(page) and "Platform template versions" not in crumbs(page)
    page.screenshot(path=str(shots / "template-waits-approval-1280.png"), full_page=True)
    guide_shot(page, "template-waits-approval", 720)

    as_member(page, base, "bob@service.example")
    version_step(page, base, entry, "Approve registry change", "Yes, approve")
    assert V.objects.get(pk=entry.pk).history.filter(reason__startswith="Approved").count() == 1
    as_member(page, base, "alice@service.example")
    version_step(page, base, entry, "Activate", "Yes, activate")
    eventually(lambda: TransferCase.objects.get(pk=case.pk).state == "resolved")
    unparsed = TransferCase.objects.get(message=message, kind="unparsed", state="open")
    page.goto(case_url)
    resolution = page.inner_text("div.field-resolution_shown")
    assert "Closed by the service" in resolution and "it opened a case of its own" in resolution

    # The template, from the unparsed case the mail opened now that it is authentic.
    page.goto(f"{base}/admin/transfers/transfercase/{unparsed.pk}/change/")
    page.click("[data-testid=learn-template]")
    page.wait_for_url(re.compile(r".*/learn/\d+/$"))
    page.screenshot(path=str(shots / "template-learn-1280.png"), full_page=True)
    guide_shot(page, "template-learn", 1000)
    widths = page.eval_on_selector_all(
        "[data-testid=proposals] textarea[name^=pattern_]",
        "els => els.map(e => e.getBoundingClientRect().width)",
    )
    field = page.eval_on_selector("[data-testid=proposals]", "e => e.getBoundingClientRect().width")
    assert widths and min(widths) > 0.9 * field, (widths, field)
    clipped = page.eval_on_selector_all(
        "[data-testid=proposals] textarea[name^=pattern_]",
        "els => els.filter(e => e.value.length <= 100 && e.scrollWidth > e.clientWidth).map(e => e.name)",
    )
    assert clipped == []  # a pattern of up to 100 characters is shown whole at 1280 px
    assert fits_the_width(page)
    page.fill("#id_reason", f"StagePass transfer offers, from case #{unparsed.pk}")
    page.click("button[value=save]")
    page.wait_for_url(re.compile(r".*/platformtemplateversion/\d+/test/$"))
    page.click("button:has-text('Activate this version')")
    confirm(page, "Tested", "Yes, activate")
    page.wait_for_url(re.compile(r".*/platformtemplateversion/\d+/change/$"))
    page.reload()
    guide_shot(page, "template-version-active", 773)
    eventually(lambda: Order.objects.get(pk=order.pk).status == "ticket_received")
    assert Order.objects.get(pk=order.pk).status_history.filter(to_status="ticket_received").count() == 1

    page.goto(f"{base}/admin/transfers/transfercase/{unparsed.pk}/change/")
    resolution = page.inner_text("div.field-resolution_shown")
    assert "the transfer matched the order (the order is ticket received)" in resolution
    assert "Dismissed" not in resolution
    page.screenshot(path=str(shots / "case-closed-by-service-1280.png"), full_page=True)
    guide_shot(page, "template-case-closed-by-service", 330, at="fieldset:has(div.field-resolution_shown)")

    page.goto(f"{base}/admin/transfers/platformtemplateversion/?platform={PLATFORM}")
    listing = page.inner_text("#result_list")
    assert "no change" in listing and "changed, approved by staff:bob@service.example" in listing
    assert page.locator("#result_list img[src$='icon-no.svg']").count() == 0
    page.screenshot(path=str(shots / "template-report-1280.png"), full_page=True)
    guide_shot(page, "template-report", 700)
