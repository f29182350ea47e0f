"""What the schema fuzzers share: the objects their cases address, and the checks with their allow-list.

Two fuzzers use it: tests/schema/test_openapi_fuzz.py drives the WSGI application in-process, and
tests/schema/test_live_fuzz.py runs the ``schemathesis`` command against a live server (its hooks:
tests/schema/live_hooks.py). Both add the checks below to schemathesis' own; the allow-list (what a
schema-valid request may still meet, and what a schema-invalid one may still pass) is commented where it is
decided, each entry with the rule no schema can describe.
"""

from __future__ import annotations

import re
import zlib
from dataclasses import asdict, dataclass
from datetime import date, timedelta

import jsonschema
from django.utils import timezone
from rest_framework.test import APIClient
from schemathesis.checks import negative_data_rejection, positive_data_acceptance

from tests.catalog.factories import EventFactory, RowFactory, SectionFactory
from tests.conftest import issue_token, make_partner

REQUEST_ID = re.compile(r"^[\x20-\x7e]{1,128}$")


@dataclass
class World:
    token: str
    event_id: str
    section_name: str
    row_name: str
    quote_id: str
    consumed_quote_id: str
    order_id: str

    endpoint_id: str

    def as_dict(self) -> dict:
        return asdict(self)


def build_world() -> World:
    """A partner with payment methods and a token, an upcoming event, one open quote and one order."""
    creds = make_partner(name="Fuzz Partner", email="fuzz@partner.example")
    client = APIClient()
    token = issue_token(client, creds)
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {token}")
    event = EventFactory(name="Fuzz Fest", starts_at=timezone.now() + timedelta(days=40))
    section = SectionFactory(event=event, name="Lower 101", name_display="Lower Level 101")
    RowFactory(section=section, name="A", available_quantity=1000)
    body = {"event_id": event.event_id, "section_name": "Lower 101", "row_name": "A", "quantity": 1}
    quotes = []
    for _ in range(2):
        response = client.post("/v1/quotes", body, format="json")
        assert response.status_code == 201, response.content
        quotes.append(response.json()["data"]["quote_id"])
    response = client.post(
        "/v1/orders",
        {"quote_id": quotes[1], "delivery_type": "mobile_transfer", "is_ready_to_deliver": "true"},
        format="multipart",
    )
    assert response.status_code == 201, response.content
    order_id = response.json()["data"]["order_id"]
    response = client.post(
        "/v1/webhook_endpoints",
        {"url": "http://127.0.0.1:9/hooks", "event_types": ["*"], "description": "fuzz"},
        format="json",
    )
    assert response.status_code == 201, response.content
    return World(
        token=token,
        event_id=event.event_id,
        section_name="Lower 101",
        row_name="A",
        quote_id=quotes[0],
        consumed_quote_id=quotes[1],
        order_id=order_id,
        endpoint_id=response.json()["data"]["endpoint_id"],
    )


def is_positive(case, location: str) -> bool:
    """The case's component at ``location`` (PATH, BODY…) was generated schema-valid."""
    return all(info.mode.is_positive for loc, info in case.meta.components.items() if loc.name == location)


def adopt_real_ids(case, world: World) -> None:
    """For about half the schema-valid cases, address the real event, section, quote or order.

    Random ids only ever meet 404s; this drives the 2xx paths too. The choice is a function of the
    generated case (so Hypothesis explores both), and components generated invalid on purpose are
    left alone, so negative cases stay negative. (``@schema.given`` cannot be combined with the
    schema's examples, which are worth running.)
    """
    pick = zlib.crc32(repr((case.path_parameters, case.query, case.body)).encode())
    real = {
        "event_id": world.event_id,
        "name": world.section_name,
        "quote_id": world.quote_id,
        "order_id": world.order_id,
        "endpoint_id": world.endpoint_id,
    }
    if case.path_parameters and is_positive(case, "PATH") and pick % 2:
        case.path_parameters = {k: real.get(k, v) for k, v in case.path_parameters.items()}
    if not isinstance(case.body, dict) or not is_positive(case, "BODY"):
        return
    if case.operation.path == "/v1/quotes" and pick % 2:
        case.body = {
            **case.body,
            "event_id": world.event_id,
            "section_name": world.section_name,
            "row_name": world.row_name,
        }
    if case.operation.path == "/v1/orders" and "quote_id" in case.body and pick % 3:
        quote_id = world.quote_id if pick % 3 == 1 else world.consumed_quote_id
        case.body = {**case.body, "quote_id": quote_id}


