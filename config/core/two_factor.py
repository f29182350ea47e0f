"""Two-factor sign-in (TOTP with django-otp) for staff in the admin and, by choice, for portal users.

Staff: with ``ADMIN_REQUIRE_2FA`` (on by default in production) a staff member who signed in with a password
reaches no admin page until they have set up an authenticator app and entered a code from it in this session.
Portal users: anyone who has set up an authenticator (Settings → Security in the portal) must enter a code after
the password on every sign-in. Setting up shows ten one-time recovery codes once; each works once, in place of
an app code, when the phone is lost. django-otp's devices throttle wrong codes (a growing delay after each
failure), on top of the sign-in throttling of django-axes.
"""

from __future__ import annotations

import base64
import secrets
from dataclasses import dataclass
from urllib.parse import quote

import segno
from django.conf import settings
from django.contrib import admin
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import render
from django.utils.http import url_has_allowed_host_and_scheme
from django_otp import login as otp_login
from django_otp import match_token, user_has_device
from django_otp.plugins.otp_static.models import StaticDevice, StaticToken
from django_otp.plugins.otp_totp.models import TOTPDevice

RECOVERY_CODES = 10
TITLES = {
    "setup.html": "Set up two-factor sign-in",
    "verify.html": "Enter your sign-in code",
    "recovery_codes.html": "Recovery codes",
    "enabled.html": "Two-factor sign-in",
}
RECOVERY_SESSION_KEY = "two_factor_recovery_codes"


@dataclass(frozen=True)
class Area:
    """Where the pages sit: the admin (staff) or the portal (partners' people)."""

    name: str
    prefix: str
    base_template: str
    home: str

    def url(self, page: str) -> str:
        return f"{self.prefix}2fa/{page}/"


ADMIN = Area("admin", "/admin/", "two_factor/base_admin.html", "/admin/")
PORTAL = Area("portal", "/portal/", "two_factor/base_portal.html", "/portal/")


def _area_of(path: str) -> Area | None:
    for area in (ADMIN, PORTAL):
        if path.startswith(area.prefix):
            return area
    return None


def _exempt(path: str, area: Area) -> bool:
    """Pages a signed-in but unverified person may still reach: the 2FA pages themselves and signing out."""
    tail = path[len(area.prefix) :]
    return tail.startswith(("2fa/", "login", "logout", "jsi18n")) or path.startswith(settings.STATIC_URL)


def _confirmed_totp(user) -> TOTPDevice | None:
    return TOTPDevice.objects.devices_for_user(user, confirmed=True).first()


class TwoFactorMiddleware:
    """After ``django_otp.middleware.OTPMiddleware``: sends a signed-in person who still owes a code to the
    page that asks for it (or, for staff when 2FA is required, to the page that sets it up)."""

    def __init__(self, get_response) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        area = _area_of(request.path)
        user = getattr(request, "user", None)
        if area is None or user is None or not user.is_authenticated or _exempt(request.path, area):
            return self.get_response(request)
        if area is ADMIN and not user.is_staff:
            return self.get_response(request)
        if user.is_verified():
            return self.get_response(request)
        if user_has_device(user, confirmed=True):
            return _redirect_with_next(area.url("verify"), request.get_full_path())
        if area is ADMIN and settings.ADMIN_REQUIRE_2FA:
            return _redirect_with_next(area.url("setup"), request.get_full_path())
        return self.get_response(request)


def _redirect_with_next(url: str, next_url: str) -> HttpResponseRedirect:
    return HttpResponseRedirect(f"{url}?next={quote(next_url)}")


def _next(request: HttpRequest, area: Area) -> str:
    candidate = request.POST.get("next") or request.GET.get("next") or area.home
    if url_has_allowed_host_and_scheme(candidate, {request.get_host()}, require_https=request.is_secure()):
        return candidate
    return area.home


def _page(request: HttpRequest, area: Area, template: str, context: dict, status: int = 200) -> HttpResponse:
    # The admin's pages keep its header and colours (site_header and friends).
    site = admin.site.each_context(request) if area is ADMIN else {}
    response = render(
        request,
        f"two_factor/{template}",
        {
            **site,
            "area": area,
            "base_template": area.base_template,
            "next": _next(request, area),
            "title": TITLES[template],
            **context,
        },
        status=status,
    )
    response["Cache-Control"] = "no-store"
    return response


