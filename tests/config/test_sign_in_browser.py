"""Sign-in security in a real browser (Debian's chromium): staff set up two-factor before the admin opens, and
repeated wrong passwords lock the sign-in."""

import base64

import pytest
from django.contrib.auth import get_user_model
from django_otp.oath import totp

from tests.portal.test_browser import browser_page, live_server  # noqa: F401  (fixtures)

pytestmark = pytest.mark.browser
PASSWORD = "staff browser pass 4711"


def test_staff_two_factor_in_production_settings_and_throttled_guessing(live_server, browser_page, settings):  # noqa: F811
    settings.ADMIN_REQUIRE_2FA = True  # what production sets by default
    page, base = browser_page, live_server.url
    get_user_model().objects.create_superuser("chief", "chief@service.example", PASSWORD)

    page.goto(base + "/admin/login/")
    page.fill("#id_username", "chief")
    page.fill("#id_password", PASSWORD)
    page.click("input[type=submit]")
    page.wait_for_url("**/admin/2fa/setup/**")
    assert page.locator("svg.segno").is_visible()
    secret = page.locator("[data-testid=totp-secret]").inner_text().replace(" ", "")
    key = base64.b32decode(secret + "=" * (-len(secret) % 8))
    page.fill("#id_code", f"{totp(key):06d}")
    page.click("text=Turn on two-factor sign-in")
    page.wait_for_url("**/admin/2fa/recovery-codes/**")
    assert page.locator("[data-testid=recovery-codes] li").count() == 10
    page.reload()  # shown once
    assert page.locator("#recovery-already-shown").is_visible()
    page.click("text=Continue")
    page.wait_for_url(base + "/admin/")
    assert page.locator("[data-testid=staff-dashboard]").is_visible()

    # Someone guessing another staff member's password from this browser is locked out.
    get_user_model().objects.create_superuser("deputy", "deputy@service.example", PASSWORD)
    context = page.context.browser.new_context()
    guesser = context.new_page()
    for _ in range(settings.AXES_FAILURE_LIMIT):
        guesser.goto(base + "/admin/login/")
        guesser.fill("#id_username", "deputy")
        guesser.fill("#id_password", "not it")
        guesser.click("input[type=submit]")
    assert guesser.locator("#locked-out").is_visible()
    context.close()
