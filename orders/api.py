"""``/v1/orders``: create an order from a quote (multipart), list, read and cancel the partner's orders;
``/v1/notifications``: the feed of the partner's order notifications."""

import io

from django.conf import settings
from django.core.exceptions import TooManyFilesSent
from django.http import HttpRequest, HttpResponse
from django.utils.datastructures import MultiValueDict
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework.parsers import FormParser, MultiPartParser
from rest_framework.response import Response
from rest_framework.views import APIView

from config.api import errors as api_errors
from config.api.idempotency import META_KEY
from config.api.multipart import request_text_fields
from config.api.parsers import JSONObjectParser
from config.api.plain import Answer, plain_view, takes_body
from config.api.routes import short_path
from config.api.schema import error_responses
from config.api.validation import ReusedValidator
from partners.authentication import (
    HasRequiredScope,
    PayoutConfigured,
    bearer_authenticate,
    payout_check,
    scope_check,
)

from . import errors, examples, selectors, services
from .notification_serializers import (
    NotificationListParamsSerializer,
    NotificationListSerializer,
    NotificationSerializer,
)
from .output import order_detail_output, order_output
from .serializers import (
    OrderCancelSerializer,
    OrderCreateSerializer,
    OrderDetailSerializer,
    OrderListParamsSerializer,
    OrderListSerializer,
    OrderSerializer,
    too_large_error,
)
from .uploads import TicketPdfUploadHandler

ORDERS_TAG = ["Orders"]


ORDERS_WRITE = "orders:write"


def _actor(principal) -> str:
    return f"partner:{principal.partner_id}"


_order_form = ReusedValidator(OrderCreateSerializer)


class OrderListCreateView(APIView):
    """POST /v1/orders (create, multipart) and GET /v1/orders (list)."""

    parser_classes = [MultiPartParser]

    @property
    def required_scope(self) -> str | None:
        # Writing needs orders:write; reading needs any valid token of the owner.
        return ORDERS_WRITE if self.request.method == "POST" else None

    def get_permissions(self):
        if self.request.method == "POST":
            return [HasRequiredScope(), PayoutConfigured()]
        return [HasRequiredScope()]

    def initialize_request(self, request, *args, **kwargs):
        # Set before anything reads the body: the PDF streams to a temporary file and is cut off past 10 MB.
        self.upload_handler = TicketPdfUploadHandler(request, max_bytes=settings.ORDER_PDF_MAX_BYTES)
        if request.method == "POST":
            request.upload_handlers = [self.upload_handler]
        return super().initialize_request(request, *args, **kwargs)

    @extend_schema(
        operation_id="orders_create",
        # What the service enforces that OpenAPI 3.0 cannot state (a rule across fields, or relative to now).
        extensions={
            "x-rules": [
                "`in_hand_date` is not in the past (VALIDATION_ERROR, `issue: in_the_past`).",
                "`file` starts with `%PDF-` and is at most 10 485 760 bytes.",
            ]
        },
        tags=ORDERS_TAG,
        summary="Create an order from a quote",
        description=examples.CREATE_DESCRIPTION,
        request={"multipart/form-data": OrderCreateSerializer},
        responses={
            201: OrderSerializer,
            **error_responses(
                api_errors.ValidationFailed,
                api_errors.InHandDateRequired,
                api_errors.FileRequired,
                api_errors.Forbidden,
                api_errors.PayoutMethodNotConfigured,
                api_errors.QuoteNotFound,
                api_errors.QuoteExpired,
                api_errors.QuoteAlreadyConsumed,
                api_errors.InvalidDeliveryDeadline,
                api_errors.EventExpired,
                api_errors.InsufficientQuantity,
                api_errors.PayloadTooLarge,
            ),
        },
        examples=examples.CREATE_EXAMPLES,
    )
    def post(self, request):
        if not request.content_type.lower().startswith("multipart/form-data"):
            # Also when the body is empty: DRF would otherwise parse "nothing" as an empty form.
            raise errors.ValidationFailed(
                "The body must be multipart/form-data.", field="body", issue="unsupported_media_type"
            )
        return Response(_order_create(lambda: request.data, self.upload_handler, request.user), status=201)

    @extend_schema(
        operation_id="orders_list",
        # What the service enforces that OpenAPI 3.0 cannot state (a rule across fields, or relative to now).
        extensions={
            "x-rules": [
                "`created_to` is not before `created_from`.",
                "`cursor` is one this list returned (`next_cursor`).",
            ]
        },
        tags=ORDERS_TAG,
        summary="List your orders",
        description=(
            "The caller's orders, newest first, cursor-paginated. Filters: `status`, `event_id`, "
            "`created_from`, `created_to` (YYYY-MM-DD for whole UTC days, or ISO 8601 datetimes; inclusive), "
            "`updated_from` (an ISO 8601 datetime with Z or an offset: orders whose `status_changed_at`, set at "
            "creation too, is at or after it)."
        ),
        parameters=[OrderListParamsSerializer],
        responses={200: OrderListSerializer, **error_responses(api_errors.ValidationFailed)},
        examples=examples.LIST_EXAMPLES,
    )
    def get(self, request):
        params = OrderListParamsSerializer(data=request.query_params)
        params.is_valid(raise_exception=True)
        p = params.validated_data
        page = selectors.order_list(
            principal=request.user,
            filters=selectors.OrderFilters(
                status=p.get("status"),
                event_id=p.get("event_id"),
                created_from=p.get("created_from"),
                created_before=p.get("created_before"),
                updated_from=p.get("updated_from"),
            ),
            limit=p["limit"],
            cursor=p.get("cursor"),
        )
        return Response(
            {
                "results": [order_output(order) for order in page.results],
                "has_more": page.has_more,
                "next_cursor": page.next_cursor,
            }
        )


