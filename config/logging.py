"""Structured logging: every line carries the request id; production writes JSON lines."""

import contextvars
import json
import logging
from datetime import UTC, datetime

from config.core.redaction import redact_path

request_id_var: contextvars.ContextVar[str] = contextvars.ContextVar("request_id", default="-")


_default_factory = logging.getLogRecordFactory()


def _record_factory(*args, **kwargs) -> logging.LogRecord:
    record = _default_factory(*args, **kwargs)
    record.request_id = request_id_var.get()
    return record


# Every record gets the id of the request being served when it is created.
logging.setLogRecordFactory(_record_factory)


class RequestIdFilter(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        # django.request logs after the response has left the middleware; its record carries the request.
        request = getattr(record, "request", None)
        request_id = getattr(request, "request_id", None)
        if request_id:
            record.request_id = request_id
        elif not hasattr(record, "request_id"):
            record.request_id = request_id_var.get()
        return True


_STANDARD_ATTRS = set(vars(logging.makeLogRecord({}))) | {"message", "asctime", "request_id"}


def request_fields(request) -> dict[str, str]:
    """What a log line says of a request: its method and its path (never the query string)."""
    method = getattr(request, "method", None)
    path = getattr(request, "path", None)
    if not isinstance(method, str) or not isinstance(path, str):
        return {}
    return {"method": method, "path": redact_path(path)}


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        payload = {
            "ts": datetime.fromtimestamp(record.created, tz=UTC).isoformat().replace("+00:00", "Z"),
            "level": record.levelname,
            "logger": record.name,
            "request_id": getattr(record, "request_id", request_id_var.get()),
            "message": record.getMessage(),
        }
        for key, value in vars(record).items():
            if key == "request":
                # django.request's record carries the request: its method and path only. ``str(request)``
                # would write the query string, where a client may have put its token.
                payload.update(request_fields(value))
            elif key not in _STANDARD_ATTRS and not key.startswith("_"):
                payload[key] = value if isinstance(value, str | int | float | bool | None) else str(value)
        if record.exc_info:
            payload["exc_info"] = self.formatException(record.exc_info)
        return json.dumps(payload, default=str)
