"""The portal's payouts page: the list with its state filter, its totals, and its CSV export."""

from __future__ import annotations

from collections.abc import Iterator

from django.core.paginator import Paginator
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from orders.portal import PAGE_SIZE
from partners.portal.access import portal_page
from partners.portal.exports import EXPORT_CHUNK_SIZE, csv_response, dated_filename

from ..forms import PayoutFilterForm
from ..selectors import payout_list_for_partner, payout_totals

PAYOUT_CSV_HEADER = [
    "order_id",
    "amount",
    "currency",
    "status",
    "scheduled_for",
    "paid_at",
    "account_description",
    "failure_reason",
]


def _payout_filters(request: HttpRequest) -> tuple[PayoutFilterForm, str | None, bool]:
    """The page's filter form, the state it selects (``None``: all) and whether the form is acceptable."""
    form = PayoutFilterForm(request.GET or None)
    if not form.is_bound:
        return form, None, True
    valid = form.is_valid()
    return form, (form.cleaned_data["status"] or None) if valid else None, valid


def _payouts_page(
    request: HttpRequest, *, form: PayoutFilterForm, status: str | None, http_status: int = 200
) -> HttpResponse:
    queryset = payout_list_for_partner(partner_pk=request.partner.pk, status=status)
    totals = payout_totals(partner_pk=request.partner.pk)
    page = Paginator(queryset, PAGE_SIZE).get_page(request.GET.get("page"))
    return render(
        request,
        "portal/payouts.html",
        {"nav": "payouts", "form": form, "page": page, "totals": totals},
        status=http_status,
    )


@portal_page
@require_GET
def payouts(request: HttpRequest) -> HttpResponse:
    form, status, _ = _payout_filters(request)
    return _payouts_page(request, form=form, status=status)


@portal_page
@require_GET
def payouts_csv(request: HttpRequest) -> HttpResponse:
    form, status, valid = _payout_filters(request)
    if not valid:
        return _payouts_page(request, form=form, status=None, http_status=400)
    partner_pk = request.partner.pk

    def rows() -> Iterator[list[object]]:
        queryset = payout_list_for_partner(partner_pk=partner_pk, status=status)
        return (
            [
                payout.order.order_id,
                payout.amount,
                payout.currency,
                payout.status,
                payout.scheduled_for,
                payout.paid_at,
                payout.account_description,
                payout.failure_reason,
            ]
            for payout in queryset.iterator(chunk_size=EXPORT_CHUNK_SIZE)
        )

    return csv_response(
        filename=dated_filename("payouts", tz=request.partner_tz),
        header=PAYOUT_CSV_HEADER,
        rows=rows,
        tz=request.partner_tz,
    )