def check_envelope(ctx, response, case) -> None:
    """Every answer of the partner API is the envelope (docs/partners/conventions.md "API conventions"), with X-Request-ID;
    the one exception is a catalog read's 304 (docs/partners/conventions.md "Conditional requests"): no body, its tag
    and the request id and rate-limit headers."""
    if response.status_code == 304:
        assert response.content == b"", response.content
        assert REQUEST_ID.match(response.headers.get("x-request-id", [""])[0]), response.headers
        assert response.headers.get("etag", [""])[0].startswith('"'), response.headers
        assert response.headers.get("ratelimit-remaining"), response.headers
        return
    assert response.headers.get("content-type", [""])[0].startswith("application/json"), response.headers
    body = response.json()
    assert isinstance(body, dict), body
    meta = body.get("meta")
    assert isinstance(meta, dict) and REQUEST_ID.match(meta.get("request_id", "")), body
    assert isinstance(meta.get("timestamp"), str) and meta["timestamp"].endswith("Z"), body
    assert response.headers.get("x-request-id", [None])[0] == meta["request_id"]
    if response.status_code < 400:
        assert body.get("success") is True and "data" in body and "error" not in body, body
    else:
        assert body.get("success") is False and "data" not in body, body
        error = body.get("error")
        assert isinstance(error, dict) and re.fullmatch(r"[A-Z][A-Z_]+", error.get("code", "")), body
        assert isinstance(error.get("message"), str) and error["message"], body
        if response.status_code == 401:
            assert response.headers.get("www-authenticate", [""])[0].startswith("Bearer"), response.headers
        if response.status_code == 429:
            assert int(response.headers["retry-after"][0]) >= 1


# The allow-list. No 400 code of docs/partners/errors.md "Error codes" is allowed for a schema-valid request: the
# schema states the order form's conditional fields (IN_HAND_DATE_REQUIRED, FILE_REQUIRED) and the one grant type.
# Server state (INSUFFICIENT_QUANTITY, ORDER_NOT_CANCELABLE…) answers 4xx other than 400, allowed below.
DOMAIN_400_CODES: set[str] = set()
# ``after`` (GET /v1/notifications) must name one of the caller's notifications: any other id is a 400.
OPAQUE_FIELDS = {"cursor", "after"}


def _reversed_ranges(case) -> set[str]:
    """``date_to`` / ``created_to`` fields of ranges sent end-before-start: refused by a cross-field rule."""
    query = case.query or {}
    out = set()
    for start, end in (("date_from", "date_to"), ("created_from", "created_to")):
        if (
            isinstance(query.get(start), str)
            and isinstance(query.get(end), str)
            and query[end] < query[start]
        ):
            out.add(end)
    return out


def _sent_fields(case):
    """(name, value) of every query parameter and body field, nested objects' fields as ``parent.child``."""

    def walk(values, prefix=""):
        for name, value in (values or {}).items():
            yield f"{prefix}{name}", value
            if isinstance(value, dict):
                yield from walk(value, f"{prefix}{name}.")

    yield from walk(case.query)
    yield from walk(case.body if isinstance(case.body, dict) else None)


def _unstorable_text(case) -> set[str]:
    """Fields holding NUL or a lone surrogate: DRF's CharField refuses them (PostgreSQL cannot store NUL)."""

    def bad(value) -> bool:
        return isinstance(value, str) and any(ch == "\x00" or "\ud800" <= ch <= "\udfff" for ch in value)

    return {
        name
        for name, value in _sent_fields(case)
        if bad(value) or (isinstance(value, list) and any(bad(v) for v in value))
    }


def _whitespace_only(case) -> set[str]:
    """Strings of only whitespace: DRF trims them to blank, and a required field may not be blank."""
    return {
        name for name, value in _sent_fields(case) if isinstance(value, str) and value and not value.strip()
    }


