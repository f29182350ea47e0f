"""The portal's Test/Live switch (docs/partners/test-mode.md "Test mode"): kept in the session of the signed-in user.

In test mode the orders pages and Settings · Webhooks show test-mode objects only (those made with the
test-mode credentials), under a coloured banner; payouts and statements are money and stay live.
"""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.utils.http import url_has_allowed_host_and_scheme
from django.views.decorators.http import require_POST

from .access import MODE_SESSION_KEY, MODE_TEST, portal_page


@portal_page
@require_POST
def mode_switch(request: HttpRequest) -> HttpResponse:
    """POST ``mode=test|live`` (and ``next``, a portal page to come back to)."""
    if request.POST.get("mode") == MODE_TEST:
        request.session[MODE_SESSION_KEY] = MODE_TEST
    else:
        request.session.pop(MODE_SESSION_KEY, None)
    target = request.POST.get("next", "")
    if not url_has_allowed_host_and_scheme(
        target, allowed_hosts={request.get_host()}, require_https=request.is_secure()
    ) or not target.startswith("/portal/"):
        target = "portal:dashboard"
    return redirect(target)
