"""``POST /payments/stripe/events``: where Stripe delivers its events (docs/operations/payments-stripe.md).

The body is bounded (``STRIPE_WEBHOOK_MAX_BYTES``: 413 past it, before more is read) and must carry Stripe's
``Stripe-Signature`` for one of ``STRIPE_WEBHOOK_SECRET`` (400 otherwise, nothing stored). A genuine event is
stored once and acted on before the answer: 200 (also for a repeat and for a type the service ignores), or
500 when processing failed, which Stripe retries. 404 unless ``PAYMENT_PLATFORM`` is ``stripe``.
"""

from __future__ import annotations

import logging

from django.conf import settings
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseNotAllowed, JsonResponse
from django.views.decorators.csrf import csrf_exempt

from .events import NAME, EventRefused, stripe_event_receive

logger = logging.getLogger(__name__)

# Stripe's header is a timestamp and a few signatures (more during a secret's roll): a few hundred bytes.
SIGNATURE_MAX_LENGTH = 2048


# Signed by Stripe instead: there is no session or form here. (Django is untyped here: see [tool.mypy].)
@csrf_exempt  # type: ignore[untyped-decorator]
def stripe_events(request: HttpRequest) -> HttpResponse:
    if settings.PAYMENT_PLATFORM != NAME:
        raise Http404("The Stripe platform is not in use.")
    if request.method != "POST":
        return HttpResponseNotAllowed(["POST"])
    limit = settings.STRIPE_WEBHOOK_MAX_BYTES
    try:
        length = int(request.META.get("CONTENT_LENGTH") or 0)
    except ValueError:
        length = 0
    if length > limit:
        return JsonResponse({"error": "The body is too large."}, status=413)
    body = request.read(limit + 1)
    if len(body) > limit:  # a chunked body, or one longer than its Content-Length said
        return JsonResponse({"error": "The body is too large."}, status=413)
    signature = request.headers.get("Stripe-Signature", "")
    if not signature or len(signature) > SIGNATURE_MAX_LENGTH:
        return JsonResponse({"error": "A Stripe-Signature header is required."}, status=400)
    try:
        received = stripe_event_receive(payload=body, signature=signature)
    except EventRefused as exc:
        logger.warning("Stripe event refused: %s", exc)
        return JsonResponse({"error": "The event's signature does not verify."}, status=400)
    return JsonResponse({"received": received.event.event_id, "duplicate": received.duplicate})
