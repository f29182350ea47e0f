"""What every endpoint shares for ``Idempotency-Key`` (docs/partners/idempotency.md "Retries and Idempotency-Key"): the header's syntax,
the request fingerprint, the outcomes that are kept, and the replay.

The records and the claim live in ``partners.idempotency`` (keys are scoped to a partner); this module knows
nothing of partners so that every app may use it.
"""

import hashlib
import json
from typing import Any

from django.core.files.uploadhandler import FileUploadHandler
from django.http import QueryDict
from rest_framework.request import Request
from rest_framework.response import Response

from . import errors
from .envelope import meta

HEADER = "Idempotency-Key"
META_KEY = "HTTP_IDEMPOTENCY_KEY"
REPLAYED_HEADER = "Idempotent-Replayed"
MAX_LENGTH = 255
RETENTION_HOURS = 24

# Outcomes that reached the domain logic are kept and replayed; a 400, 401, 429 or 5xx is not, so a
# corrected retry with the same key runs again.
STORED_ERROR_STATUSES = frozenset({403, 404, 409, 422})


def is_stored_status(status: int) -> bool:
    return 200 <= status < 300 or status in STORED_ERROR_STATUSES


def _malformed(message: str, issue: str = "invalid") -> errors.ValidationFailed:
    return errors.ValidationFailed(message, field=HEADER, issue=issue)


def _printable_ascii(value: str) -> bool:
    return all(" " <= ch <= "~" for ch in value)


def _unquote_structured_string(value: str) -> str | None:
    """The content of an RFC 8941 sf-string (``"…"`` with ``\\"`` and ``\\\\`` escapes), or None if it is not one."""
    if len(value) < 2 or value[0] != '"' or value[-1] != '"':
        return None
    out: list[str] = []
    chars = iter(value[1:-1])
    for ch in chars:
        if ch == "\\":
            escaped = next(chars, "")
            if escaped not in ('"', "\\"):
                return None
            out.append(escaped)
        elif ch == '"':
            return None
        else:
            out.append(ch)
    return "".join(out)


def parse_key(raw: str) -> str:
    """The key the client meant; 400 VALIDATION_ERROR on ``Idempotency-Key`` when it is malformed.

    A Structured-Field string is unquoted, so ``"abc"`` and ``abc`` are the same key. A value that only looks
    quoted (``"a\\q"``) is not a valid sf-string and is taken literally: it is still printable ASCII.
    """
    if not _printable_ascii(raw):
        raise _malformed("Idempotency-Key must be printable ASCII (0x20-0x7E).")
    unquoted = _unquote_structured_string(raw)
    key = raw if unquoted is None else unquoted
    if not key:
        raise _malformed("Idempotency-Key must not be empty.")
    if len(key) > MAX_LENGTH:
        raise _malformed(f"Idempotency-Key must be at most {MAX_LENGTH} characters.", "too_long")
    return key


class Sha256UploadHandler(FileUploadHandler):
    """First in the upload chain: hashes every file part as its chunks stream past, and passes them on.

    The handlers after it (the orders view's streaming PDF handler, or Django's defaults) still decide where
    the bytes go and enforce their limits; this one only keeps a running SHA-256 per file part, so the
    fingerprint never needs a second read, let alone a second copy, of the file.
    """

    def __init__(self, request=None) -> None:
        super().__init__(request)
        self.digests: list[tuple[str, str]] = []
        self._sha256 = hashlib.sha256()

    def new_file(self, field_name, *args, **kwargs) -> None:
        super().new_file(field_name, *args, **kwargs)
        self._sha256 = hashlib.sha256()

    def receive_data_chunk(self, raw_data: bytes, start: int) -> bytes:
        self._sha256.update(raw_data)
        return raw_data

    def file_complete(self, file_size: int) -> None:
        self.digests.append((self.field_name, self._sha256.hexdigest()))
        return None  # the next handler returns the file object


def request_fingerprint(request: Request) -> str:
    """SHA-256 of method, path and body: JSON as the canonical parsed object, a form as every field (in the
    order sent per name) plus the SHA-256 of each file part.

    Reads the body through DRF, with the view's own parsers and upload handlers; a body that cannot be parsed
    raises exactly the error the view would have raised.
    """
    django_request = request._request
    hasher: Sha256UploadHandler | None = None
    if (request.content_type or "").lower().startswith("multipart/form-data"):
        hasher = Sha256UploadHandler(django_request)
        django_request.upload_handlers = [hasher, *django_request.upload_handlers]
    data = request.data
    body: dict[str, Any]
    if isinstance(data, QueryDict):
        fields = request.POST
        body = {"form": {name: fields.getlist(name) for name in fields}}
        body["files"] = sorted(hasher.digests) if hasher else []
    else:
        body = {"json": data}
    canonical = json.dumps(
        {"method": request.method, "path": request.path, **body},
        sort_keys=True,
        separators=(",", ":"),
        ensure_ascii=False,
        default=str,
    )
    return hashlib.sha256(canonical.encode("utf-8", "surrogatepass")).hexdigest()


def carries_secret(payload: Any) -> bool:
    """Whether an answer shows a secret (``secret``, ``client_secret``…), which must never be kept in clear."""
    if isinstance(payload, dict):
        return any(
            (isinstance(name, str) and name.endswith("secret") and value) or carries_secret(value)
            for name, value in payload.items()
        )
    if isinstance(payload, list):
        return any(carries_secret(item) for item in payload)
    return False


def stored_payload(content: bytes) -> dict[str, Any] | None:
    """``{"data": …}`` or ``{"error": …}`` of a rendered envelope (``meta`` is made afresh on replay)."""
    try:
        body = json.loads(content)
    except ValueError:
        return None
    if not isinstance(body, dict):
        return None
    if "error" in body:
        return {"error": body["error"]}
    if "data" in body:
        return {"data": body["data"]}
    return None


class IdempotentReplay(Exception):
    """Not an error: raised before the view runs when the key already holds the finished answer to this very
    request, so that the view is skipped and the exception handler renders the stored answer."""

    def __init__(self, *, status: int, payload: dict[str, Any]) -> None:
        super().__init__(f"replay of a stored {status}")
        self.status = status
        self.payload = payload


def replay_response(replay: IdempotentReplay, request) -> Response:
    """The stored status and ``data``/``error`` unchanged, a new ``meta``, and ``Idempotent-Replayed: true``."""
    body = {"success": "error" not in replay.payload, **replay.payload, "meta": meta(request)}
    response = Response(body, status=replay.status, headers={REPLAYED_HEADER: "true"})
    response.enveloped = True
    return response