def _qr_svg(device: TOTPDevice) -> str:
    """The ``otpauth://`` address as a QR code, drawn here as inline SVG (no image service, no script)."""
    return segno.make(device.config_url, error="m").svg_inline(scale=4, dark="#17202e")


def _setup(request: HttpRequest, area: Area) -> HttpResponse:
    user = request.user
    if _confirmed_totp(user) is not None:
        if not user.is_verified():
            return _redirect_with_next(area.url("verify"), request.get_full_path())
        return _page(request, area, "enabled.html", {"can_disable": area is PORTAL})
    # One pending (unconfirmed) device per person: a reload shows the same secret, never a new one.
    device = TOTPDevice.objects.filter(user=user, confirmed=False).first() or TOTPDevice.objects.create(
        user=user, name="Authenticator app", confirmed=False
    )
    error = ""
    if request.method == "POST":
        if device.verify_token(request.POST.get("code", "").replace(" ", "")):
            device.confirmed = True
            device.save(update_fields=["confirmed"])
            otp_login(request, device)
            request.session[RECOVERY_SESSION_KEY] = _new_recovery_codes(user)
            return HttpResponseRedirect(f"{area.url('recovery-codes')}?next={quote(_next(request, area))}")
        error = "That code did not match. Enter the 6-digit code your app shows now."
    secret_b32 = _base32(device.bin_key)
    return _page(
        request,
        area,
        "setup.html",
        {"qr_svg": _qr_svg(device), "secret": secret_b32, "error": error},
        status=400 if error else 200,
    )


def _base32(key: bytes) -> str:
    raw = base64.b32encode(key).decode().rstrip("=")
    return " ".join(raw[i : i + 4] for i in range(0, len(raw), 4))


def _new_recovery_codes(user) -> list[str]:
    """Ten fresh one-time codes; any earlier set stops working."""
    device, _ = StaticDevice.objects.get_or_create(
        user=user, name="Recovery codes", defaults={"confirmed": True}
    )
    device.token_set.all().delete()
    codes = [secrets.token_hex(5) for _ in range(RECOVERY_CODES)]
    StaticToken.objects.bulk_create([StaticToken(device=device, token=code) for code in codes])
    return codes


def _recovery_codes(request: HttpRequest, area: Area) -> HttpResponse:
    codes = request.session.pop(RECOVERY_SESSION_KEY, None)
    return _page(request, area, "recovery_codes.html", {"codes": codes or [], "already_shown": codes is None})


def _verify(request: HttpRequest, area: Area) -> HttpResponse:
    user = request.user
    if user.is_verified():
        return HttpResponseRedirect(_next(request, area))
    error = ""
    if request.method == "POST":
        device = match_token(user, request.POST.get("code", "").replace(" ", "").strip())
        if device is not None:
            otp_login(request, device)
            return HttpResponseRedirect(_next(request, area))
        error = "That code did not work. Enter the current code from your app, or one of your recovery codes."
    return _page(request, area, "verify.html", {"error": error}, status=400 if error else 200)


def _disable(request: HttpRequest, area: Area) -> HttpResponse:
    """Portal users may turn 2FA off again (after proving a code this session); staff may not while required."""
    if request.method == "POST" and request.user.is_verified():
        TOTPDevice.objects.filter(user=request.user).delete()
        StaticDevice.objects.filter(user=request.user).delete()
    return HttpResponseRedirect(area.home)


def _login_required(area: Area):
    login_url = "/admin/login/" if area is ADMIN else settings.LOGIN_URL

    def wrap(view):
        return login_required(lambda request: view(request, area), login_url=login_url)

    return wrap


admin_setup = _login_required(ADMIN)(_setup)
admin_verify = _login_required(ADMIN)(_verify)
admin_recovery_codes = _login_required(ADMIN)(_recovery_codes)
portal_setup = _login_required(PORTAL)(_setup)
portal_verify = _login_required(PORTAL)(_verify)
portal_recovery_codes = _login_required(PORTAL)(_recovery_codes)
portal_disable = _login_required(PORTAL)(_disable)


def locked_out(request: HttpRequest, original_response=None, credentials=None) -> HttpResponse:
    """django-axes' answer to a locked-out sign-in: a page that says for how long, with status 429."""
    minutes = max(1, int(settings.AXES_COOLOFF_TIME.total_seconds() // 60))
    response = render(request, "two_factor/locked_out.html", {"minutes": minutes}, status=429)
    response["Retry-After"] = str(int(settings.AXES_COOLOFF_TIME.total_seconds()))
    return response
