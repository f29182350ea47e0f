"""Monthly statement: a month in the partner's time zone, its figures, the payouts paid, a CSV of its lines.

Every number comes from a selector of ``payouts.selectors.statements``; the view only picks the month.
"""

from __future__ import annotations

import re

from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render
from django.utils import timezone
from django.views.decorators.http import require_GET

from partners.portal.access import portal_page
from partners.portal.exports import csv_response

from ..selectors.statements import (
    StatementMonth,
    statement_figures,
    statement_lines,
    statement_month,
    statement_payouts,
)

MONTH_RE = re.compile(r"(\d{4})-(\d{2})")
FIRST_YEAR, LAST_YEAR = 1970, 9998
STATEMENT_CSV_HEADER = [
    "at",
    "type",
    "order_id",
    "partner_reference",
    "event_name",
    "amount",
    "currency",
    "detail",
]


def _month(request: HttpRequest, month: str | None) -> StatementMonth:
    """``YYYY-MM`` from the URL, or the current month in the partner's zone; any other month is a 404."""
    if month is None:
        today = timezone.now().astimezone(request.partner_tz).date()
        return statement_month(year=today.year, month=today.month, tz=request.partner_tz)
    match = MONTH_RE.fullmatch(month)
    try:
        # Years the month arithmetic and the database's timestamps handle, with a month on either side.
        if match is None or not FIRST_YEAR <= int(match[1]) <= LAST_YEAR:
            raise ValueError(month)
        return statement_month(year=int(match[1]), month=int(match[2]), tz=request.partner_tz)
    except (ValueError, OverflowError):
        raise Http404("No such month.")


@portal_page
@require_GET
def statement(request: HttpRequest, month: str | None = None) -> HttpResponse:
    period = _month(request, month)
    partner_pk = request.partner.pk
    return render(
        request,
        "portal/statement.html",
        {
            "nav": "statements",
            "period": period,
            "figures": statement_figures(partner_pk=partner_pk, month=period),
            "payouts": statement_payouts(partner_pk=partner_pk, month=period),
        },
    )


@portal_page
@require_GET
def statement_csv(request: HttpRequest, month: str) -> HttpResponse:
    period = _month(request, month)
    partner_pk = request.partner.pk

    def rows():
        return (
            [
                line.at,
                line.kind,
                line.order_id,
                line.partner_reference,
                line.event_name,
                line.amount,
                line.currency,
                line.detail,
            ]
            for line in statement_lines(partner_pk=partner_pk, month=period)
        )

    return csv_response(
        filename=f"statement-{period.first_day:%Y-%m}.csv",
        header=STATEMENT_CSV_HEADER,
        rows=rows,
        tz=request.partner_tz,
    )
