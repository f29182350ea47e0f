"""Settings · Payment Methods: the payout account and the card, set up at the payment platform's own pages.

The portal only keeps what the platform hands back (ids, brand or bank name, last 4).
"""

from __future__ import annotations

import secrets

from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.template.defaultfilters import pluralize
from django.urls import reverse
from django.utils import timezone
from django.views.decorators.http import require_GET, require_POST

from partners.portal.access import portal_page
from partners.selectors import payment_readiness

from ..errors import PaymentError, ReplaceNeedsConfirmation
from ..forms import ReplaceConfirmForm
from ..selectors import partner_has_active_orders, payment_methods_of_partner
from ..services import methods as payout_services

# OAuth-style ``state`` values issued for platform redirects, kept in the session, single use.
STATES_SESSION_KEY = "portal_platform_states"
STATE_TTL_SECONDS = 30 * 60
MAX_OPEN_STATES = 5


def _payment_methods_page(
    request: HttpRequest, *, payout_form=None, card_form=None, status: int = 200
) -> HttpResponse:
    partner = request.partner
    methods = payment_methods_of_partner(partner_pk=partner.pk)
    account, card = methods.account, methods.card
    active = partner_has_active_orders(partner_pk=partner.pk)
    return render(
        request,
        "portal/payment_methods.html",
        {
            "nav": "payment_methods",
            "account": account,
            "card": card,
            "active_orders": active,
            "payout_needs_confirmation": bool(account and active),
            "card_needs_confirmation": bool(card and active),
            "payout_form": payout_form or ReplaceConfirmForm(prefix="payout"),
            "card_form": card_form or ReplaceConfirmForm(prefix="card"),
            "readiness": payment_readiness(partner_pk=partner.pk),
        },
        status=status,
    )


def _state_issue(request: HttpRequest, *, kind: str, confirm: bool) -> str:
    now = int(timezone.now().timestamp())
    states = {
        key: entry
        for key, entry in request.session.get(STATES_SESSION_KEY, {}).items()
        if now - entry["at"] < STATE_TTL_SECONDS
    }
    state = secrets.token_urlsafe(32)
    states[state] = {"kind": kind, "partner": request.partner.pk, "confirm": confirm, "at": now}
    newest = sorted(states.items(), key=lambda item: item[1]["at"])[-MAX_OPEN_STATES:]
    request.session[STATES_SESSION_KEY] = dict(newest)
    return state


def _state_consume(request: HttpRequest, *, kind: str) -> dict | None:
    """The state this session issued for ``kind``, once; ``None`` for a forged, replayed or stale answer."""
    state = request.GET.get("state", "")
    states = dict(request.session.get(STATES_SESSION_KEY, {}))
    entry = states.pop(state, None) if state else None
    request.session[STATES_SESSION_KEY] = states
    if entry is None or entry["kind"] != kind or entry["partner"] != request.partner.pk:
        return None
    if int(timezone.now().timestamp()) - entry["at"] >= STATE_TTL_SECONDS:
        return None
    return entry


STATE_MISMATCH = (
    "The answer from the payment platform could not be verified (unknown or expired request). "
    "Nothing was changed; please start again."
)


@portal_page
@require_GET
def payment_methods(request: HttpRequest) -> HttpResponse:
    return _payment_methods_page(request)


def _start_platform_redirect(request: HttpRequest, *, kind: str) -> HttpResponse:
    form = ReplaceConfirmForm(request.POST, prefix=kind)
    form.is_valid()
    confirm = bool(form.cleaned_data.get("confirm_replace"))
    state = _state_issue(request, kind=kind, confirm=confirm)
    start = (
        payout_services.payout_account_authorize_url
        if kind == "payout"
        else payout_services.credit_card_setup_url
    )
    return_url = request.build_absolute_uri(reverse(f"portal:{kind}-return"))
    try:
        url = start(
            partner=request.partner,
            state=state,
            return_url=return_url,
            email=request.user.email,
            confirm_replace=confirm,
        )
    except ReplaceNeedsConfirmation as exc:
        form.add_error("confirm_replace", exc.message)
        forms = {"payout_form": form} if kind == "payout" else {"card_form": form}
        return _payment_methods_page(request, status=409, **forms)
    except PaymentError as exc:
        messages.error(request, exc.message)
        return redirect("portal:payment-methods")
    return redirect(url)


@portal_page
@require_POST
def payout_connect(request: HttpRequest) -> HttpResponse:
    return _start_platform_redirect(request, kind="payout")


@portal_page
@require_POST
def card_add(request: HttpRequest) -> HttpResponse:
    return _start_platform_redirect(request, kind="card")


@portal_page
@require_GET
def payout_return(request: HttpRequest) -> HttpResponse:
    entry = _state_consume(request, kind="payout")
    code = request.GET.get("code", "")
    if entry is None:
        messages.error(request, STATE_MISMATCH)
    elif request.GET.get("error") or not code:
        messages.warning(request, "The payout account was not connected: the authorization was canceled.")
    else:
        try:
            connected = payout_services.payout_account_connect(
                partner=request.partner, code=code, confirm_replace=entry["confirm"]
            )
        except PaymentError as exc:
            messages.error(request, f"The payout account was not connected. {exc.message}")
        else:
            account, retried = connected
            again = (
                f" {retried} failed payout{pluralize(retried)} will be sent to it again." if retried else ""
            )
            messages.success(
                request,
                f"Payout account connected: {account.bank_name} ••••{account.last4} "
                f"({account.get_method_display()}).{again}",
            )
    return redirect("portal:payment-methods")


@portal_page
@require_GET
def card_return(request: HttpRequest) -> HttpResponse:
    entry = _state_consume(request, kind="card")
    setup_id = request.GET.get("setup_id", "")
    if entry is None:
        messages.error(request, STATE_MISMATCH)
    elif request.GET.get("error") or not setup_id:
        messages.warning(request, "No card was added: the card page was canceled.")
    else:
        try:
            card = payout_services.credit_card_save(
                partner=request.partner, setup_id=setup_id, confirm_replace=entry["confirm"]
            )
        except PaymentError as exc:
            messages.error(request, f"The card was not saved. {exc.message}")
        else:
            messages.success(
                request,
                f"Card saved: {card.brand} ••••{card.last4}, expires {card.exp_month:02d}/{card.exp_year}.",
            )
    return redirect("portal:payment-methods")