def _past_in_hand_date(case) -> set[str]:
    """An ``in_hand_date`` already in the past: refused by the order rules (docs/partners/orders.md "Orders")."""
    body = case.body if isinstance(case.body, dict) else {}
    value = body.get("in_hand_date")
    try:
        past = date.fromisoformat(value) < timezone.now().date() - timedelta(days=1)
    except (TypeError, ValueError):
        return set()
    return {"in_hand_date"} if past else set()


def _not_a_pdf(case) -> set[str]:
    """A ``file`` that does not start with ``%PDF-``: refused by a rule of docs/partners/orders.md "Ticket PDFs"."""
    body = case.body if isinstance(case.body, dict) else {}
    content = body.get("file")
    if isinstance(content, str):
        content = content.encode("utf-8", "surrogatepass")
    return {"file"} if isinstance(content, bytes) and not content.startswith(b"%PDF-") else set()


def check_positive_data_acceptance(ctx, response, case) -> None:
    """schemathesis' own check, except that a schema-valid request may still meet a rule of the domain.

    Allowed for schema-valid data: 2xx, 401/403/404/409/422/429 (credentials, ownership, unknown ids,
    state, business rules, limits) and 400 only with one of the codes above or for an opaque cursor.
    Any other 400 means the schema promises something the endpoint refuses: a schema bug.
    """
    meta = case.meta
    if meta is None or not meta.generation.mode.is_positive:
        return
    status = response.status_code
    if status < 400 or status in (401, 403, 404, 409, 422, 429):
        return
    if status == 400:
        error = response.json().get("error", {})
        if error.get("code") in DOMAIN_400_CODES:
            return
        details = error.get("details") or {}
        fields = {e["field"] for e in details.get("errors", [])} or {details.get("field")}
        tolerated = OPAQUE_FIELDS | _reversed_ranges(case) | _unstorable_text(case) | _not_a_pdf(case)
        tolerated |= _whitespace_only(case) | _past_in_hand_date(case)
        if case.operation.path.startswith("/v1/webhook_endpoints"):
            # A webhook URL must resolve, to public addresses only, and a partner has at most 10 endpoints:
            # rules of docs/partners/notifications-and-webhooks.md "Notifications" that the schema cannot express.
            tolerated.add("url")
        if error.get("code") == "VALIDATION_ERROR" and fields <= tolerated:
            return
    raise AssertionError(f"schema-valid request refused with {status}: {response.text[:400]}")


def _json_schema(node):
    """OpenAPI 3.0 → JSON Schema: ``nullable: true`` becomes ``anyOf [..., null]``."""
    if isinstance(node, list):
        return [_json_schema(n) for n in node]
    if not isinstance(node, dict):
        return node
    out = {k: _json_schema(v) for k, v in node.items() if k != "nullable"}
    if node.get("nullable"):
        return {"anyOf": [out, {"type": "null"}]}
    return out


_COMPONENTS: dict[int, dict] = {}


def _components(raw_schema: dict) -> dict:
    key = id(raw_schema)
    if key not in _COMPONENTS:
        _COMPONENTS[key] = _json_schema(raw_schema.get("components", {}))
    return _COMPONENTS[key]


def _valid(case, value, subschema: dict) -> bool:
    # The sub-schema is checked inside a document that carries the components, so $refs resolve.
    raw = case.operation.schema.raw_schema
    document = {"allOf": [_json_schema(subschema)], "components": _components(raw)}
    # Formats are asserted, as the API does: ``seller_email`` is ``oneOf`` an e-mail or "" and "" is not an e-mail
    # (without the format checker "" would match both branches and read as invalid).
    validator = jsonschema.Draft7Validator(document, format_checker=jsonschema.Draft7Validator.FORMAT_CHECKER)
    return validator.is_valid(value)


def _coerce(value, param_schema: dict):
    kind = param_schema.get("type")
    try:
        if kind == "integer":
            return int(value)
        if kind == "number":
            return float(value)
        if kind == "boolean":
            return {"true": True, "false": False}[str(value)]
    except (ValueError, KeyError, TypeError):
        return value
    return value