ORDER_ID_PARAM = OpenApiParameter(
    "order_id", str, OpenApiParameter.PATH, description="The order id (`ord_…`)."
)


def _order_create(read_form, upload_handler: TicketPdfUploadHandler, principal) -> dict:
    """Read the multipart form (``read_form``), validate it and create the order: the 201's ``data``."""
    try:
        data = read_form()
    except TooManyFilesSent:
        raise errors.ValidationFailed("Too many files in the form.", field="body", issue="too_many_files")
    oversized = upload_handler.too_large_field
    if oversized:
        # The parser stopped at the limit: judge only the fields that arrived before the upload.
        OrderCreateSerializer(data=data, partial=True).is_valid(raise_exception=True)
        raise too_large_error(oversized)
    order = services.order_create(
        partner_pk=principal.pk,
        livemode=principal.livemode,
        actor=_actor(principal),
        **_order_form.validate(data),
    )
    return order_output(order)


_order_answer = Answer(OrderListCreateView)
_multipart = MultiPartParser()


def _form(request: HttpRequest):
    """The form as the DRF view reads it (``request.data``): DRF's multipart parser over the body, its fields
    and files in one ``QueryDict``. The files are handed to Django's request, as DRF does, so that they are
    closed (and a temporary file removed) with the request. A small form of text fields in the usual shape is
    read in one pass (``config.api.multipart``: the same fields)."""
    fields = request_text_fields(request)
    if fields is not None:
        request._post, request._files = fields, MultiValueDict()
        return fields
    stream = io.BytesIO(request.body) if request._read_started else request
    parsed = _multipart.parse(
        stream,
        request.META.get("CONTENT_TYPE", ""),
        {"request": request, "encoding": request.encoding or settings.DEFAULT_CHARSET},
    )
    request._post, request._files = parsed.data, parsed.files
    if not parsed.files:
        return parsed.data
    data = parsed.data.copy()
    data.update(parsed.files)
    return data


def _takes(request: HttpRequest) -> bool:
    # A multipart body with a token, as DRF would render it; an Idempotency-Key is claimed by DRF's path
    # (partners.idempotency.gate), as is any other body (DRF's view answers it VALIDATION_ERROR).
    return (
        bool(request.META.get("HTTP_AUTHORIZATION"))
        and META_KEY not in request.META
        and takes_body(request, "multipart/form-data")
    )


def _answer(request: HttpRequest) -> HttpResponse:
    """POST /v1/orders without DRF's dispatch, in its order of checks: the token and the rate budget, the
    scope, the payment set-up, then the form (read with the PDF's upload handler, as the DRF view reads it)
    and the service."""
    try:
        principal, claims, _found = bearer_authenticate(request, request.META["HTTP_AUTHORIZATION"])
        request.user, request.auth = principal, claims  # as DRF's request leaves them on Django's
        scope_check(principal, ORDERS_WRITE)
        payout_check(principal)
        upload_handler = TicketPdfUploadHandler(request, max_bytes=settings.ORDER_PDF_MAX_BYTES)
        request.upload_handlers = [upload_handler]
        data = _order_create(lambda: _form(request), upload_handler, principal)
    except Exception as exc:
        return _order_answer.failed(exc, request)
    return _order_answer.ok(data, request, status=201)


orders_view = short_path(plain_view(OrderListCreateView.as_view(), _takes, _answer), ("POST",), body=True)


