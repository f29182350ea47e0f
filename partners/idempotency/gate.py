"""The one mechanism that gives every POST of the partner API its ``Idempotency-Key`` behaviour.

Two halves, both configured in settings, none in the views:

- ``IdempotencyGate`` sits in DRF's ``DEFAULT_THROTTLE_CLASSES``. DRF runs throttles at the end of
  ``APIView.initial()``: after authentication (401), the per-partner rate limit (429, counted by the bearer
  authentication) and the permission checks (scope, payment set-up), and before the view reads the body. That
  is the first moment the key's owner is known, so nothing decided before it is ever stored, and the checks
  keep their documented order. It claims the key, or stops the view with the stored answer or an error.
- ``IdempotencyMiddleware`` sees the finished response of a request that claimed a key and stores it
  (2xx, 403, 404, 409, 422) or releases the key (anything else).

A key is ignored on other methods and where there is no partner to scope it to (the token endpoint).
"""

import logging

from django.http import HttpRequest, HttpResponse
from rest_framework.throttling import BaseThrottle

from config.api.idempotency import (
    META_KEY,
    IdempotentReplay,
    is_stored_status,
    parse_key,
    request_fingerprint,
    stored_payload,
)
from partners.authentication import PartnerPrincipal

from . import services

logger = logging.getLogger(__name__)
CLAIM_ATTRIBUTE = "idempotency_claim"


class IdempotencyGate(BaseThrottle):
    def allow_request(self, request, view) -> bool:
        if request.method != "POST":
            return True
        raw = request.META.get(META_KEY)
        if raw is None:
            return True  # the request path without a key pays for this lookup only
        principal = request.user
        if not isinstance(principal, PartnerPrincipal):
            return True
        key = parse_key(raw)
        outcome = services.idempotency_key_claim(
            partner_pk=principal.pk,
            livemode=principal.livemode,
            key=key,
            fingerprint=request_fingerprint(request),
            method=request.method,
            path=request.path,
        )
        if isinstance(outcome, services.StoredAnswer):
            raise IdempotentReplay(status=outcome.status, payload=outcome.payload)
        setattr(request._request, CLAIM_ATTRIBUTE, outcome)
        # The lease is renewed for as long as the request runs (the process's LeaseKeeper), until the
        # middleware lets it go.
        services.lease_keeper.hold(outcome)
        return True

    def wait(self) -> None:  # never refuses, so never asked how long to wait
        return None


class IdempotencyMiddleware:
    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        try:
            response = self.get_response(request)
        finally:
            held = getattr(request, CLAIM_ATTRIBUTE, None)
            if held is not None:
                services.lease_keeper.let_go(held)
        claim = getattr(request, CLAIM_ATTRIBUTE, None)
        if claim is None:
            return response
        try:
            payload = stored_payload(response.content) if is_stored_status(response.status_code) else None
            if payload is None:
                services.idempotency_key_release(claim=claim)
            else:
                services.idempotency_key_finish(claim=claim, status=response.status_code, payload=payload)
        except Exception:
            # The request itself succeeded or failed on its own; its answer goes out. The key stays held
            # until its lease lapses, then a retry runs again.
            logger.exception("could not record the outcome of an idempotent request")
        return response
