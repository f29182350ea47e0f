"""The partner portal (``/portal/``): server-rendered pages for a partner's own people.

Every page is scoped to the signed-in user's partner (``request.partner``): another partner's order or
payout is as unknown as a missing one. Payment methods are set up at the payment platform's own pages;
the portal only keeps what the platform hands back (ids, brand or bank name, last 4).
"""

from __future__ import annotations

import secrets
from decimal import Decimal
from functools import wraps

from django.contrib import messages
from django.contrib.auth import views as auth_views
from django.contrib.auth.views import redirect_to_login
from django.core.paginator import Paginator
from django.db.models import Count, Q, Sum
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse, reverse_lazy
from django.utils import timezone
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from orders.errors import OrderNotFound
from orders.models import Order
from orders.selectors import order_get_for_partner, order_status_history
from payouts import services as payout_services
from payouts.errors import PaymentError, ReplaceNeedsConfirmation
from payouts.models import Charge, CreditCard, Payout, PayoutAccount
from payouts.platform import get_platform
from payouts.selectors import (
    SETTLED_ORDER_STATUSES,
    partner_has_active_orders,
    payment_readiness,
    payout_list_for_partner,
)

from . import services
from .forms import (
    OrderFilterForm,
    PayoutFilterForm,
    PortalLoginForm,
    PortalPasswordResetForm,
    ReplaceConfirmForm,
    RotateSecretForm,
)
from .models import PartnerCredential, PortalUser

# OAuth-style ``state`` values issued for platform redirects, kept in the session, single use.
STATES_SESSION_KEY = "portal_platform_states"
STATE_TTL_SECONDS = 30 * 60
MAX_OPEN_STATES = 5
PAGE_SIZE = 25
IN_FLIGHT_PAYOUTS = (Payout.Status.PENDING, Payout.Status.IN_PROCESS, Payout.Status.SCHEDULED)


# --- headers and access ------------------------------------------------------------------------------------
def _content_security_policy() -> str:
    try:
        origins = get_platform().form_action_origins()
    except Exception:  # a misconfigured platform must not take the portal's pages down
        origins = []
    form_action = " ".join(["'self'", *origins])
    return (
        "default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; "
        f"form-action {form_action}; frame-ancestors 'none'; base-uri 'none'; object-src 'none'"
    )


def _secure(response: HttpResponse) -> HttpResponse:
    response["Content-Security-Policy"] = _content_security_policy()
    response["Permissions-Policy"] = "camera=(), microphone=(), geolocation=(), payment=()"
    # Private pages (orders, a secret shown once): never kept by a browser or proxy cache.
    response["Cache-Control"] = "no-store"
    return response


def public_page(view):
    """Pages before sign-in (login, password reset): security headers only."""

    @wraps(view)
    def wrapper(request: HttpRequest, *args, **kwargs) -> HttpResponse:
        return _secure(view(request, *args, **kwargs))

    return wrapper


def portal_page(view):
    """Signed in, linked to a partner (``request.partner``), security headers."""

    @wraps(view)
    def wrapper(request: HttpRequest, *args, **kwargs) -> HttpResponse:
        if not request.user.is_authenticated:
            return _secure(redirect_to_login(request.get_full_path(), reverse("portal:login")))
        profile = PortalUser.objects.select_related("partner").filter(user_id=request.user.pk).first()
        if profile is None:
            return _secure(render(request, "portal/no_access.html", status=403))
        request.partner = profile.partner
        return _secure(view(request, *args, **kwargs))

    return wrapper


# --- authentication -------------------------------------------------------------------------------------------
login = public_page(
    auth_views.LoginView.as_view(
        template_name="portal/login.html",
        authentication_form=PortalLoginForm,
        redirect_authenticated_user=True,
    )
)
logout = public_page(auth_views.LogoutView.as_view(next_page=reverse_lazy("portal:login")))
password_reset = public_page(
    auth_views.PasswordResetView.as_view(
        form_class=PortalPasswordResetForm,
        template_name="portal/password_reset.html",
        email_template_name="emails/portal_password_reset.txt",
        html_email_template_name="emails/portal_password_reset.html",
        subject_template_name="emails/portal_password_reset_subject.txt",
        success_url=reverse_lazy("portal:password-reset-done"),
    )
)
password_reset_done = public_page(
    auth_views.PasswordResetDoneView.as_view(template_name="portal/password_reset_done.html")
)
password_reset_confirm = public_page(
    auth_views.PasswordResetConfirmView.as_view(
        template_name="portal/password_reset_confirm.html",
        success_url=reverse_lazy("portal:password-reset-complete"),
    )
)
password_reset_complete = public_page(
    auth_views.PasswordResetCompleteView.as_view(template_name="portal/password_reset_complete.html")
)
# The invitation link: choose a first password, then land signed in on the dashboard.
welcome = public_page(
    auth_views.PasswordResetConfirmView.as_view(
        template_name="portal/welcome.html",
        post_reset_login=True,
        success_url=reverse_lazy("portal:dashboard"),
    )
)


