"""A payment platform defined only here, the way a platform's folder is (``backend()``, ``URLS``): the
registry's test registers it with one line (tests/payouts/test_platform_registry.py). It answers from memory,
refuses what it is told to, and has an events endpoint that reads its deliveries into the interface's terms and
hands them to the shared handling."""

from __future__ import annotations

import json

from django.http import HttpRequest, HttpResponse, JsonResponse
from django.urls import path
from django.utils import timezone
from django.views.decorators.csrf import csrf_exempt

from payouts.errors import PlatformError, PlatformUnavailable
from payouts.platform.base import (
    CHARGE_FAILED,
    CHARGE_SUCCEEDED,
    EVENT_PAYOUT,
    PAYOUT_IN_PROCESS,
    REFUND_SUCCEEDED,
    ChargeResult,
    ConnectedAccount,
    PaymentPlatform,
    PayoutState,
    RefundResult,
    SavedCard,
    VerifiedEvent,
)
from payouts.services.platform_events import platform_event_receive

NAME = "stub"
DECLINING_CARD = "card_declines"
UNAVAILABLE_KEY = "key_unavailable"


class StubPlatform(PaymentPlatform):
    name = NAME

    def authorize_url(self, *, state: str, return_url: str, account_reference: str, email: str = "") -> str:
        return f"https://stub.invalid/authorize?state={state}"

    def complete_authorization(self, *, code: str, idempotency_key: str) -> ConnectedAccount:
        return ConnectedAccount(account_id=f"acct_{code}", method="ach", bank_name="Stub Bank", last4="6789")

    def card_setup_url(
        self, *, state, return_url, customer_reference, email="", existing_card_token="", idempotency_key
    ):
        return f"https://stub.invalid/cards?state={state}"

    def complete_card_setup(self, *, setup_id: str, customer_reference: str) -> SavedCard:
        return SavedCard(
            card_token=f"card_{setup_id}", brand="Visa", last4="4242", exp_month=1, exp_year=2100
        )

    def charge_card(self, *, card_token, amount, currency, idempotency_key, description) -> ChargeResult:
        if idempotency_key == UNAVAILABLE_KEY:
            raise PlatformUnavailable("The stub is down.")
        if card_token == DECLINING_CARD:
            return ChargeResult(
                charge_id=f"ch_{idempotency_key}", status=CHARGE_FAILED, failure_reason="declined"
            )
        return ChargeResult(charge_id=f"ch_{idempotency_key}", status=CHARGE_SUCCEEDED)

    def refund_charge(self, *, charge_id, amount, currency, idempotency_key, reason) -> RefundResult:
        return RefundResult(refund_id=f"re_{idempotency_key}", status=REFUND_SUCCEEDED)

    def get_refund(self, *, refund_id: str) -> RefundResult:
        raise PlatformError("No such refund.")

    def create_payout(self, *, account_id, amount, currency, idempotency_key, description) -> PayoutState:
        return PayoutState(payout_id=f"po_{idempotency_key}", status=PAYOUT_IN_PROCESS)

    def get_payout(self, *, account_id: str, payout_id: str) -> PayoutState:
        return PayoutState(payout_id=payout_id, status=PAYOUT_IN_PROCESS)

    def form_action_origins(self) -> list[str]:
        return ["https://stub.invalid"]


def backend() -> PaymentPlatform:
    return StubPlatform()


@csrf_exempt
def events(request: HttpRequest) -> HttpResponse:
    """The stub's deliveries: ``{"id", "type", "payout_id", "status"}``, trusted as they come."""
    fields = json.loads(request.body)
    event = VerifiedEvent(
        event_id=fields["id"],
        type=fields["type"],
        account="",
        livemode=False,
        occurred_at=timezone.now(),
        payload=fields,
        kind=EVENT_PAYOUT if fields["type"] == "payout.changed" else "",
        payout=PayoutState(payout_id=fields["payout_id"], status=fields["status"])
        if "payout_id" in fields
        else None,
    )
    received = platform_event_receive(platform=NAME, event=event)
    return JsonResponse({"received": received.event.event_id, "duplicate": received.duplicate})


URLS = ("payments/stub/", ([path("events", events, name="events")], "stub"))