class OrderDetailView(APIView):
    """GET /v1/orders/{order_id}."""

    required_scope = None
    permission_classes = [HasRequiredScope]

    @extend_schema(
        operation_id="orders_retrieve",
        tags=ORDERS_TAG,
        summary="Read one of your orders, with its status history",
        description="Another partner's order id is 404 ORDER_NOT_FOUND, exactly like an unknown one.",
        parameters=[ORDER_ID_PARAM],
        responses={200: OrderDetailSerializer, **error_responses(api_errors.OrderNotFound)},
        examples=examples.DETAIL_EXAMPLES,
    )
    def get(self, request, order_id: str):
        order = selectors.order_get_for_partner(principal=request.user, order_id=order_id)
        order.history_rows = selectors.order_status_history(order=order)
        return Response(order_detail_output(order))


class OrderCancelView(APIView):
    """POST /v1/orders/{order_id}/cancel."""

    required_scope = ORDERS_WRITE
    permission_classes = [HasRequiredScope]
    parser_classes = [JSONObjectParser, FormParser, MultiPartParser]

    @extend_schema(
        operation_id="orders_cancel",
        tags=ORDERS_TAG,
        summary="Cancel one of your orders",
        description=(
            "Allowed while the order is `accepted` or `awaiting_transfer`; from any later status the answer is "
            "409 ORDER_NOT_CANCELABLE. The quantity goes back to the row. The body is optional."
        ),
        parameters=[ORDER_ID_PARAM],
        request=OrderCancelSerializer,
        responses={
            200: OrderDetailSerializer,
            **error_responses(
                api_errors.ValidationFailed,
                api_errors.Forbidden,
                api_errors.OrderNotFound,
                api_errors.OrderNotCancelable,
            ),
        },
        examples=examples.CANCEL_EXAMPLES,
    )
    def post(self, request, order_id: str):
        body = OrderCancelSerializer(data=request.data or {})
        body.is_valid(raise_exception=True)
        order = selectors.order_get_for_partner(principal=request.user, order_id=order_id)
        order = services.order_cancel(
            order=order, actor=_actor(request.user), reason=body.validated_data.get("reason", "")
        )
        order = selectors.order_get_for_partner(principal=request.user, order_id=order_id)
        order.history_rows = selectors.order_status_history(order=order)
        return Response(order_detail_output(order))


class NotificationListView(APIView):
    """GET /v1/notifications."""

    required_scope = ORDERS_WRITE
    permission_classes = [HasRequiredScope]

    @extend_schema(
        operation_id="notifications_list",
        # What the service enforces that OpenAPI 3.0 cannot state (a rule across fields, or relative to now).
        extensions={
            "x-rules": [
                "`after` names one of your notifications.",
                "`cursor` is one this list returned (`next_cursor`).",
            ]
        },
        tags=["Notifications"],
        summary="List your notifications (the pull path of webhooks)",
        description=examples.NOTIFICATIONS_DESCRIPTION,
        parameters=[NotificationListParamsSerializer],
        responses={
            200: NotificationListSerializer,
            **error_responses(api_errors.ValidationFailed, api_errors.Forbidden),
        },
        examples=examples.NOTIFICATION_LIST_EXAMPLES,
    )
    def get(self, request):
        params = NotificationListParamsSerializer(data=request.query_params)
        params.is_valid(raise_exception=True)
        p = params.validated_data
        page = selectors.notification_list(
            principal=request.user,
            filters=selectors.NotificationFilters(
                type=p.get("type"), order_id=p.get("order_id"), after=p.get("after")
            ),
            limit=p["limit"],
            cursor=p.get("cursor"),
        )
        return Response(
            {
                "results": [notification.payload for notification in page.results],
                "has_more": page.has_more,
                "next_cursor": page.next_cursor,
            }
        )


class NotificationDetailView(APIView):
    """GET /v1/notifications/{notification_id}."""

    required_scope = ORDERS_WRITE
    permission_classes = [HasRequiredScope]

    @extend_schema(
        operation_id="notifications_retrieve",
        tags=["Notifications"],
        summary="Read one of your notifications",
        description=(
            "One notification exactly as the feed and the webhooks carry it. Another partner's, the other "
            "mode's, a purged or an unknown id is 404 NOTIFICATION_NOT_FOUND. Scope `orders:write`."
        ),
        parameters=[
            OpenApiParameter(
                "notification_id", str, OpenApiParameter.PATH, description="The notification id (`ntf_…`)."
            )
        ],
        responses={
            200: NotificationSerializer,
            **error_responses(api_errors.Forbidden, api_errors.NotificationNotFound),
        },
        examples=examples.NOTIFICATION_DETAIL_EXAMPLES,
    )
    def get(self, request, notification_id: str):
        notification = selectors.notification_get_for_partner(
            principal=request.user, notification_id=notification_id
        )
        return Response(notification.payload)
