"""GET /v1/events, /v1/events/{id}, /v1/events/{id}/sections, /v1/events/{id}/sections/{name}/rows."""

import json
from functools import lru_cache

from django.http import QueryDict
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiExample, OpenApiParameter, extend_schema
from rest_framework.renderers import JSONRenderer
from rest_framework.response import Response
from rest_framework.views import APIView

from config.api.envelope import meta as envelope_meta
from config.api.pagination import PageParamsSerializer
from config.api.renderers import EnvelopeJSONRenderer
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


class PreRendered:
    """``data`` already encoded as JSON (what the catalog cache keeps), spliced into the envelope."""

    __slots__ = ("json",)

    def __init__(self, json_bytes: bytes) -> None:
        self.json = json_bytes


class CatalogEnvelopeRenderer(EnvelopeJSONRenderer):
    """The envelope renderer, plus a fast path for cached pages: no re-encoding of ``data`` per request."""

    def render(self, data, accepted_media_type=None, renderer_context=None):
        if isinstance(data, PreRendered):
            meta = json.dumps(envelope_meta((renderer_context or {}).get("request")), separators=(",", ":"))
            return b'{"success":true,"data":' + data.json + b',"meta":' + meta.encode() + b"}"
        return super().render(data, accepted_media_type, renderer_context)


_encoder = JSONRenderer()


def _encoded(data: dict) -> bytes:
    # DRF's encoder, as the envelope renderer uses: Decimals become numbers, output is compact UTF-8.
    return _encoder.render(data)


def _page_data(page, render) -> bytes:
    return _encoded(
        {
            "results": [render(item) for item in page.results],
            "has_more": page.has_more,
            "next_cursor": page.next_cursor,
        }
    )


@lru_cache(maxsize=1024)
def _validated(serializer_class, query_string: str) -> tuple:
    # Validation depends on the query string alone, so the hot lists skip the serializer after the
    # first request. Failures are not cached (lru_cache keeps only returned values).
    params = serializer_class(data=QueryDict(query_string))
    params.is_valid(raise_exception=True)
    return tuple(params.validated_data.items())


def _params(serializer_class, request) -> dict:
    return dict(_validated(serializer_class, request.META.get("QUERY_STRING", "")))


def _prefetch(request) -> tuple | None:
    # What authentication's round trip read for this view (cache_prefetch_keys), if anything.
    return getattr(request, "cache_prefetch", None)


class CatalogView(APIView):
    required_scope = "events:read"
    renderer_classes = [CatalogEnvelopeRenderer]


class EventListView(CatalogView):
    @staticmethod
    def _key(params: dict) -> str:
        return cache.entry_key("events", sorted(params.items()))

    def cache_prefetch_keys(self, request) -> list[str]:
        return cache.prefetch_keys(self._key(_params(EventListParamsSerializer, request)))

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
        key = self._key(params)

        def build() -> bytes:
            filters = {k: v for k, v in params.items() if k not in ("limit", "cursor")}
            page, performers = selectors.event_list(
                filters=filters, limit=params["limit"], cursor=params.get("cursor")
            )
            return _page_data(page, lambda e: event_data(e, performers.get(e.pk, [])))

        return Response(PreRendered(cache.cached(key, build, prefetch=_prefetch(request))))


class EventDetailView(CatalogView):
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
        def build() -> bytes:
            event, performers = selectors.event_get(event_id=event_id)
            return _encoded(event_data(event, performers))

        return Response(PreRendered(cache.cached(cache.entry_key("event", event_id), build)))


class SectionListView(CatalogView):
    @extend_schema(
        operation_id="events_sections_list",
        tags=["Catalog"],
        summary="Sections of an event",
        description=(
            "Sections ordered by name, each with the quantity the service still buys across its rows and "
            "the lowest per-ticket offer among rows with quantity available. General-admission sections "
            "have rows too. Quantities reflect every committed order, cancel and expiry at once."
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

        def build() -> bytes:
            page = selectors.section_list(
                event_id=event_id, limit=params["limit"], cursor=params.get("cursor")
            )
            return _page_data(page, section_data)

        key = self._key(event_id, params)
        return Response(
            PreRendered(cache.cached_availability(key, build, event_id=event_id, prefetch=_prefetch(request)))
        )

    @staticmethod
    def _key(event_id: str, params: dict) -> str:
        return cache.entry_key("sections", event_id, sorted(params.items()))

    def cache_prefetch_keys(self, request, event_id: str) -> list[str]:
        key = self._key(event_id, _params(PageParamsSerializer, request))
        return cache.availability_prefetch_keys(key, event_id=event_id)


class RowListView(CatalogView):
    @extend_schema(
        operation_id="events_sections_rows_list",
        tags=["Catalog"],
        summary="Rows of a section",
        description=(
            "Rows ordered by name with the quantity the service still buys, the per-ticket offer "
            "(`offer_price`, a JSON number) and face value (`face_value`, a string with two decimals). "
            "`available_quantity` reflects every committed order, cancel and expiry at once."
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

        def build() -> bytes:
            page = selectors.row_list(
                event_id=event_id, section_name=name, limit=params["limit"], cursor=params.get("cursor")
            )
            return _page_data(page, row_data)

        key = self._key(event_id, name, params)
        return Response(
            PreRendered(cache.cached_availability(key, build, event_id=event_id, prefetch=_prefetch(request)))
        )

    @staticmethod
    def _key(event_id: str, name: str, params: dict) -> str:
        return cache.entry_key("rows", event_id, name, sorted(params.items()))

    def cache_prefetch_keys(self, request, event_id: str, name: str) -> list[str]:
        key = self._key(event_id, name, _params(PageParamsSerializer, request))
        return cache.availability_prefetch_keys(key, event_id=event_id)
