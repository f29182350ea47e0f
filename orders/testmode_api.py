"""``POST /v1/test/orders/{order_id}/advance``: move a test-mode order along its life cycle
(docs/partners/test-mode.md "Test mode")."""

from drf_spectacular.utils import OpenApiExample, OpenApiParameter, extend_schema
from rest_framework import serializers
from rest_framework.parsers import FormParser
from rest_framework.response import Response
from rest_framework.views import APIView

from config.api import errors as api_errors
from config.api.parsers import JSONObjectParser
from config.api.schema import error_responses
from config.api.validation import JSONBodySerializer
from partners.authentication import HasRequiredScope, TestModeOnly

from . import examples, selectors, testmode
from .output import order_detail_output
from .serializers import OrderDetailSerializer

ADVANCE_DESCRIPTION = """\
Test mode only: moves one of your **test-mode** orders to `to` along its legal path, every intermediate step
included, each through the same transition as a live order, with its history row and its
`order.status_changed` notification (feed and webhooks). From `accepted` the first step is the confirmation
itself: the sandbox charge and the `[TEST]` confirmation e-mail to your contact address. A `seller_email`
ending `@decline.test` makes that charge decline: the order is canceled with reason `card_declined`, and the
answer is 409 ILLEGAL_TRANSITION unless `to` was `canceled`.

Paths: `accepted → awaiting_transfer → ticket_received → payout_in_process → scheduled → paid`;
`expired` from `awaiting_transfer` (through it from `accepted`); `canceled` from `accepted` or
`awaiting_transfer`. A target that is not ahead on a legal path (`paid` from `canceled`, the current status,
an earlier one) is 409 ILLEGAL_TRANSITION. No money moves: no payout is made for a test order.

Checks, in order: token, scope `orders:write`, a test-mode token (403 TEST_MODE_ONLY with a live one), body
(400 VALIDATION_ERROR), ORDER_NOT_FOUND (unknown, another partner's, or a live order), ILLEGAL_TRANSITION.
200 with the order as `GET /v1/orders/{order_id}` returns it.
"""


class OrderAdvanceSerializer(JSONBodySerializer):
    to = serializers.ChoiceField(
        choices=testmode.ADVANCE_TARGETS, help_text="The status the test order should reach."
    )


class OrderAdvanceView(APIView):
    """POST /v1/test/orders/{order_id}/advance."""

    required_scope = "orders:write"
    permission_classes = [HasRequiredScope, TestModeOnly]
    parser_classes = [JSONObjectParser, FormParser]

    @extend_schema(
        operation_id="test_orders_advance",
        tags=["Test mode"],
        summary="Advance a test-mode order",
        description=ADVANCE_DESCRIPTION,
        parameters=[
            OpenApiParameter(
                "order_id", str, OpenApiParameter.PATH, description="A test-mode order (`ord_…`)."
            )
        ],
        request=OrderAdvanceSerializer,
        responses={
            200: OrderDetailSerializer,
            **error_responses(
                api_errors.ValidationFailed,
                api_errors.Forbidden,
                api_errors.TestModeOnly,
                api_errors.OrderNotFound,
                api_errors.IllegalTransitionError,
            ),
        },
        examples=[
            OpenApiExample("Advance to paid", request_only=True, value={"to": "paid"}),
            OpenApiExample(
                "Paid", response_only=True, status_codes=["200"], value=examples.ADVANCED_ORDER_EXAMPLE
            ),
        ],
    )
    def post(self, request, order_id: str):
        body = OrderAdvanceSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        order = selectors.order_get_for_partner(principal=request.user, order_id=order_id)
        try:
            testmode.order_advance(order=order, to=body.validated_data["to"])
        except testmode.IllegalAdvance as exc:
            raise exc.api_error() from exc
        order = selectors.order_get_for_partner(principal=request.user, order_id=order_id)
        order.history_rows = selectors.order_status_history(order=order)
        return Response(order_detail_output(order))
