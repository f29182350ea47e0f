"""What every portal page shares: security headers, sign-in and partner scoping, the partner's time zone.

Pages of every app use these decorators (``partners`` is the lowest app with portal pages). The payment
platform's origins, which the forms of Settings · Payment Methods redirect to, come from the app that knows
the platform: it names them with ``form_action_origins_register`` when it starts.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from functools import wraps
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from django.contrib.auth.views import redirect_to_login
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.urls import reverse
from django.utils import timezone

from config.core.modes import PartnerMode

from ..selectors import portal_profile_of_user

logger = logging.getLogger(__name__)
_form_action_sources: list[Callable[[], list[str]]] = []


def form_action_origins_register(source: Callable[[], list[str]]) -> None:
    """Add ``source()``'s origins to ``form-action`` of every portal page (asked for each response)."""
    if source not in _form_action_sources:
        _form_action_sources.append(source)


def _form_action_origins() -> list[str]:
    origins: list[str] = []
    for source in _form_action_sources:
        try:
            origins.extend(source())
        except Exception:  # a misconfigured platform must not take the portal's pages down
            logger.warning("form-action origins unavailable", exc_info=True)
    return origins


MODE_SESSION_KEY = "portal_mode"
MODE_TEST = "test"


def _content_security_policy() -> str:
    origins = _form_action_origins()
    form_action = " ".join(["'self'", *origins])
    return (
        "default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; "
        f"form-action {form_action}; frame-ancestors 'none'; base-uri 'none'; object-src 'none'"
    )


def secure(response: HttpResponse) -> HttpResponse:
    response["Content-Security-Policy"] = _content_security_policy()
    response["Permissions-Policy"] = "camera=(), microphone=(), geolocation=(), payment=()"
    # Private pages (orders, a secret shown once): never kept by a browser or proxy cache.
    response["Cache-Control"] = "no-store"
    return response


def public_page(view):
    """Pages before sign-in (login, password reset): security headers only."""

    @wraps(view)
    def wrapper(request: HttpRequest, *args, **kwargs) -> HttpResponse:
        return secure(view(request, *args, **kwargs))

    return wrapper


def _partner_zone(name: str) -> ZoneInfo:
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):  # a name a later tz database dropped: UTC, not a 500
        return ZoneInfo("UTC")


def portal_page(view):
    """Signed in, linked to a partner (``request.partner``), security headers, and every time rendered in
    the partner's time zone (``request.partner_tz``); the API stays in UTC."""

    @wraps(view)
    def wrapper(request: HttpRequest, *args, **kwargs) -> HttpResponse:
        if not request.user.is_authenticated:
            return secure(redirect_to_login(request.get_full_path(), reverse("portal:login")))
        profile = portal_profile_of_user(user_pk=request.user.pk)
        if profile is None:
            return secure(render(request, "portal/no_access.html", status=403))
        request.partner = profile.partner
        # The Test/Live switch (``mode_switch``): orders, webhooks and their deliveries follow it.
        request.livemode = request.session.get(MODE_SESSION_KEY) != MODE_TEST
        request.mode = PartnerMode(pk=profile.partner.pk, livemode=request.livemode)
        request.partner_tz = _partner_zone(profile.partner.time_zone)
        # Date filters (``created_at__date``) and the ``date`` filter of templates follow the active zone.
        timezone.activate(request.partner_tz)
        try:
            return secure(view(request, *args, **kwargs))
        finally:
            timezone.deactivate()

    return wrapper
