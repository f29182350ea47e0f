"""``POST /v1/test/orders/{order_id}/simulate_transfer``: the sandbox platform's transfer e-mail for a test-mode
order, sent through the real SMTP receiver (docs/partners/test-mode.md "Simulating the ticket transfer")."""

from __future__ import annotations

from drf_spectacular.utils import OpenApiExample, OpenApiParameter, extend_schema
from rest_framework import serializers
from rest_framework.parsers import FormParser
from rest_framework.response import Response
from rest_framework.views import APIView

from config.api import errors as api_errors
from config.api.parsers import JSONObjectParser
from config.api.schema import error_responses
from config.api.validation import JSONBodySerializer
from orders import selectors
from orders.transfers.testing import mail_compose
from partners.authentication import HasRequiredScope, TestModeOnly

SIMULATE_DESCRIPTION = """\
Test mode only: the sandbox ticketing platform e-mails the order's `transfer_address` the way a real
platform does when the seller transfers the tickets. The e-mail is signed with the sandbox platform's DKIM key
and delivered over SMTP to the service's own receiver, so it goes through exactly what a live transfer goes
through: authenticity, parsing, matching. The answer comes once the receiver has stored the e-mail; the
order then changes on its own, each change announced by `order.transfer_updated` and `order.status_changed`.

Variants: `match` (the order's event, section, row and seats: the order moves to `ticket_received`),
`partial` (fewer tickets than the order's quantity: `transfer.state` becomes `partial`; needs a quantity of
2 or more), `wrong_row` (another row: `transfer.state` becomes `mismatch`, the order stays in
`awaiting_transfer`), `forged` (signed with a key the sandbox platform never published: nothing moves).

Checks, in order: token, scope `orders:write`, a test-mode token (403 TEST_MODE_ONLY with a live one), body
(400 VALIDATION_ERROR), ORDER_NOT_FOUND (unknown, another partner's, or a live order), ILLEGAL_TRANSITION (the
order is not `accepted` or `awaiting_transfer`), SERVICE_UNAVAILABLE (503: the SMTP receiver is not running or
refused the e-mail for now; retry). 202 with what was sent.
"""


class SimulateTransferSerializer(JSONBodySerializer):
    variant = serializers.ChoiceField(
        choices=mail_compose.VARIANTS,
        default="match",
        help_text="What the sandbox platform's e-mail says, compared with the order.",
    )


class SimulatedTransferSerializer(serializers.Serializer):
    order_id = serializers.CharField()
    variant = serializers.ChoiceField(choices=mail_compose.VARIANTS)
    kind = serializers.CharField(help_text="The sandbox platform's e-mail kind: `transfer_offer`.")
    message_sha256 = serializers.CharField(help_text="SHA-256 of the raw e-mail as delivered.")


SIMULATED_EXAMPLE = {
    "order_id": "ord_7Kc9Qm2XbT4wZr8N",
    "variant": "match",
    "kind": "transfer_offer",
    "message_sha256": "9f2c4e0b7a1d5e3c8b6a4f2e0d9c7b5a3e1f0d8c6b4a2e0f9d7c5b3a1e0f8d6c",
}


class SimulateTransferView(APIView):
    """POST /v1/test/orders/{order_id}/simulate_transfer."""

    required_scope = "orders:write"
    permission_classes = [HasRequiredScope, TestModeOnly]
    parser_classes = [JSONObjectParser, FormParser]

    @extend_schema(
        operation_id="test_orders_simulate_transfer",
        tags=["Test mode"],
        summary="Simulate the seller's ticket transfer (sandbox platform e-mail)",
        description=SIMULATE_DESCRIPTION,
        parameters=[
            OpenApiParameter(
                "order_id", str, OpenApiParameter.PATH, description="A test-mode order (`ord_…`)."
            )
        ],
        request=SimulateTransferSerializer,
        responses={
            202: SimulatedTransferSerializer,
            **error_responses(
                api_errors.ValidationFailed,
                api_errors.Forbidden,
                api_errors.TestModeOnly,
                api_errors.OrderNotFound,
                api_errors.IllegalTransitionError,
                api_errors.ServiceUnavailable,
            ),
        },
        examples=[
            OpenApiExample("A matching transfer", request_only=True, value={"variant": "match"}),
            OpenApiExample("Fewer tickets than ordered", request_only=True, value={"variant": "partial"}),
            OpenApiExample("Sent", response_only=True, status_codes=["202"], value=SIMULATED_EXAMPLE),
        ],
    )
    def post(self, request, order_id: str):
        body = SimulateTransferSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        variant = body.validated_data["variant"]
        order = selectors.order_get_for_partner(principal=request.user, order_id=order_id)
        if order.status not in mail_compose.SIMULATE_STATUSES:
            raise api_errors.IllegalTransitionError(
                f"A {order.status} order takes no transfer; simulate one while it is accepted or "
                "awaiting_transfer.",
                details={"order_id": order.order_id, "status": order.status, "to": "ticket_received"},
            )
        if variant == "partial" and order.quantity < 2:
            raise api_errors.ValidationFailed(
                field="variant", issue="The partial variant needs an order of 2 or more tickets."
            )
        try:
            sent = mail_compose.send_test_transfer(order, variant)
        except mail_compose.ReceiverUnavailable as exc:
            raise api_errors.ServiceUnavailable(
                "The service's SMTP receiver is not answering; retry in a moment."
            ) from exc
        except mail_compose.RecipientRefused as exc:
            raise api_errors.IllegalTransitionError(
                "The order's transfer address no longer takes mail.",
                details={"order_id": order.order_id, "status": order.status, "to": "ticket_received"},
            ) from exc
        data = {
            "order_id": sent.order_id,
            "variant": sent.variant,
            "kind": sent.kind,
            "message_sha256": sent.sha256,
        }
        return Response(SimulatedTransferSerializer(data).data, status=202)
