"""OpenAPI pieces shared by every endpoint: the envelope, the error shape, and the common error responses.

Views describe their ``data`` with a serializer and list the errors they raise with :func:`error_responses`;
the post-processing hook wraps each 2xx schema in the success envelope and adds the 401/429/500 answers
every operation can give.
"""

import copy
from collections import defaultdict

import drf_spectacular.openapi
from drf_spectacular.utils import OpenApiExample, OpenApiResponse, inline_serializer
from rest_framework import serializers

from . import errors, idempotency

META_SCHEMA = {
    "type": "object",
    "properties": {
        "request_id": {"type": "string", "example": "req_3J7xk2Lq9Vb1NcTz8RwYp4Ha"},
        "timestamp": {"type": "string", "format": "date-time", "example": "2026-11-21T18:30:00Z"},
    },
    "required": ["request_id", "timestamp"],
}

ErrorEnvelopeSerializer = inline_serializer(
    name="ErrorEnvelope",
    fields={
        "success": serializers.BooleanField(default=False),
        "error": inline_serializer(
            name="Error",
            fields={
                "code": serializers.CharField(help_text="Machine-readable code (UPPER_SNAKE)."),
                "message": serializers.CharField(help_text="Human-readable text."),
                "details": serializers.DictField(
                    required=False,
                    help_text="Context; for VALIDATION_ERROR `{field, issue}` and `errors` when several fail.",
                ),
            },
        ),
        "meta": inline_serializer(
            name="Meta",
            fields={"request_id": serializers.CharField(), "timestamp": serializers.DateTimeField()},
        ),
    },
)


def _example(error_cls: type[errors.ApiError]) -> OpenApiExample:
    body = {"code": error_cls.code, "message": error_cls.message}
    return OpenApiExample(
        error_cls.code,
        value={
            "success": False,
            "error": body,
            "meta": {"request_id": "req_3J7xk2Lq9Vb1NcTz8RwYp4Ha", "timestamp": "2026-11-21T18:30:00Z"},
        },
        response_only=True,
        status_codes=[str(error_cls.status)],
    )


def error_responses(*error_classes: type[errors.ApiError]) -> dict[int, OpenApiResponse]:
    """``responses=`` entries for the given errors, grouped by HTTP status, with one example per code."""
    by_status: dict[int, list[type[errors.ApiError]]] = defaultdict(list)
    for cls in error_classes:
        by_status[cls.status].append(cls)
    return {
        status: OpenApiResponse(
            response=ErrorEnvelopeSerializer,
            description=" | ".join(f"`{c.code}`" for c in classes),
            examples=[_example(c) for c in classes],
        )
        for status, classes in sorted(by_status.items())
    }


_COMMON = {
    "401": (errors.Unauthorized, errors.TokenExpired),
    "429": (errors.RateLimitExceeded,),
    "500": (errors.InternalError,),
    # nginx in front (config/deploy/nginx) answers 503 in the envelope when gunicorn is down or too slow.
    "503": (errors.ServiceUnavailable,),
}


def _secured(operation: dict, result: dict) -> bool:
    """The operation needs a bearer token (every endpoint but the token endpoint)."""
    return operation.get("security", result.get("security")) not in (None, [], [{}])


# Every authenticated call is counted (config/api/ratelimit.py) and answers with these fields; the token
# endpoint too, under its own policy. Absent only while the counter store is unreachable (fail open).
RATE_LIMIT_HEADERS = {
    "RateLimit-Limit": ("integer", "Requests allowed in the current window."),
    "RateLimit-Remaining": ("integer", "Requests left in the current window."),
    "RateLimit-Reset": ("integer", "Seconds until the window resets."),
    "RateLimit-Policy": (
        "string",
        'The quota policy (draft-ietf-httpapi-ratelimit-headers): `"default";q=600;w=60` on '
        'authenticated calls, `"token";q=60;w=60` on the token endpoint.',
    ),
    "RateLimit": (
        "string",
        "Remaining quota and seconds to reset of that policy (draft-ietf-httpapi-ratelimit-headers): "
        '`"default";r=599;t=42`.',
    ),
}


def _add_error(
    operation: dict, status: str, classes: tuple[type[errors.ApiError], ...], error_ref: dict
) -> None:
    """Document ``classes`` under ``status``, beside the codes the view already lists there."""
    response = operation["responses"].get(status)
    if response is None:
        operation["responses"][status] = {
            "description": " | ".join(f"`{c.code}`" for c in classes),
            "content": {
                "application/json": {
                    "schema": error_ref,
                    "examples": {c.code: _example_value(c) for c in classes},
                }
            },
        }
        return
    for cls in classes:
        if f"`{cls.code}`" in response.get("description", ""):
            continue
        response["description"] = " | ".join(filter(None, [response.get("description"), f"`{cls.code}`"]))
        content = response.setdefault("content", {}).setdefault("application/json", {"schema": error_ref})
        content.setdefault("examples", {})[cls.code] = _example_value(cls)


