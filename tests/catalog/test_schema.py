"""The OpenAPI schema documents every catalog and quote endpoint, parameter, shape and example."""

import pytest

from catalog import examples as catalog_examples
from catalog.serializers import EventSerializer, RowSerializer, SectionSerializer
from quotes import examples as quote_examples
from quotes.serializers import QuoteDetailSerializer, QuoteSerializer

pytestmark = pytest.mark.django_db


@pytest.fixture
def schema(api_client):
    response = api_client.get("/v1/schema", {"format": "json"})
    assert response.status_code == 200
    return response.json()


def test_schema_lists_catalog_and_quote_operations(schema):
    paths = schema["paths"]
    assert {op["operationId"] for p in paths.values() for op in p.values() if isinstance(op, dict)} >= {
        "events_list",
        "events_retrieve",
        "events_sections_list",
        "events_sections_rows_list",
        "quotes_create",
        "quotes_retrieve",
    }
    params = {p["name"] for p in paths["/v1/events"]["get"]["parameters"]}
    assert params >= {
        "q", "venue_id", "venue_name", "performer_id", "performer_name", "city", "primary_site",
        "date_from", "date_to", "limit", "cursor",
    }  # fmt: skip
    rows = paths["/v1/events/{event_id}/sections/{name}/rows"]["get"]
    assert {"400", "403", "404", "401", "429"} <= set(rows["responses"])
    quotes = paths["/v1/quotes"]["post"]["responses"]
    assert {"201", "400", "403", "404", "422"} <= set(quotes)
    descriptions = " ".join(r.get("description", "") for r in quotes.values())
    for code in ("PAYOUT_METHOD_NOT_CONFIGURED", "EVENT_NOT_FOUND", "SECTION_NOT_FOUND", "ROW_NOT_FOUND",
                 "EVENT_EXPIRED", "INSUFFICIENT_QUANTITY", "VALIDATION_ERROR"):  # fmt: skip
        assert code in descriptions


def test_schema_examples_match_the_documented_shapes():
    assert set(catalog_examples.EVENT) == set(EventSerializer().fields)
    assert set(catalog_examples.SECTION_PAGE["results"][0]) == set(SectionSerializer().fields)
    assert set(catalog_examples.ROW_PAGE["results"][0]) == set(RowSerializer().fields)
    assert set(quote_examples.QUOTE) == set(QuoteSerializer().fields)
    assert set(quote_examples.QUOTE_CONSUMED) == set(QuoteDetailSerializer().fields)


def test_schema_money_fields_are_numbers_and_face_value_a_string(schema):
    components = schema["components"]["schemas"]
    assert components["Row"]["properties"]["offer_price"]["type"] == "number"
    assert components["Row"]["properties"]["face_value"]["type"] == "string"
    assert components["Quote"]["properties"]["total_price"]["type"] == "number"


def test_schema_documents_conditional_catalog_reads(schema):
    """docs/partners/conventions.md "Conditional requests": If-None-Match in, ETag and Cache-Control out, and 304."""
    paths = schema["paths"]
    for path in (
        "/v1/events",
        "/v1/events/{event_id}",
        "/v1/events/{event_id}/sections",
        "/v1/events/{event_id}/sections/{name}/rows",
    ):
        operation = paths[path]["get"]
        header_params = {p["name"] for p in operation["parameters"] if p["in"] == "header"}
        assert "If-None-Match" in header_params, path
        not_modified = operation["responses"]["304"]
        assert "content" not in not_modified, path  # no body, no envelope
        assert {"ETag", "Cache-Control", "RateLimit-Remaining"} <= set(not_modified["headers"]), path
        assert {"ETag", "Cache-Control"} <= set(operation["responses"]["200"]["headers"]), path
