"""Staff in a real browser (Debian's chromium): reloading after an action never repeats it."""

import pytest
from django.contrib.auth import get_user_model

from partners.models import Partner, PartnerCredential
from tests.conftest import make_partner
from tests.portal.test_browser import browser_page, live_server  # noqa: F401  (fixtures)

pytestmark = pytest.mark.browser
STAFF, PASSWORD = "boss@service.example", "staff browser pass 8080"


def staff_sign_in(page, base: str) -> None:
    """A new superuser signs in to the admin in ``page``."""
    get_user_model().objects.create_superuser(STAFF, STAFF, PASSWORD)
    page.goto(base + "/admin/login/")
    page.fill("#id_username", STAFF)
    page.fill("#id_password", PASSWORD)
    page.click("input[type=submit]")
    page.wait_for_url(base + "/admin/")


def test_reloads_after_rotating_or_creating_never_repeat_the_action(live_server, browser_page):  # noqa: F811
    """One browser session (the live server is started once per test): rotate, reload; create, reload."""
    page, base = browser_page, live_server.url
    creds = make_partner(name="Reload Resale")
    staff_sign_in(page, base)
    page.goto(f"{base}/admin/partners/partner/{creds.partner.pk}/change/")
    page.click("text=Rotate credentials")
    page.fill("#id_reason", "secret pasted in a chat")
    page.click("input[value='Yes, rotate']")
    secret = page.locator("code.client-secret").inner_text()
    assert secret.startswith("sec_")
    rotated_at = PartnerCredential.objects.get(partner=creds.partner).rotated_at

    page.reload()
    assert page.locator("#secrets-already-shown").is_visible()
    assert page.locator("code.client-secret").count() == 0
    assert secret not in page.content()
    assert PartnerCredential.objects.get(partner=creds.partner).rotated_at == rotated_at

    # Creating a partner: the secrets page after the save, and reloads that create nothing more.
    page.goto(base + "/admin/partners/partner/add/")
    page.fill("#id_name", "Created Once Tickets")
    page.fill("#id_contact_email", "ops@once.example")
    page.click("input[name=_save]")
    assert page.locator("code.client-secret").count() == 2  # the live pair and the test-mode pair
    page.reload()
    page.reload()
    assert page.locator("#secrets-already-shown").is_visible()
    assert Partner.objects.filter(name="Created Once Tickets").count() == 1
