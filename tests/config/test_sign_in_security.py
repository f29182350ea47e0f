"""Sign-in security for people: throttled password guessing, and two-factor sign-in for staff and partners."""

import os
import subprocess
import sys
from datetime import timedelta

import pytest
from django.contrib.auth import get_user_model
from django.test import Client
from django.utils import timezone
from django_otp.oath import totp
from django_otp.plugins.otp_totp.models import TOTPDevice

from partners.portal_services import portal_user_invite
from tests.conftest import make_partner

PASSWORD = "a long staff pass 2026"


def _code(user) -> str:
    device = TOTPDevice.objects.filter(user=user).first()
    return f"{totp(device.bin_key, step=device.step, t0=device.t0, digits=device.digits):06d}"


@pytest.fixture
def staff_user(db):
    return get_user_model().objects.create_superuser("boss", "boss@service.example", PASSWORD)


# --- throttling ------------------------------------------------------------------------------------------
@pytest.mark.django_db
def test_admin_sign_in_locks_after_the_configured_failures(staff_user, settings):
    client = Client(REMOTE_ADDR="203.0.113.9")
    for _ in range(settings.AXES_FAILURE_LIMIT - 1):
        response = client.post("/admin/login/", {"username": "boss", "password": "wrong"})
        assert response.status_code == 200  # the form again, with its error
    locked = client.post("/admin/login/", {"username": "boss", "password": "wrong"})
    assert locked.status_code == 429
    assert 'id="locked-out"' in locked.content.decode()
    # Locked means locked: even the right password is refused from there now.
    again = client.post("/admin/login/", {"username": "boss", "password": PASSWORD})
    assert again.status_code == 429
    # Someone else's guessing never locks the staff member out from their own address.
    elsewhere = Client(REMOTE_ADDR="198.51.100.20")
    assert elsewhere.post("/admin/login/", {"username": "boss", "password": PASSWORD}).status_code == 302


@pytest.mark.django_db
def test_portal_sign_in_locks_after_the_configured_failures(settings):
    creds = make_partner()
    portal_user_invite(partner=creds.partner, email="ann@acme.example", password=PASSWORD)
    client = Client(REMOTE_ADDR="203.0.113.10")
    statuses = [
        client.post("/portal/login", {"username": "ann@acme.example", "password": "nope"}).status_code
        for _ in range(settings.AXES_FAILURE_LIMIT)
    ]
    assert statuses[-1] == 429 and 429 not in statuses[:-1]
    assert (
        client.post("/portal/login", {"username": "ann@acme.example", "password": PASSWORD}).status_code
        == 429
    )


@pytest.mark.django_db
def test_a_success_resets_the_failure_count(staff_user, settings):
    client = Client(REMOTE_ADDR="203.0.113.11")
    for _ in range(settings.AXES_FAILURE_LIMIT - 1):
        client.post("/admin/login/", {"username": "boss", "password": "wrong"})
    assert client.post("/admin/login/", {"username": "boss", "password": PASSWORD}).status_code == 302
    client.logout()
    for _ in range(settings.AXES_FAILURE_LIMIT - 1):
        assert client.post("/admin/login/", {"username": "boss", "password": "wrong"}).status_code == 200


# --- staff two-factor ------------------------------------------------------------------------------------
def test_two_factor_for_staff_is_required_by_default_in_production():
    env = {
        **{k: v for k, v in os.environ.items() if k != "ADMIN_REQUIRE_2FA"},
        "DJANGO_ENV": "production",
        "SECRET_KEY": "x" * 60,
        "TOKEN_SIGNING_KEY": "k",
        "QUOTE_ENCRYPTION_KEY": "q",
        "ALLOWED_HOSTS": "api.example.com",
        "PAYMENT_PLATFORM": "sandbox",
        "DATABASE_URL": "postgres://postgres@127.0.0.1:5432/unused",
        "REDIS_URL": "redis://127.0.0.1:6379/0",
        "MEDIA_SHARED": "true",
        "DJANGO_SETTINGS_MODULE": "config.settings",
    }
    probe = (
        "import django; django.setup(); from django.conf import settings; print(settings.ADMIN_REQUIRE_2FA)"
    )
    out = subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "True"
    env["ADMIN_REQUIRE_2FA"] = "False"
    out = subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


