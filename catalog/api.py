"""GET /v1/events, /v1/events/{id}, /v1/events/{id}/sections, /v1/events/{id}/sections/{name}/rows."""

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiExample, OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework.views import APIView

from config.api.pagination import PageParamsSerializer
from config.api.schema import error_responses

from . import cache, errors, examples, reads
from .serializers import (
    EventListParamsSerializer,
    EventPageSerializer,
    EventSerializer,
    RowPageSerializer,
    SectionPageSerializer,
)

_EVENT_ID = OpenApiParameter(
    "event_id", OpenApiTypes.STR, OpenApiParameter.PATH, description="Event id (`evt_…`)."
)
_SECTION_NAME = OpenApiParameter(
    "name",
    OpenApiTypes.STR,
    OpenApiParameter.PATH,
    description="Section name, URL-encoded (`Floor%20A`, `Lower%2F101`); it may hold spaces and slashes.",
)


_IF_NONE_MATCH = OpenApiParameter(
    "If-None-Match",
    OpenApiTypes.STR,
    OpenApiParameter.HEADER,
    required=False,
    description=(
        "The `ETag` of an earlier answer to the same request. While it is still the current one the answer is "
        "`304 Not Modified` with no body (authenticated first; it counts one request of the rate budget)."
    ),
)
_CACHE_HEADERS = [
    OpenApiParameter(
        "ETag",
        OpenApiTypes.STR,
        OpenApiParameter.HEADER,
        response=[200, 304],
        description=(
            "Strong tag of this answer: it changes whenever anything in it could change (the catalog's "
            "version, availability included, the query and the mode)."
        ),
    ),
    OpenApiParameter(
        "Cache-Control",
        OpenApiTypes.STR,
        OpenApiParameter.HEADER,
        response=[200, 304],
        description="`private, no-cache`: keep the answer, but revalidate it with `If-None-Match` before use.",
    ),
]
_NOT_MODIFIED = {
    304: OpenApiResponse(
        description=(
            "Not Modified: `If-None-Match` named the current `ETag`. No body (the one answer that is not the "
            "envelope) and no `Content-Length`; `X-Request-ID`, `ETag` and the rate-limit headers are sent."
        )
    )
}


class CatalogView(APIView):
    """The DRF side of a catalog URL: its schema, and the answer to what :func:`reads.read_view` does not
    take itself (no ``Authorization`` header, another method)."""

    required_scope = "events:read"
    route_of = None  # set by each view: reads.*_route

    @classmethod
    def as_view(cls, **initkwargs):
        return reads.read_view(super().as_view(**initkwargs), cls.route_of)

    def answer(self, request, **kwargs):
        route = type(self).route_of(request, **kwargs)
        page = cache.page_read(route.key, route.build, event_id=route.event_id)
        return reads.respond(request._request, page, livemode=request.user.livemode)


class EventListView(CatalogView):
    route_of = staticmethod(reads.event_list_route)

    @extend_schema(
        operation_id="events_list",
        # What the service enforces that OpenAPI 3.0 cannot state (a rule across fields, or relative to now).
        extensions={
            "x-rules": [
                "`date_to` is not before `date_from` (otherwise VALIDATION_ERROR on `date_to`).",
                "`cursor` is one this list returned (`next_cursor`).",
            ]
        },
        tags=["Catalog"],
        summary="Find events",
        description=(
            "Events ordered by start time. Filters combine (AND). Without `date_from`, only events that "
            "have not started yet are listed; a `date_from` in the past lists past events from that date "
            "on. Canceled events stay listed with `status: canceled`. Cursor pagination: pass "
            "`next_cursor` back as `cursor`; pages stay stable while events are added."
        ),
        parameters=[EventListParamsSerializer, _IF_NONE_MATCH, *_CACHE_HEADERS],
        responses={
            200: EventPageSerializer,
            **_NOT_MODIFIED,
            **error_responses(errors.ValidationFailed, errors.Forbidden),
        },
        examples=[OpenApiExample("Events", response_only=True, value=examples.EVENT_PAGE)],
    )
    def get(self, request):
        return self.answer(request)


class EventDetailView(CatalogView):
    route_of = staticmethod(reads.event_detail_route)

    @extend_schema(
        operation_id="events_retrieve",
        tags=["Catalog"],
        summary="One event",
        description="Any event of the catalog, past, upcoming or canceled.",
        parameters=[_EVENT_ID, _IF_NONE_MATCH, *_CACHE_HEADERS],
        responses={
            200: EventSerializer,
            **_NOT_MODIFIED,
            **error_responses(errors.EventNotFound, errors.Forbidden),
        },
        examples=[OpenApiExample("Event", response_only=True, value=examples.EVENT)],
    )
    def get(self, request, event_id: str):
        return self.answer(request, event_id=event_id)


class SectionListView(CatalogView):
    route_of = staticmethod(reads.section_list_route)

    @extend_schema(
        operation_id="events_sections_list",
        tags=["Catalog"],
        summary="Sections of an event",
        description=(
            "Sections ordered by name, each with the quantity the service still buys across its rows and "
            "the lowest per-ticket offer among rows with quantity available. General-admission sections "
            "have rows too. Quantities reflect every committed order, cancel and expiry at once."
        ),
        parameters=[_EVENT_ID, PageParamsSerializer, _IF_NONE_MATCH, *_CACHE_HEADERS],
        responses={
            200: SectionPageSerializer,
            **_NOT_MODIFIED,
            **error_responses(errors.ValidationFailed, errors.Forbidden, errors.EventNotFound),
        },
        examples=[OpenApiExample("Sections", response_only=True, value=examples.SECTION_PAGE)],
    )
    def get(self, request, event_id: str):
        return self.answer(request, event_id=event_id)


class RowListView(CatalogView):
    route_of = staticmethod(reads.row_list_route)

    @extend_schema(
        operation_id="events_sections_rows_list",
        tags=["Catalog"],
        summary="Rows of a section",
        description=(
            "Rows ordered by name with the quantity the service still buys, the per-ticket offer "
            "(`offer_price`, a JSON number) and face value (`face_value`, a string with two decimals). "
            "`available_quantity` reflects every committed order, cancel and expiry at once."
        ),
        parameters=[_EVENT_ID, _SECTION_NAME, PageParamsSerializer, _IF_NONE_MATCH, *_CACHE_HEADERS],
        responses={
            200: RowPageSerializer,
            **_NOT_MODIFIED,
            **error_responses(
                errors.ValidationFailed, errors.Forbidden, errors.EventNotFound, errors.SectionNotFound
            ),
        },
        examples=[OpenApiExample("Rows", response_only=True, value=examples.ROW_PAGE)],
    )
    def get(self, request, event_id: str, name: str):
        return self.answer(request, event_id=event_id, name=name)
