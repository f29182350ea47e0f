"""``/v1/webhook_endpoints``: register, list, read, change, delete, rotate, ping, deliveries, resend."""

from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework.response import Response
from rest_framework.views import APIView

from config.api import errors as api_errors
from config.api.schema import error_responses
from partners.authentication import HasRequiredScope

from . import examples, selectors, services
from .serializers import (
    AttemptListSerializer,
    AttemptSerializer,
    DeliveryCreatedSerializer,
    EndpointCreateSerializer,
    EndpointDeletedSerializer,
    EndpointListSerializer,
    EndpointSerializer,
    EndpointUpdateSerializer,
    EndpointWithSecretSerializer,
    ListParamsSerializer,
    ResendSerializer,
    RotateSecretSerializer,
)

TAGS = ["Webhooks"]
SCOPE = "webhooks:write"
ENDPOINT_ID_PARAM = OpenApiParameter(
    "endpoint_id", str, OpenApiParameter.PATH, description="The endpoint id (`whe_…`)."
)
NOT_FOUND = "Another partner's endpoint, or one of the other mode, is 404 WEBHOOK_ENDPOINT_NOT_FOUND."


class WebhookView(APIView):
    required_scope = SCOPE
    permission_classes = [HasRequiredScope]

    def endpoint(self, request, endpoint_id: str):
        return selectors.endpoint_get_for_partner(principal=request.user, endpoint_id=endpoint_id)


def _page(page, serializer) -> dict:
    return {
        "results": serializer(page.results, many=True).data,
        "has_more": page.has_more,
        "next_cursor": page.next_cursor,
    }


def _accepted(delivery) -> Response:
    """202: the delivery is queued; its attempts appear at GET …/deliveries."""
    return Response(
        {"notification_id": delivery.notification.notification_id, "delivery_id": delivery.delivery_id},
        status=202,
    )


class EndpointListCreateView(WebhookView):
    @extend_schema(
        operation_id="webhook_endpoints_create",
        # What the service enforces that OpenAPI 3.0 cannot state (a rule across fields, or relative to now).
        extensions={
            "x-rules": [
                "The host of `url` resolves, to public addresses only in production (`issue: not_allowed` / `unresolvable`); `https://` only in production.",
                "At most 10 endpoints per partner and mode (`issue: too_many_endpoints`).",
            ]
        },
        tags=TAGS,
        summary="Register a webhook endpoint",
        description=examples.CREATE_DESCRIPTION,
        request=EndpointCreateSerializer,
        responses={
            201: EndpointWithSecretSerializer,
            **error_responses(api_errors.ValidationFailed, api_errors.Forbidden),
        },
        examples=examples.CREATE_EXAMPLES,
    )
    def post(self, request):
        body = EndpointCreateSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        endpoint, secret = services.endpoint_create(
            partner_pk=request.user.pk, livemode=request.user.livemode, **body.validated_data
        )
        endpoint.secret = secret
        return Response(EndpointWithSecretSerializer(endpoint).data, status=201)

    @extend_schema(
        operation_id="webhook_endpoints_list",
        tags=TAGS,
        summary="List your webhook endpoints",
        description="Newest first, cursor-paginated; only the endpoints of the token's mode.",
        parameters=[ListParamsSerializer],
        responses={
            200: EndpointListSerializer,
            **error_responses(api_errors.ValidationFailed, api_errors.Forbidden),
        },
        examples=examples.LIST_EXAMPLES,
    )
    def get(self, request):
        params = ListParamsSerializer(data=request.query_params)
        params.is_valid(raise_exception=True)
        page = selectors.endpoint_list(
            principal=request.user,
            limit=params.validated_data["limit"],
            cursor=params.validated_data.get("cursor"),
        )
        return Response(_page(page, EndpointSerializer))


class EndpointDetailView(WebhookView):
    @extend_schema(
        operation_id="webhook_endpoints_retrieve",
        tags=TAGS,
        summary="Read a webhook endpoint",
        description=NOT_FOUND + " The secret is never shown again.",
        parameters=[ENDPOINT_ID_PARAM],
        responses={
            200: EndpointSerializer,
            **error_responses(api_errors.Forbidden, api_errors.WebhookEndpointNotFound),
        },
        examples=examples.DETAIL_EXAMPLES,
    )
    def get(self, request, endpoint_id: str):
        return Response(EndpointSerializer(self.endpoint(request, endpoint_id)).data)

    @extend_schema(
        operation_id="webhook_endpoints_update",
        # What the service enforces that OpenAPI 3.0 cannot state (a rule across fields, or relative to now).
        extensions={
            "x-rules": [
                "The host of `url` resolves, to public addresses only in production (`issue: not_allowed` / `unresolvable`); `https://` only in production.",
            ]
        },
        tags=TAGS,
        summary="Change a webhook endpoint",
        description=(
            "Any of `url`, `event_types`, `description`, `status`; the fields left out stay as they are. "
            "A new `url` passes the same checks as at registration. " + NOT_FOUND
        ),
        parameters=[ENDPOINT_ID_PARAM],
        request=EndpointUpdateSerializer,
        responses={
            200: EndpointSerializer,
            **error_responses(
                api_errors.ValidationFailed, api_errors.Forbidden, api_errors.WebhookEndpointNotFound
            ),
        },
        examples=examples.UPDATE_EXAMPLES,
    )
    def patch(self, request, endpoint_id: str):
        endpoint = self.endpoint(request, endpoint_id)
        body = EndpointUpdateSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        endpoint = services.endpoint_update(endpoint=endpoint, **body.validated_data)
        return Response(EndpointSerializer(endpoint).data)

    @extend_schema(
        operation_id="webhook_endpoints_delete",
        tags=TAGS,
        summary="Delete a webhook endpoint",
        description=(
            "200 with `{endpoint_id, deleted: true}` (every answer is the envelope, so not 204). Its pending "
            "deliveries are never sent; its delivery history goes with it. " + NOT_FOUND
        ),
        parameters=[ENDPOINT_ID_PARAM],
        responses={
            200: EndpointDeletedSerializer,
            **error_responses(api_errors.Forbidden, api_errors.WebhookEndpointNotFound),
        },
        examples=examples.DELETE_EXAMPLES,
    )
    def delete(self, request, endpoint_id: str):
        endpoint = self.endpoint(request, endpoint_id)
        services.endpoint_delete(endpoint=endpoint)
        return Response({"endpoint_id": endpoint_id, "deleted": True})


