"""POST /v1/quotes and GET /v1/quotes/{quote_id}."""

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiExample, OpenApiParameter, extend_schema
from rest_framework.response import Response
from rest_framework.views import APIView

from config.api.schema import error_responses
from config.api.validation import ReusedValidator
from partners.authentication import HasRequiredScope, PayoutConfigured

from . import errors, examples, selectors, services
from .serializers import QuoteCreateSerializer, QuoteDetailSerializer, QuoteSerializer, quote_data

_quote_body = ReusedValidator(QuoteCreateSerializer)


class QuoteCreateView(APIView):
    required_scope = "quotes:write"
    permission_classes = [HasRequiredScope, PayoutConfigured]

    @extend_schema(
        operation_id="quotes_create",
        tags=["Quotes"],
        summary="Lock a price",
        description=(
            "Locks the row's current per-ticket offer for 15 minutes (900 s, `expires_at`). Omit "
            "`row_name` to get the best row: the highest offer with enough quantity. A quote reserves no "
            "quantity; the order does. Checks, in order: token, scope `quotes:write`, payout configured "
            "(403 PAYOUT_METHOD_NOT_CONFIGURED, `details.missing`), body (400 VALIDATION_ERROR), "
            "EVENT_NOT_FOUND, EVENT_EXPIRED (event started or canceled), SECTION_NOT_FOUND, ROW_NOT_FOUND, "
            "INSUFFICIENT_QUANTITY (`details: {requested, available}`)."
        ),
        request=QuoteCreateSerializer,
        responses={
            201: QuoteSerializer,
            **error_responses(
                errors.ValidationFailed,
                errors.Forbidden,
                errors.PayoutMethodNotConfigured,
                errors.EventNotFound,
                errors.SectionNotFound,
                errors.RowNotFound,
                errors.EventExpired,
                errors.InsufficientQuantity,
            ),
        },
        examples=[
            OpenApiExample("Named row", request_only=True, value=examples.QUOTE_REQUEST),
            OpenApiExample("Best row", request_only=True, value=examples.QUOTE_REQUEST_BEST_ROW),
            OpenApiExample("Quote", response_only=True, status_codes=["201"], value=examples.QUOTE),
        ],
    )
    def post(self, request):
        data = _quote_body.validate(request.data)
        quote = services.quote_create(
            partner_pk=request.user.pk,
            event_id=data["event_id"],
            section_name=data["section_name"],
            row_name=data.get("row_name"),
            quantity=data["quantity"],
            user_metadata=dict(data.get("user_metadata") or {}),
            livemode=request.user.livemode,
        )
        return Response(quote_data(quote, event_public_id=data["event_id"]), status=201)


class QuoteDetailView(APIView):
    required_scope = "quotes:write"

    @extend_schema(
        operation_id="quotes_retrieve",
        tags=["Quotes"],
        summary="One of your quotes",
        description=(
            "The caller's quote with its `status`: `active`, `consumed` (then `order_id` names the order) "
            "or `expired`. Another partner's quote is 403 FORBIDDEN; an unknown, tampered or truncated "
            "id is 404 QUOTE_NOT_FOUND. Needs scope `quotes:write`."
        ),
        parameters=[
            OpenApiParameter(
                "quote_id", OpenApiTypes.STR, OpenApiParameter.PATH, description="Encrypted quote id."
            )
        ],
        responses={200: QuoteDetailSerializer, **error_responses(errors.Forbidden, errors.QuoteNotFound)},
        examples=[
            OpenApiExample("Active quote", response_only=True, value={**examples.QUOTE, "order_id": None}),
            OpenApiExample("Consumed quote", response_only=True, value=examples.QUOTE_CONSUMED),
        ],
    )
    def get(self, request, quote_id: str):
        quote = selectors.quote_get_for_partner(quote_id=quote_id, principal=request.user)
        # The id is echoed as sent: during a key rotation an id made with the previous key stays stable.
        data = quote_data(quote, event_public_id=quote.event.event_id, quote_id=quote_id, with_order=True)
        return Response(data)
