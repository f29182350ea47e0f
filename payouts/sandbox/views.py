"""The sandbox platform's own pages under ``/sandbox/``: what a partner sees "at the payment platform".

Only served while ``PAYMENT_PLATFORM == "sandbox"``. The card and bank numbers typed here stay here: only
last 4 digits are stored, the redirect back to the portal carries a one-time code or setup id.
"""

from functools import wraps
from urllib.parse import urlencode, urlsplit

from django.conf import settings
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import render
from django.views.decorators.cache import never_cache
from django.views.decorators.debug import sensitive_post_parameters
from django.views.decorators.http import require_http_methods

from .forms import BankAuthorizeForm, CardForm
from .services import (
    BANKS_BY_ROUTING,
    FAILING_ACCOUNTS,
    TEST_CARDS,
    sandbox_account_authorize,
    sandbox_card_save,
)

CSP = (
    "default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; "
    "form-action 'self'; frame-ancestors 'none'; base-uri 'none'; object-src 'none'"
)


def sandbox_page(view):
    """Sandbox only, never cached, strict CSP."""

    @wraps(view)
    def wrapper(request: HttpRequest, *args, **kwargs) -> HttpResponse:
        if settings.PAYMENT_PLATFORM != "sandbox":
            raise Http404("The sandbox payment platform is not enabled.")
        response = view(request, *args, **kwargs)
        response.setdefault("Content-Security-Policy", CSP)
        response.setdefault("Permissions-Policy", "camera=(), microphone=(), geolocation=(), payment=()")
        return response

    return never_cache(wrapper)


def _safe_redirect_uri(request: HttpRequest, value: str) -> str | None:
    """Like an OAuth server's registered redirect URIs: only this service's own portal."""
    parts = urlsplit(value or "")
    if parts.scheme not in ("http", "https") or parts.netloc != request.get_host():
        return None
    if not parts.path.startswith("/portal/"):
        return None
    return value


def _back(redirect_uri: str, **params: str) -> HttpResponseRedirect:
    separator = "&" if "?" in redirect_uri else "?"
    return HttpResponseRedirect(redirect_uri + separator + urlencode(params))


def _bad_request(request: HttpRequest, message: str) -> HttpResponse:
    return render(request, "sandbox/error.html", {"message": message}, status=400)


@sandbox_page
def index(request: HttpRequest) -> HttpResponse:
    return render(
        request,
        "sandbox/index.html",
        {
            "cards": TEST_CARDS.values(),
            "banks": sorted(BANKS_BY_ROUTING.items()),
            "failing_accounts": FAILING_ACCOUNTS,
            "schedule_after": settings.SANDBOX_PAYOUT_SCHEDULE_AFTER_SECONDS,
            "paid_after": settings.SANDBOX_PAYOUT_PAID_AFTER_SECONDS,
        },
    )


@sandbox_page
@sensitive_post_parameters("account_number", "account_number_confirm", "routing_number")
@require_http_methods(["GET", "POST"])
def authorize(request: HttpRequest) -> HttpResponse:
    params = request.GET
    redirect_uri = _safe_redirect_uri(request, params.get("redirect_uri", ""))
    state = params.get("state", "")
    reference = params.get("client_reference", "")
    if redirect_uri is None or not state or not reference:
        return _bad_request(request, "This authorization link is incomplete or points to an unknown site.")
    form = BankAuthorizeForm(request.POST or None)
    if request.method == "POST":
        if "cancel" in request.POST:
            return _back(redirect_uri, error="access_denied", state=state)
        if form.is_valid():
            data = form.cleaned_data
            grant = sandbox_account_authorize(
                reference=reference,
                holder_name=data["holder_name"],
                method=data["method"],
                routing_number=data["routing_number"],
                account_number=data["account_number"],
                redirect_uri=redirect_uri,
            )
            return _back(redirect_uri, code=grant.code, state=state)
    return render(
        request,
        "sandbox/authorize.html",
        {"form": form, "reference": reference, "return_host": urlsplit(redirect_uri).netloc},
    )


@sandbox_page
@sensitive_post_parameters("number", "cvc", "expiry")
@require_http_methods(["GET", "POST"])
def card(request: HttpRequest) -> HttpResponse:
    params = request.GET
    redirect_uri = _safe_redirect_uri(request, params.get("redirect_uri", ""))
    state = params.get("state", "")
    customer = params.get("customer", "")
    if redirect_uri is None or not state or not customer:
        return _bad_request(request, "This card link is incomplete or points to an unknown site.")
    form = CardForm(request.POST or None)
    if request.method == "POST":
        if "cancel" in request.POST:
            return _back(redirect_uri, error="canceled", state=state)
        if form.is_valid():
            data = form.cleaned_data
            month, year = data["expiry"]
            setup = sandbox_card_save(
                customer_reference=customer,
                holder_name=data["holder_name"],
                number=data["number"],
                exp_month=month,
                exp_year=year,
            )
            return _back(redirect_uri, setup_id=setup.setup_id, state=state)
    return render(
        request,
        "sandbox/card.html",
        {"form": form, "customer": customer, "return_host": urlsplit(redirect_uri).netloc},
    )