class RotateSecretView(WebhookView):
    @extend_schema(
        operation_id="webhook_endpoints_rotate_secret",
        tags=TAGS,
        summary="Rotate an endpoint's signing secret",
        description=(
            "A new secret, in this response only. Until `expire_previous_in_seconds` (0–86400, default 86400) "
            "have passed, deliveries carry two signatures, space-separated: the new secret's, then the "
            "previous one's. The body is optional. " + NOT_FOUND
        ),
        parameters=[ENDPOINT_ID_PARAM],
        request=RotateSecretSerializer,
        responses={
            200: EndpointWithSecretSerializer,
            **error_responses(
                api_errors.ValidationFailed, api_errors.Forbidden, api_errors.WebhookEndpointNotFound
            ),
        },
        examples=examples.ROTATE_EXAMPLES,
    )
    def post(self, request, endpoint_id: str):
        endpoint = self.endpoint(request, endpoint_id)
        body = RotateSecretSerializer(data=request.data or {})
        body.is_valid(raise_exception=True)
        secret = services.endpoint_rotate_secret(endpoint=endpoint, **body.validated_data)
        endpoint.secret = secret
        return Response(EndpointWithSecretSerializer(endpoint).data)


class PingView(WebhookView):
    @extend_schema(
        operation_id="webhook_endpoints_ping",
        tags=TAGS,
        summary="Send a test notification",
        description=(
            "Creates a `webhook.ping` notification (`data: {endpoint_id}`) and delivers it to this endpoint "
            "only, whatever its `event_types` (a disabled endpoint's ping fails without being sent). 202: "
            "the delivery is queued; follow it at `GET …/deliveries`. " + NOT_FOUND
        ),
        parameters=[ENDPOINT_ID_PARAM],
        request=None,
        responses={
            202: DeliveryCreatedSerializer,
            **error_responses(api_errors.Forbidden, api_errors.WebhookEndpointNotFound),
        },
        examples=examples.PING_EXAMPLES,
    )
    def post(self, request, endpoint_id: str):
        delivery = services.endpoint_ping(endpoint=self.endpoint(request, endpoint_id))
        return _accepted(delivery)


class DeliveryListView(WebhookView):
    @extend_schema(
        operation_id="webhook_endpoints_deliveries",
        tags=TAGS,
        summary="List the delivery attempts to an endpoint",
        description=(
            "One row per attempt, newest first, cursor-paginated; the attempts of one delivery share its "
            "`delivery_id` and count `attempt` from 1. Kept 30 days. " + NOT_FOUND
        ),
        parameters=[ENDPOINT_ID_PARAM, ListParamsSerializer],
        responses={
            200: AttemptListSerializer,
            **error_responses(
                api_errors.ValidationFailed, api_errors.Forbidden, api_errors.WebhookEndpointNotFound
            ),
        },
        examples=examples.ATTEMPT_EXAMPLES,
    )
    def get(self, request, endpoint_id: str):
        endpoint = self.endpoint(request, endpoint_id)
        params = ListParamsSerializer(data=request.query_params)
        params.is_valid(raise_exception=True)
        page = selectors.attempt_list(
            endpoint=endpoint,
            limit=params.validated_data["limit"],
            cursor=params.validated_data.get("cursor"),
        )
        return Response(_page(page, AttemptSerializer))


class ResendView(WebhookView):
    @extend_schema(
        operation_id="webhook_endpoints_resend",
        tags=TAGS,
        summary="Deliver one of your notifications again",
        description=(
            "One more delivery of the notification to this endpoint, now (a new `delivery_id`, the same "
            "`webhook-id`), whatever the endpoint's `event_types`. A notification that is not yours, or of "
            "the other mode, or older than 30 days, is 404 NOTIFICATION_NOT_FOUND. " + NOT_FOUND
        ),
        parameters=[ENDPOINT_ID_PARAM],
        request=ResendSerializer,
        responses={
            202: DeliveryCreatedSerializer,
            **error_responses(
                api_errors.ValidationFailed,
                api_errors.Forbidden,
                api_errors.WebhookEndpointNotFound,
                api_errors.NotificationNotFound,
            ),
        },
        examples=examples.RESEND_EXAMPLES,
    )
    def post(self, request, endpoint_id: str):
        endpoint = self.endpoint(request, endpoint_id)
        body = ResendSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        delivery = services.delivery_resend(
            endpoint=endpoint, notification_id=body.validated_data["notification_id"]
        )
        return _accepted(delivery)
