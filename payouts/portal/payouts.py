"""The portal's payouts page: the list with its state filter, its totals, and its CSV export."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from partners.portal.access import portal_page
from partners.portal.exports import dated_filename, queryset_csv_response
from partners.portal.paging import portal_page_of

from ..forms import PayoutFilterForm
from ..selectors import PAYOUT_LIST_ORDERING, payout_list_for_partner, payout_totals

# The CSV's columns and the fields they are read from, in order: read as plain values, no model per row.
PAYOUT_CSV_COLUMNS = (
    ("order_id", "order__order_id"),
    ("amount", "amount"),
    ("currency", "currency"),
    ("status", "status"),
    ("scheduled_for", "scheduled_for"),
    ("paid_at", "paid_at"),
    ("account_description", "account_description"),
    ("failure_reason", "failure_reason"),
)
PAYOUT_CSV_HEADER = [column for column, _ in PAYOUT_CSV_COLUMNS]


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
    page = portal_page_of(request, queryset, ordering=PAYOUT_LIST_ORDERING)
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

    return queryset_csv_response(
        filename=dated_filename("payouts", tz=request.partner_tz),
        columns=PAYOUT_CSV_COLUMNS,
        queryset=lambda: payout_list_for_partner(partner_pk=partner_pk, status=status),
        ordering=PAYOUT_LIST_ORDERING,
        tz=request.partner_tz,
    )
