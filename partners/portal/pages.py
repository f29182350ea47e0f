"""Dashboard and the settings pages that are the portal's own: API credentials and preferences."""

from __future__ import annotations

from decimal import Decimal

from django.contrib import messages
from django.db.models import Sum
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.utils import timezone
from django.views.decorators.http import require_GET, require_http_methods

from orders.models import Order
from payouts.models import CreditCard, Payout, PayoutAccount
from payouts.selectors import SETTLED_ORDER_STATUSES

from .. import portal_selectors, portal_services, services
from ..forms import PreferencesForm, RotateSecretForm
from ..models import PartnerCredential, PartnerTestCredential
from .access import portal_page

IN_FLIGHT_PAYOUTS = (Payout.Status.PENDING, Payout.Status.IN_PROCESS, Payout.Status.SCHEDULED)
# The secret a rotation issued waits here for the one GET the POST redirects to, which removes it.
ISSUED_SESSION_KEY = "portal_issued_credentials"


@portal_page
@require_GET
def dashboard(request: HttpRequest) -> HttpResponse:
    partner = request.partner
    orders = Order.objects.for_principal(request.mode)
    payouts = Payout.objects.filter(partner_id=partner.pk)
    stats = {
        "active_orders": orders.exclude(status__in=SETTLED_ORDER_STATUSES).count(),
        "in_flight": payouts.filter(status__in=IN_FLIGHT_PAYOUTS).aggregate(s=Sum("amount"))["s"]
        or Decimal("0"),
        "paid_out": payouts.filter(status=Payout.Status.PAID).aggregate(s=Sum("amount"))["s"] or Decimal("0"),
    }
    return render(
        request,
        "portal/dashboard.html",
        {
            "nav": "dashboard",
            "readiness": portal_selectors.readiness_for_dashboard(partner=partner),
            "account": PayoutAccount.objects.filter(partner=partner).first(),
            "card": CreditCard.objects.filter(partner=partner).first(),
            "credential": PartnerCredential.objects.filter(partner=partner).first(),
            "recent_orders": orders.select_related("event").order_by("-created_at", "-id")[:5],
            "stats": stats,
        },
    )


@portal_page
@require_http_methods(["GET", "POST"])
def api_credentials(request: HttpRequest) -> HttpResponse:
    partner = request.partner
    # Two forms, one per pair: the test pair's fields carry the prefix "test" (DECISIONS "Test mode").
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
            "client_secret": issued.client_secret,
            "livemode": issued.livemode,
        }
        return redirect("portal:api-credentials")
    # Shown once: taken out of the session by the first GET after the rotation.
    issued = request.session.pop(ISSUED_SESSION_KEY, None) if request.method == "GET" else None
    return render(
        request,
        "portal/api_credentials.html",
        {
            "nav": "api_credentials",
            "credential": PartnerCredential.objects.filter(partner=partner).first(),
            "test_credential": PartnerTestCredential.objects.filter(partner=partner).first(),
            "form": form,
            "test_form": test_form,
            "issued": issued,
            "live_sessions": partner.token_sessions.filter(
                livemode=True, revoked_at__isnull=True, expires_at__gt=timezone.now()
            ).count(),
            "test_sessions": partner.token_sessions.filter(
                livemode=False, revoked_at__isnull=True, expires_at__gt=timezone.now()
            ).count(),
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