def _operation(case) -> dict:
    return case.operation.schema.raw_schema["paths"][case.operation.path].get(case.method.lower(), {})


def _known_query_is_valid(case) -> bool:
    """Every query parameter the schema names is valid or sent empty; unknown names are ignored."""
    operation = _operation(case)
    params = {
        p["name"]: p.get("schema", {}) for p in operation.get("parameters", []) if p.get("in") == "query"
    }
    for name, value in (case.query or {}).items():
        if name not in params:
            continue
        for item in value if isinstance(value, list) else [value]:
            if not _valid(case, _coerce(item, params[name]), params[name]):
                return False
    return True


def _known_body_is_valid(case) -> bool:
    """The body without the fields the schema does not name (unknown fields are ignored) is valid."""
    operation = _operation(case)
    content = operation.get("requestBody", {}).get("content", {}).get(case.media_type or "", {})
    body_schema = content.get("schema")
    sent = case.body if isinstance(case.body, dict | list | str | bytes | int | float | bool) else None
    if body_schema is None or not isinstance(sent, dict):
        return body_schema is None and sent is None  # (schemathesis marks "no body" with a NotSet)
    ref = body_schema.get("$ref", "")
    components = case.operation.schema.raw_schema["components"]["schemas"]
    declared = components[ref.rsplit("/", 1)[-1]] if ref else body_schema
    known = {
        k: v.decode("latin-1") if isinstance(v, bytes) else v
        for k, v in case.body.items()
        if k in declared.get("properties", {})
    }
    return _valid(case, known, body_schema)


def _drf_leniency(case) -> bool:
    """The case is invalid only in ways the wire cannot carry or the API ignores by design (the allow-list):

    - a number where a string is expected, in a query or a form: both carry text only, so ``?venue_id=5``
      is the string "5" (a JSON body's number is refused: docs/partners/conventions.md "Strict input");
    - unknown query parameters and unknown body fields are ignored (docs/partners/conventions.md "API conventions").
    Everything else the case sends must match the schema for this to apply.
    """
    if not _operation(case) or any(
        info.mode.is_negative
        for loc, info in case.meta.components.items()
        if loc.name not in ("QUERY", "BODY", "HEADER")
    ):
        return False
    mutations = getattr(case.meta.phase.data, "mutations", ()) or ()
    form = (case.media_type or "").startswith(("multipart/", "application/x-www-form-urlencoded"))
    for m in mutations:
        number_as_text = (
            m.keywords == ("type",)
            and m.original_value == "string"
            and m.new_value
            in (
                "number",
                "integer",
            )
        )
        as_text = m.parameter_location.name == "QUERY" or (m.parameter_location.name == "BODY" and form)
        number_as_text = number_as_text and as_text
        # The tests set (or strip) Authorization themselves, so a generated one never reaches the API.
        overridden = m.parameter_location.name == "HEADER" and (m.parameter or "").lower() == "authorization"
        unknown = "additionalProperties" in m.keywords and m.parameter_location.name in ("QUERY", "BODY")
        if not (number_as_text or overridden or unknown):
            return False
    if mutations:
        return True
    # Cases without a mutation list (coverage phase): check what was sent against the schema directly.
    if any(
        info.mode.is_negative for loc, info in case.meta.components.items() if loc.name == "HEADER"
    ) and set(case.headers or {}) - {"Authorization", "authorization"}:
        return False
    return _known_query_is_valid(case) and _known_body_is_valid(case)


def check_negative_data_rejection(ctx, response, case) -> None:
    """schemathesis' own check, except for what the wire cannot tell apart or the API ignores (see above)."""
    meta = case.meta
    # A catalog read's 304 stands for its 200 (docs/partners/conventions.md "Conditional requests").
    accepted = 200 <= response.status_code < 300 or response.status_code == 304
    lenient = meta is not None and meta.generation.mode.is_negative and accepted
    if lenient and _drf_leniency(case):
        return
    negative_data_rejection(ctx, response, case)


CHECKS = {
    "additional_checks": [check_envelope, check_positive_data_acceptance, check_negative_data_rejection],
    "excluded_checks": [positive_data_acceptance, negative_data_rejection],
}
