"""GET /v1/events, /v1/events/{id}, /v1/events/{id}/sections, /v1/events/{id}/sections/{name}/rows."""

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiExample, OpenApiParameter, extend_schema
from rest_framework.response import Response
from rest_framework.views import APIView

from config.api.pagination import PageParamsSerializer
from config.api.schema import error_responses

from . import cache, errors, examples, selectors
from .serializers import (
    EventListParamsSerializer,
    EventPageSerializer,
    EventSerializer,
    RowPageSerializer,
    SectionPageSerializer,
    event_data,
    row_data,
    section_data,
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


def _page_data(page, render) -> dict:
    return {
        "results": [render(item) for item in page.results],
        "has_more": page.has_more,
        "next_cursor": page.next_cursor,
    }


def _params(serializer_class, request) -> dict:
    params = serializer_class(data=request.query_params)
    params.is_valid(raise_exception=True)
    return params.validated_data


class EventListView(APIView):
    required_scope = "events:read"

    @extend_schema(
        operation_id="events_list",
        tags=["Catalog"],
        summary="Find events",
        description=(
            "Events ordered by start time. Filters combine (AND). Without `date_from`, only events that "
            "have not started yet are listed; a `date_from` in the past lists past events from that date "
            "on. Canceled events stay listed with `status: canceled`. Cursor pagination: pass "
            "`next_cursor` back as `cursor`; pages stay stable while events are added."
        ),
        parameters=[EventListParamsSerializer],
        responses={200: EventPageSerializer, **error_responses(errors.ValidationFailed, errors.Forbidden)},
        examples=[OpenApiExample("Events", response_only=True, value=examples.EVENT_PAGE)],
    )
    def get(self, request):
        params = _params(EventListParamsSerializer, request)
        key = cache.entry_key("events", sorted(params.items()))

        def build() -> dict:
            filters = {k: v for k, v in params.items() if k not in ("limit", "cursor")}
            page, performers = selectors.event_list(
                filters=filters, limit=params["limit"], cursor=params.get("cursor")
            )
            return _page_data(page, lambda e: event_data(e, performers.get(e.pk, [])))

        return Response(cache.cached(key, build))


class EventDetailView(APIView):
    required_scope = "events:read"

    @extend_schema(
        operation_id="events_retrieve",
        tags=["Catalog"],
        summary="One event",
        description="Any event of the catalog, past, upcoming or canceled.",
        parameters=[_EVENT_ID],
        responses={200: EventSerializer, **error_responses(errors.EventNotFound, errors.Forbidden)},
        examples=[OpenApiExample("Event", response_only=True, value=examples.EVENT)],
    )
    def get(self, request, event_id: str):
        def build() -> dict:
            event, performers = selectors.event_get(event_id=event_id)
            return event_data(event, performers)

        return Response(cache.cached(cache.entry_key("event", event_id), build))


class SectionListView(APIView):
    required_scope = "events:read"

    @extend_schema(
        operation_id="events_sections_list",
        tags=["Catalog"],
        summary="Sections of an event",
        description=(
            "Sections ordered by name, each with the quantity the service still buys across its rows and "
            "the lowest per-ticket offer among rows with quantity available. General-admission sections "
            "have rows too."
        ),
        parameters=[_EVENT_ID, PageParamsSerializer],
        responses={
            200: SectionPageSerializer,
            **error_responses(errors.ValidationFailed, errors.Forbidden, errors.EventNotFound),
        },
        examples=[OpenApiExample("Sections", response_only=True, value=examples.SECTION_PAGE)],
    )
    def get(self, request, event_id: str):
        params = _params(PageParamsSerializer, request)

        def build() -> dict:
            page = selectors.section_list(
                event_id=event_id, limit=params["limit"], cursor=params.get("cursor")
            )
            return _page_data(page, section_data)

        key = cache.entry_key("sections", event_id, sorted(params.items()))
        return Response(cache.cached(key, build))


class RowListView(APIView):
    required_scope = "events:read"

    @extend_schema(
        operation_id="events_sections_rows_list",
        tags=["Catalog"],
        summary="Rows of a section",
        description=(
            "Rows ordered by name with the quantity the service still buys, the per-ticket offer "
            "(`offer_price`, a JSON number) and face value (`face_value`, a string with two decimals)."
        ),
        parameters=[_EVENT_ID, _SECTION_NAME, PageParamsSerializer],
        responses={
            200: RowPageSerializer,
            **error_responses(
                errors.ValidationFailed, errors.Forbidden, errors.EventNotFound, errors.SectionNotFound
            ),
        },
        examples=[OpenApiExample("Rows", response_only=True, value=examples.ROW_PAGE)],
    )
    def get(self, request, event_id: str, name: str):
        params = _params(PageParamsSerializer, request)

        def build() -> dict:
            page = selectors.row_list(
                event_id=event_id, section_name=name, limit=params["limit"], cursor=params.get("cursor")
            )
            return _page_data(page, row_data)

        key = cache.entry_key("rows", event_id, name, sorted(params.items()))
        return Response(cache.cached(key, build))