@pytest.mark.django_db
def test_staff_must_set_up_two_factor_before_any_admin_page(staff_user, settings, time_machine):
    settings.ADMIN_REQUIRE_2FA = True
    client = Client()
    client.force_login(staff_user)
    response = client.get("/admin/partners/partner/")
    assert response.status_code == 302
    assert response["Location"].startswith("/admin/2fa/setup/?next=/admin/partners/partner/")

    setup = client.get(response["Location"])
    html = setup.content.decode()
    assert setup.status_code == 200 and 'class="segno"' in html and 'data-testid="totp-secret"' in html
    assert (
        client.get("/admin/2fa/setup/").content.decode().count('class="segno"') == 1
    )  # a reload: same pending device
    assert TOTPDevice.objects.filter(user=staff_user).count() == 1

    # The clock stands still between the wrong code and the right one: on a loaded machine the throttle's
    # first second could otherwise run out in between.
    time_machine.move_to(timezone.now(), tick=False)
    wrong = client.post("/admin/2fa/setup/", {"code": "000000", "next": "/admin/partners/partner/"})
    assert wrong.status_code == 400
    # A wrong code throttles the device: even the right code is refused for a moment.
    refused = client.post("/admin/2fa/setup/", {"code": _code(staff_user), "next": "/admin/"})
    assert refused.status_code == 400
    time_machine.move_to(timezone.now() + timedelta(seconds=2))
    done = client.post("/admin/2fa/setup/", {"code": _code(staff_user), "next": "/admin/partners/partner/"})
    assert done.status_code == 302 and done["Location"].startswith("/admin/2fa/recovery-codes/")
    codes_page = client.get(done["Location"]).content.decode()
    assert codes_page.count("<li><code>") == 10
    assert 'id="recovery-already-shown"' in client.get(done["Location"]).content.decode()
    assert client.get("/admin/partners/partner/").status_code == 200

    # A new sign-in asks for the code; a recovery code works once, in place of the app.
    code = codes_page.split("<li><code>")[1].split("<")[0]
    other = Client()
    other.force_login(staff_user)
    ask = other.get("/admin/")
    assert ask.status_code == 302 and ask["Location"].startswith("/admin/2fa/verify/")
    assert other.post("/admin/2fa/verify/", {"code": "123456", "next": "/admin/"}).status_code == 400
    time_machine.move_to(timezone.now() + timedelta(seconds=2))  # past the throttle of that wrong code
    assert other.post("/admin/2fa/verify/", {"code": code, "next": "/admin/"})["Location"] == "/admin/"
    assert other.get("/admin/").status_code == 200
    third = Client()
    third.force_login(staff_user)
    assert third.post("/admin/2fa/verify/", {"code": code, "next": "/admin/"}).status_code == 400


@pytest.mark.django_db
def test_without_the_requirement_staff_reach_the_admin_with_a_password(staff_user, settings):
    settings.ADMIN_REQUIRE_2FA = False
    client = Client()
    client.force_login(staff_user)
    assert client.get("/admin/").status_code == 200


@pytest.mark.django_db
def test_verify_never_redirects_off_site(staff_user, settings):
    settings.ADMIN_REQUIRE_2FA = True
    client = Client()
    client.force_login(staff_user)
    client.get("/admin/2fa/setup/")
    response = client.post("/admin/2fa/setup/", {"code": _code(staff_user), "next": "https://evil.example/"})
    assert "evil.example" not in response["Location"]


# --- partners' opt-in --------------------------------------------------------------------------------------
@pytest.mark.django_db
def test_portal_user_turns_on_two_factor_and_is_asked_for_a_code_at_the_next_sign_in(time_machine):
    creds = make_partner()
    user = portal_user_invite(partner=creds.partner, email="ann@acme.example", password=PASSWORD).user
    client = Client()
    client.force_login(user)
    assert client.get("/portal/").status_code == 200  # optional: nothing asked before it is turned on
    assert 'class="segno"' in client.get("/portal/2fa/setup/").content.decode()
    done = client.post("/portal/2fa/setup/", {"code": _code(user), "next": "/portal/"})
    assert done["Location"].startswith("/portal/2fa/recovery-codes/")
    assert 'id="two-factor-on"' in client.get("/portal/2fa/setup/").content.decode()

    # The next sign-in, half a minute later (a code is accepted once: the app shows a new one by then).
    time_machine.move_to(timezone.now() + timedelta(seconds=31))
    later = Client()
    later.force_login(user)
    ask = later.get("/portal/orders")
    assert ask.status_code == 302 and ask["Location"].startswith("/portal/2fa/verify/?next=/portal/orders")
    assert later.post("/portal/2fa/verify/", {"code": _code(user), "next": "/portal/orders"})["Location"] == (
        "/portal/orders"
    )
    assert later.get("/portal/orders").status_code == 200

    # Turning it off again (after proving a code in this session).
    later.post("/portal/2fa/disable/")
    fresh = Client()
    fresh.force_login(user)
    assert fresh.get("/portal/").status_code == 200