def _example_value(cls: type[errors.ApiError]) -> dict:
    return {
        "value": {
            "success": False,
            "error": {"code": cls.code, "message": cls.message},
            "meta": {"request_id": "req_3J7xk2Lq9Vb1NcTz8RwYp4Ha", "timestamp": "2026-11-21T18:30:00Z"},
        },
        "summary": cls.code,
    }


def envelope_postprocessing_hook(result, generator, request, public):
    components = result.setdefault("components", {}).setdefault("schemas", {})
    error_ref = {"$ref": "#/components/schemas/ErrorEnvelope"}
    for _path, methods in result.get("paths", {}).items():
        for _method, operation in methods.items():
            if not isinstance(operation, dict) or "responses" not in operation:
                continue
            for status, response in operation["responses"].items():
                content = response.get("content", {}).get("application/json")
                if not status.startswith("2") or content is None:
                    continue
                schema = content.get("schema", {"type": "object"})
                if schema.get("x-enveloped"):
                    continue
                content["schema"] = {
                    "type": "object",
                    "properties": {
                        "success": {"type": "boolean", "enum": [True]},
                        "data": schema,
                        "meta": {"$ref": "#/components/schemas/Meta"},
                    },
                    "required": ["success", "data", "meta"],
                }
                for example in content.get("examples", {}).values():
                    if "value" in example and not (
                        isinstance(example["value"], dict) and "success" in example["value"]
                    ):
                        example["value"] = {
                            "success": True,
                            "data": example["value"],
                            "meta": {
                                "request_id": "req_3J7xk2Lq9Vb1NcTz8RwYp4Ha",
                                "timestamp": "2026-11-21T18:30:00Z",
                            },
                        }
            secured = _secured(operation, result)
            for status, classes in _COMMON.items():
                if status == "401" and not secured:
                    continue
                if status not in operation["responses"]:
                    operation["responses"][status] = {
                        "description": " | ".join(f"`{c.code}`" for c in classes),
                        "content": {"application/json": {"schema": error_ref}},
                    }
            if secured:
                # A token issued before its partner was suspended still verifies: every authenticated
                # operation can answer 403 ACCOUNT_SUSPENDED (partners/authentication.py).
                _add_error(operation, "403", (errors.AccountSuspended,), error_ref)
            if "requestBody" in operation:
                # A non-file body over DATA_UPLOAD_MAX_MEMORY_SIZE (config/api/middleware.py).
                _add_error(operation, "413", (errors.PayloadTooLarge,), error_ref)
            for status, response in operation["responses"].items():
                is_token = operation.get("operationId") == "auth_token"
                if not (secured or is_token) or (status == "401" and not is_token):
                    continue  # a refused token is refused before anything is counted
                headers = response.setdefault("headers", {})
                for name, (kind, description) in RATE_LIMIT_HEADERS.items():
                    headers.setdefault(name, {"schema": {"type": kind}, "description": description})
    components.setdefault("Meta", META_SCHEMA)
    return result


# The content types a client should send each body as, whatever else the parsers tolerate: the token endpoint's
# JSON and the form encoding OAuth 2.0 client libraries send; multipart form data where a file may go (the
# order); JSON everywhere else. A body declared under more types than a client needs makes generated clients
# worse (openapi-python-client's token call under three types failed at import).
REQUEST_CONTENT_TYPES = {"auth_token": ("application/json", "application/x-www-form-urlencoded")}
REQUEST_ID_PARAMETER = {
    "name": "X-Request-ID",
    "in": "header",
    "required": False,
    "description": (
        "Your own id for this request: printable and at most 128 characters, it becomes the answer's "
        "`meta.request_id` and `X-Request-ID`. Without it, or with one that is not, the service makes one (`req_` "
        "and 24 characters): never an error."
    ),
    "schema": {"type": "string"},
}


