"""The settings pages of the partner's own account: API credentials and preferences."""

from __future__ import annotations

from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.utils import timezone
from django.views.decorators.http import require_http_methods

from config.core.keys import seal, unseal

from .. import portal_services, services, session_services
from ..forms import PreferencesForm, RotateSecretForm
from ..selectors import credential_of_partner, test_credential_of_partner, token_sessions_live_count
from .access import portal_page

# The secret a rotation issued waits here for the one GET the POST redirects to, which removes it.
ISSUED_SESSION_KEY = "portal_issued_credentials"
# The session (a database row) holds the secret only sealed, like every stored copy of a secret shown once.
_SESSION_SEAL = "portal client secret shown once v1"


@portal_page
@require_http_methods(["GET", "POST"])
def api_credentials(request: HttpRequest) -> HttpResponse:
    partner = request.partner
    # Two forms, one per pair: the test pair's fields carry the prefix "test" (docs/partners/test-mode.md "Test mode").
    rotating_test = request.method == "POST" and "test-password" in request.POST
    data = request.POST if request.method == "POST" else None
    form = RotateSecretForm(None if rotating_test else data, user=request.user)
    test_form = RotateSecretForm(data if rotating_test else None, user=request.user, prefix="test")
    bound = test_form if rotating_test else form
    if request.method == "POST" and bound.is_valid():
        issued = services.credentials_rotate(partner=partner, livemode=not rotating_test)
        # POST → redirect → GET: a reload of the page that shows the secret must not rotate it again.
        request.session[ISSUED_SESSION_KEY] = {
            "client_id": issued.client_id,
            "client_secret": seal(issued.client_secret, purpose=_SESSION_SEAL, aad=issued.client_id.encode()),
            "livemode": issued.livemode,
        }
        return redirect("portal:api-credentials")
    # Shown once: taken out of the session by the first GET after the rotation.
    issued = request.session.pop(ISSUED_SESSION_KEY, None) if request.method == "GET" else None
    if issued:
        try:
            secret = unseal(issued["client_secret"], purpose=_SESSION_SEAL, aad=issued["client_id"].encode())
        except (KeyError, ValueError):
            issued = None  # sealed under a key the service no longer has: rotate again
        else:
            issued = {**issued, "client_secret": secret}
    session_services.token_sessions_flush()  # the counts below include tokens whose session is still in Redis
    return render(
        request,
        "portal/api_credentials.html",
        {
            "nav": "api_credentials",
            "credential": credential_of_partner(partner_pk=partner.pk),
            "test_credential": test_credential_of_partner(partner_pk=partner.pk),
            "form": form,
            "test_form": test_form,
            "issued": issued,
            "live_sessions": token_sessions_live_count(partner_pk=partner.pk),
            "test_sessions": token_sessions_live_count(partner_pk=partner.pk, livemode=False),
        },
        status=400 if request.method == "POST" else 200,
    )


@portal_page
@require_http_methods(["GET", "POST"])
def preferences(request: HttpRequest) -> HttpResponse:
    """Settings · Preferences: the time zone every time of the portal is shown in (the API stays UTC)."""
    partner = request.partner
    if request.method == "POST":
        form = PreferencesForm(request.POST)
        if form.is_valid():
            portal_services.partner_time_zone_set(partner=partner, time_zone=form.cleaned_data["time_zone"])
            messages.success(request, f"Times are now shown in {form.cleaned_data['time_zone']}.")
            return redirect("portal:preferences")
    else:
        form = PreferencesForm(initial={"time_zone": partner.time_zone})
    return render(
        request,
        "portal/preferences.html",
        {"nav": "preferences", "form": form, "now": timezone.now()},
        status=400 if request.method == "POST" else 200,
    )
