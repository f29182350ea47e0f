"""Settings → Webhooks: add endpoints, enable or disable them, rotate secrets, ping, see and resend deliveries.

Every POST answers with a redirect, so a reload never repeats it. A new secret travels to the page that
shows it through the session, once: the page takes it out, and a reload says it was already shown.
The pages follow the portal's Test/Live switch (``request.mode``): test-mode endpoints get only test-mode
notifications, live ones only live ones.
"""

from __future__ import annotations

from django.contrib import messages
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_POST

from config.api.errors import ApiError
from config.core.keys import seal, unseal
from partners.portal.access import portal_page

from . import selectors, services
from .forms import EndpointForm, ResendForm, RotateSecretForm, StatusForm
from .models import WebhookEndpoint

SECRET_SESSION_KEY = "webhook_secret_once"
# The session (a database row) holds the secret only sealed, like every stored copy of it.
_SESSION_SEAL = "portal webhook secret shown once v1"
ADD_FORM_SESSION_KEY = "webhook_add_form"
DELIVERIES_DAYS = 30
DELIVERIES_SHOWN = 200


def _endpoint(request: HttpRequest, endpoint_id: str) -> WebhookEndpoint:
    try:
        return selectors.endpoint_get_for_partner(principal=request.mode, endpoint_id=endpoint_id)
    except ApiError:
        raise Http404("No such webhook endpoint.")


def _show_secret_once(
    request: HttpRequest, *, endpoint: WebhookEndpoint, secret: str, rotated: bool
) -> HttpResponse:
    request.session[SECRET_SESSION_KEY] = {
        "endpoint_id": endpoint.endpoint_id,
        "secret": seal(secret, purpose=_SESSION_SEAL, aad=endpoint.endpoint_id.encode()),
        "rotated": rotated,
    }
    return redirect("portal_webhooks:secret", endpoint_id=endpoint.endpoint_id)


@portal_page
@require_GET
def endpoint_list(request: HttpRequest) -> HttpResponse:
    # A refused "add" comes back here through the session (the POST redirected), with its errors.
    data = request.session.pop(ADD_FORM_SESSION_KEY, None)
    form = EndpointForm(data) if data else EndpointForm()
    if data:
        form.is_valid()
    endpoints = selectors.endpoints_of_partner(principal=request.mode)
    return render(
        request, "portal/webhooks/list.html", {"nav": "webhooks", "endpoints": endpoints, "form": form}
    )


@portal_page
@require_POST
def endpoint_add(request: HttpRequest) -> HttpResponse:
    form = EndpointForm(request.POST)
    if form.is_valid():
        try:
            endpoint, secret = services.endpoint_create(
                partner_pk=request.partner.pk, livemode=request.livemode, **form.cleaned_data
            )
        except ApiError as exc:
            messages.error(request, exc.message)
        else:
            return _show_secret_once(request, endpoint=endpoint, secret=secret, rotated=False)
    else:
        request.session[ADD_FORM_SESSION_KEY] = {
            "url": request.POST.get("url", "")[:2048],
            "event_types": request.POST.getlist("event_types"),
            "description": request.POST.get("description", "")[:255],
        }
    return redirect("portal_webhooks:list")


@portal_page
@require_GET
def endpoint_secret(request: HttpRequest, endpoint_id: str) -> HttpResponse:
    endpoint = _endpoint(request, endpoint_id)
    shown = request.session.get(SECRET_SESSION_KEY)
    if shown and shown.get("endpoint_id") == endpoint.endpoint_id:
        del request.session[SECRET_SESSION_KEY]  # shown now, never again
        try:
            secret = unseal(shown["secret"], purpose=_SESSION_SEAL, aad=endpoint.endpoint_id.encode())
        except (KeyError, ValueError):
            shown = None  # sealed under a key the service no longer has: rotate again
        else:
            shown = {**shown, "secret": secret}
    else:
        shown = None
    return render(
        request, "portal/webhooks/secret.html", {"nav": "webhooks", "endpoint": endpoint, "shown": shown}
    )


@portal_page
@require_GET
def endpoint_detail(request: HttpRequest, endpoint_id: str) -> HttpResponse:
    endpoint = _endpoint(request, endpoint_id)
    attempts = selectors.attempts_recent(endpoint=endpoint, days=DELIVERIES_DAYS)[:DELIVERIES_SHOWN]
    return render(
        request,
        "portal/webhooks/detail.html",
        {
            "nav": "webhooks",
            "endpoint": endpoint,
            "attempts": attempts,
            "rotate_form": RotateSecretForm(),
            "days": DELIVERIES_DAYS,
        },
    )


@portal_page
@require_POST
def endpoint_status(request: HttpRequest, endpoint_id: str) -> HttpResponse:
    endpoint = _endpoint(request, endpoint_id)
    form = StatusForm(request.POST)
    if form.is_valid():
        endpoint = services.endpoint_update(
            endpoint=endpoint,
            status=form.cleaned_data["status"],
            actor=f"portal:{request.user.get_username()}",
        )
        messages.success(request, f"Endpoint {endpoint.get_status_display().lower()}.")
    return redirect("portal_webhooks:detail", endpoint_id=endpoint_id)


@portal_page
@require_POST
def endpoint_rotate(request: HttpRequest, endpoint_id: str) -> HttpResponse:
    endpoint = _endpoint(request, endpoint_id)
    form = RotateSecretForm(request.POST)
    if not form.is_valid():
        messages.error(request, "Choose how long the old secret keeps signing.")
        return redirect("portal_webhooks:detail", endpoint_id=endpoint_id)
    secret = services.endpoint_rotate_secret(endpoint=endpoint, **form.cleaned_data)
    return _show_secret_once(request, endpoint=endpoint, secret=secret, rotated=True)


@portal_page
@require_POST
def endpoint_ping(request: HttpRequest, endpoint_id: str) -> HttpResponse:
    delivery = services.endpoint_ping(endpoint=_endpoint(request, endpoint_id))
    messages.success(
        request, f"Ping {delivery.notification.notification_id} queued (delivery {delivery.delivery_id})."
    )
    return redirect("portal_webhooks:detail", endpoint_id=endpoint_id)


@portal_page
@require_POST
def endpoint_resend(request: HttpRequest, endpoint_id: str) -> HttpResponse:
    endpoint = _endpoint(request, endpoint_id)
    form = ResendForm(request.POST)
    if form.is_valid():
        try:
            delivery = services.delivery_resend(
                endpoint=endpoint, notification_id=form.cleaned_data["notification_id"]
            )
        except ApiError as exc:
            messages.error(request, exc.message)
        else:
            messages.success(
                request,
                f"Notification {delivery.notification.notification_id} sent again (delivery {delivery.delivery_id}).",
            )
    return redirect("portal_webhooks:detail", endpoint_id=endpoint_id)


@portal_page
@require_POST
def endpoint_delete(request: HttpRequest, endpoint_id: str) -> HttpResponse:
    endpoint = _endpoint(request, endpoint_id)
    services.endpoint_delete(endpoint=endpoint)
    messages.success(request, f"Endpoint {endpoint_id} deleted.")
    return redirect("portal_webhooks:list")