def request_postprocessing_hook(result: dict, generator, request, public) -> dict:
    """What a client sends: each body's content types (above), and the optional ``X-Request-ID`` every operation
    honours (documented on each, which also gives a generated client's calls the optional-argument type that an
    operation taking a body under two content types needs)."""
    for methods in result.get("paths", {}).values():
        for operation in methods.values():
            if not isinstance(operation, dict) or "responses" not in operation:
                continue
            parameters = operation.setdefault("parameters", [])
            if not any(p.get("in") == "header" and p.get("name") == "X-Request-ID" for p in parameters):
                parameters.append(REQUEST_ID_PARAMETER)
            body = operation.get("requestBody")
            if not body:
                continue
            content = body["content"]
            wanted = REQUEST_CONTENT_TYPES.get(operation.get("operationId"))
            if wanted is None:
                wanted = ("application/json",) if "application/json" in content else tuple(content)
            body["content"] = {kind: content[kind] for kind in wanted}
    return result


IDEMPOTENCY_KEY_PARAMETER = {
    "name": idempotency.HEADER,
    "in": "header",
    "required": False,
    "description": (
        'Makes a retry safe (see "Retries and Idempotency-Key" in the partner guide, docs/partners/idempotency.md). 1-255 printable ASCII characters; a '
        'Structured-Field string `"…"` is unquoted first. Scoped to your partner account and mode, kept 24 '
        "hours. The same key with the same method, path and body replays the first answer (2xx, 403, 404, 409, "
        "422) with `Idempotent-Replayed: true` and runs nothing again; a 400, 401, 429 or 5xx is not kept, so a "
        "corrected retry runs. While the first request runs: 409 IDEMPOTENCY_KEY_IN_USE (`Retry-After: 1`). "
        "Another request under the same key: 422 IDEMPOTENCY_KEY_MISMATCH. Malformed: 400 VALIDATION_ERROR "
        'with `field: "Idempotency-Key"`.'
    ),
    "schema": {"type": "string", "minLength": 1, "maxLength": idempotency.MAX_LENGTH, "pattern": "^[ -~]+$"},
    "example": "3f6a9c1e-5b2d-4f0a-9e7c-2d1b8a4c6e01",
}
REPLAYED_HEADER_SCHEMA = {
    "description": "`true` when this is the stored answer of an earlier request with the same Idempotency-Key.",
    "schema": {"type": "string", "enum": ["true"]},
}
RETRY_AFTER_HEADER_SCHEMA = {
    "description": "Seconds to wait before retrying (1 while the key's first request runs).",
    "schema": {"type": "integer", "minimum": 1},
}
ERROR_ENVELOPE_REF = {"$ref": "#/components/schemas/ErrorEnvelope"}
_IDEMPOTENCY_ERRORS = (errors.ValidationFailed, errors.IdempotencyKeyInUse, errors.IdempotencyKeyMismatch)


def idempotency_postprocessing_hook(result: dict, generator, request, public) -> dict:
    """Every POST with a bearer token takes ``Idempotency-Key``: the header, the replay header on the answers
    that are kept, and the 400/409/422 it can give. Applied here so that a new POST gets it without a word
    in its view."""
    for _path, methods in result.get("paths", {}).items():
        operation = methods.get("post")
        if not isinstance(operation, dict) or "responses" not in operation or not _secured(operation, result):
            continue
        parameters = operation.setdefault("parameters", [])
        if not any(p.get("in") == "header" and p.get("name") == idempotency.HEADER for p in parameters):
            parameters.append(IDEMPOTENCY_KEY_PARAMETER)
        for error_cls in _IDEMPOTENCY_ERRORS:
            status = str(error_cls.status)
            _add_error(operation, status, (error_cls,), ERROR_ENVELOPE_REF)
            response = operation["responses"][status]
            if error_cls is errors.IdempotencyKeyInUse:
                response.setdefault("headers", {})["Retry-After"] = RETRY_AFTER_HEADER_SCHEMA
        for status, response in operation["responses"].items():
            if status.isdigit() and idempotency.is_stored_status(int(status)):
                response.setdefault("headers", {})[idempotency.REPLAYED_HEADER] = REPLAYED_HEADER_SCHEMA
    return result


class AutoSchema(drf_spectacular.openapi.AutoSchema):
    """drf-spectacular's, plus a serializer's ``schema_rules``: JSON Schema keywords (``allOf``, ``anyOf``…) for
    rules across fields that OpenAPI 3.0 can state, added to the serializer's component beside its properties."""

    def _map_basic_serializer(self, serializer, direction):
        schema = super()._map_basic_serializer(serializer, direction)
        rules = getattr(serializer, "schema_rules", None)
        # A copy: the postprocessing hooks change the document in place (an enum becomes a $ref).
        return {**schema, **copy.deepcopy(rules)} if rules and direction == "request" else schema
