"""OpenAPI pieces shared by every endpoint: the envelope, the error shape, and the common error responses.

Views describe their ``data`` with a serializer and list the errors they raise with :func:`error_responses`;
the post-processing hook wraps each 2xx schema in the success envelope and adds the 401/429/500 answers
every operation can give.
"""

from collections import defaultdict

from drf_spectacular.utils import OpenApiExample, OpenApiResponse, inline_serializer
from rest_framework import serializers

from . import errors

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
            secured = operation.get("security", result.get("security")) not in (None, [], [{}])
            for status, classes in _COMMON.items():
                if status == "401" and not secured:
                    continue
                if status not in operation["responses"]:
                    operation["responses"][status] = {
                        "description": " | ".join(f"`{c.code}`" for c in classes),
                        "content": {"application/json": {"schema": error_ref}},
                    }
    components.setdefault("Meta", META_SCHEMA)
    return result
