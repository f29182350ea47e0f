"""The portal's home: what stands between the partner and selling, its payment methods, and its latest orders
and payouts. It combines orders and payouts, so it sits at the top of the house, in the back office."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from orders.selectors import order_list_for_portal, orders_active
from partners.portal.access import portal_page
from partners.selectors import credential_of_partner, test_credential_of_partner

from ..selectors import payment_methods_of_partner, payout_totals
from ..selectors.readiness import readiness_for_dashboard

RECENT_ORDERS = 5


@portal_page
@require_GET
def dashboard(request: HttpRequest) -> HttpResponse:
    partner = request.partner
    methods = payment_methods_of_partner(partner_pk=partner.pk)
    stats = {"active_orders": orders_active(principal=request.mode).count()}
    # Payouts are live money: test orders never pay out, so in test mode the page shows test figures only
    # and says where the live payouts are rather than setting live sums beside test counts.
    if request.livemode:
        totals = payout_totals(partner_pk=partner.pk)
        stats.update(in_flight=totals.in_flight, paid_out=totals.paid)
    return render(
        request,
        "portal/dashboard.html",
        {
            "nav": "dashboard",
            "readiness": readiness_for_dashboard(partner=partner),
            "account": methods.account,
            "card": methods.card,
            # The pair of the mode shown: the test client_id beside test orders.
            "credential": (credential_of_partner if request.livemode else test_credential_of_partner)(
                partner_pk=partner.pk
            ),
            "recent_orders": order_list_for_portal(principal=request.mode)[:RECENT_ORDERS],
            "stats": stats,
        },
    )