# --- dashboard ----------------------------------------------------------------------------------------------------
@portal_page
@require_GET
def dashboard(request: HttpRequest) -> HttpResponse:
    partner = request.partner
    orders = Order.objects.filter(partner_id=partner.pk)
    payouts = Payout.objects.filter(partner_id=partner.pk)
    stats = {
        "active_orders": orders.exclude(status__in=SETTLED_ORDER_STATUSES).count(),
        "in_flight": payouts.filter(status__in=IN_FLIGHT_PAYOUTS).aggregate(s=Sum("amount"))["s"]
        or Decimal("0"),
        "paid_out": payouts.filter(status=Payout.Status.PAID).aggregate(s=Sum("amount"))["s"] or Decimal("0"),
        "failed_payouts": payouts.filter(status=Payout.Status.FAILED).count(),
    }
    return render(
        request,
        "portal/dashboard.html",
        {
            "nav": "dashboard",
            "readiness": payment_readiness(partner_pk=partner.pk),
            "account": PayoutAccount.objects.filter(partner=partner).first(),
            "card": CreditCard.objects.filter(partner=partner).first(),
            "credential": PartnerCredential.objects.filter(partner=partner).first(),
            "recent_orders": orders.select_related("event").order_by("-created_at", "-id")[:5],
            "stats": stats,
        },
    )


# --- settings: payment methods --------------------------------------------------------------------------------
def _payment_methods_page(request: HttpRequest, *, payout_form=None, card_form=None, status: int = 200):
    partner = request.partner
    account = PayoutAccount.objects.filter(partner=partner).first()
    card = CreditCard.objects.filter(partner=partner).first()
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
            account = payout_services.payout_account_connect(
                partner=request.partner, code=code, confirm_replace=entry["confirm"]
            )
        except PaymentError as exc:
            messages.error(request, f"The payout account was not connected. {exc.message}")
        else:
            messages.success(
                request,
                f"Payout account connected: {account.bank_name} ••••{account.last4} "
                f"({account.get_method_display()}).",
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


# --- settings: API credentials --------------------------------------------------------------------------------
@portal_page
@require_http_methods(["GET", "POST"])
def api_credentials(request: HttpRequest) -> HttpResponse:
    partner = request.partner
    form = RotateSecretForm(request.POST or None, user=request.user)
    issued = None
    if request.method == "POST" and form.is_valid():
        issued = services.credentials_rotate(partner=partner)
        form = RotateSecretForm(user=request.user)
    return render(
        request,
        "portal/api_credentials.html",
        {
            "nav": "api_credentials",
            "credential": PartnerCredential.objects.filter(partner=partner).first(),
            "form": form,
            "issued": issued,
            "live_sessions": partner.token_sessions.filter(
                revoked_at__isnull=True, expires_at__gt=timezone.now()
            ).count(),
        },
        status=400 if request.method == "POST" and issued is None else 200,
    )


# --- orders -------------------------------------------------------------------------------------------------------
@portal_page
@require_GET
def orders(request: HttpRequest) -> HttpResponse:
    queryset = Order.objects.filter(partner_id=request.partner.pk).select_related("event", "payout")
    form = OrderFilterForm(request.GET or None)
    if form.is_bound and form.is_valid():
        data = form.cleaned_data
        if data["status"]:
            queryset = queryset.filter(status=data["status"])
        if data["q"]:
            q = data["q"].strip()
            queryset = queryset.filter(
                Q(order_id__iexact=q) | Q(partner_reference__icontains=q) | Q(event__name__icontains=q)
            )
        if data["created_from"]:
            queryset = queryset.filter(created_at__date__gte=data["created_from"])
        if data["created_to"]:
            queryset = queryset.filter(created_at__date__lte=data["created_to"])
    page = Paginator(queryset.order_by("-created_at", "-id"), PAGE_SIZE).get_page(request.GET.get("page"))
    return render(request, "portal/orders.html", {"nav": "orders", "form": form, "page": page})


@portal_page
@require_GET
def order_detail(request: HttpRequest, order_id: str) -> HttpResponse:
    try:
        order = order_get_for_partner(partner_pk=request.partner.pk, order_id=order_id)
    except OrderNotFound:
        raise Http404("No such order.")
    return render(
        request,
        "portal/order_detail.html",
        {
            "nav": "orders",
            "order": order,
            "history": order_status_history(order=order),
            "charge": Charge.objects.filter(order=order).first(),
            "payout": Payout.objects.filter(order=order).first(),
        },
    )


# --- payouts ------------------------------------------------------------------------------------------------------
@portal_page
@require_GET
def payouts(request: HttpRequest) -> HttpResponse:
    form = PayoutFilterForm(request.GET or None)
    status = form.cleaned_data["status"] if form.is_bound and form.is_valid() else None
    queryset = payout_list_for_partner(partner_pk=request.partner.pk, status=status or None)
    totals = Payout.objects.filter(partner_id=request.partner.pk).aggregate(
        paid=Sum("amount", filter=Q(status=Payout.Status.PAID)),
        in_flight=Sum("amount", filter=Q(status__in=IN_FLIGHT_PAYOUTS)),
        failed=Count("pk", filter=Q(status=Payout.Status.FAILED)),
    )
    page = Paginator(queryset, PAGE_SIZE).get_page(request.GET.get("page"))
    return render(
        request, "portal/payouts.html", {"nav": "payouts", "form": form, "page": page, "totals": totals}
    )
