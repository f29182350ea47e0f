"""Credentials out of request lines: what an access log writes of a request never carries a token.

The API never reads a credential from the query string, but clients send one anyway (``?access_token=…``),
and a redirect can carry one inside another parameter (the admin's sign-in ``?next=/admin/…%3Ftoken%3D…``).
A parameter is a credential by its name, read the way a server would read it: percent-decoded (``%61ccess_
token``, ``access%5Ftoken``), any case, ``-`` or ``_``, with or without a ``[]`` suffix. A parameter whose
decoded value holds such a parameter (a URL with its own query) is redacted whole.

``RedactLogEnviron`` (config/wsgi.py) applies this to the WSGI environ once the application has answered:
gunicorn writes its access line from that environ (``%(r)s``, ``%(q)s``, ``%(U)s``, ``%(f)s``), whatever
its log format or configuration file. No Django import here: gunicorn's configuration file uses it too.
"""

from __future__ import annotations

import json
import logging
import re
import sys
import uuid
from collections.abc import Callable, Iterable, Iterator
from datetime import UTC, datetime
from urllib.parse import unquote_plus

logger = logging.getLogger("config.wsgi")

REDACTED = "[redacted]"
_NAMES = frozenset(
    {
        "access_token",
        "token",
        "refresh_token",
        "id_token",
        "auth_token",
        "client_secret",
        "secret",
        "password",
        "passwd",
        "api_key",
        "apikey",
        "key",
        "authorization",
        "bearer",
    }
)
_SUFFIXES = ("_token", "_secret", "_password", "_key")
_DECODE_ROUNDS = 4  # percent-decodings looked through (a double-encoded name is still a name)


def _decodings(text: str) -> Iterator[str]:
    """``text``, then each percent-decoding of it until nothing changes (at most a few rounds)."""
    yield text
    for _ in range(_DECODE_ROUNDS):
        decoded = unquote_plus(text)
        if decoded == text:
            return
        text = decoded
        yield text


def _is_credential_name(raw: str) -> bool:
    for name in _decodings(raw):
        name = re.sub(r"\[[^\]]*\]$", "", name.strip().lower()).replace("-", "_")
        if name in _NAMES or name.endswith(_SUFFIXES):
            return True
    return False


def carries_credential(text: str) -> bool:
    """Whether ``text`` (a query, a URL, a parameter), once decoded, holds a credential parameter."""
    for decoded in _decodings(text):
        for part in re.split(r"[?&;#]", decoded):
            name, eq, _ = part.partition("=")
            if eq and _is_credential_name(name):
                return True
    return False


def redact_query(query: str) -> str:
    """``query`` (``a=1&access_token=…``) with every credential's value replaced; the rest as it was."""
    if not query:
        return query
    parts = re.split(r"([&;])", query)
    for index in range(0, len(parts), 2):
        part = parts[index]
        name, eq, _ = part.partition("=")
        if eq and _is_credential_name(name):
            parts[index] = f"{name}={REDACTED}"
        elif carries_credential(part):
            parts[index] = f"{name}={REDACTED}" if eq and not carries_credential(name) else REDACTED
    return "".join(parts)


def redact_path(path: str) -> str:
    """A path that decodes to one with a query holding a credential (``/v1/events%3Faccess_token=…``) is
    cut where its encoded ``?`` starts."""
    if not carries_credential(path):
        return path
    cut = re.search(r"(?i)%(?:25)*3f|\?", path)
    return (path[: cut.start()] if cut else "") + "?" + REDACTED


def redact_uri(uri: str) -> str:
    """A request target or URL (``/p?q``, ``https://host/p?q#f``) with its credentials replaced."""
    path, question, query = uri.partition("?")
    if not question:
        if "=" in path and not path.startswith(("/", "http://", "https://")):
            return redact_query(path)  # a bare query string
        return redact_path(path)
    return redact_path(path) + "?" + redact_query(query)


def redact(text: str) -> str:
    """``text`` (a request line, a query string, a URL, or any log atom) with every credential value
    replaced, word by word."""
    return re.sub(r"\S+", lambda m: redact_uri(m.group()), text)


# What gunicorn reads of the environ for its access line: the request line (RAW_URI), %(U)s (PATH_INFO),
# %(q)s (QUERY_STRING) and %(f)s (HTTP_REFERER); REQUEST_URI for servers that set it.
_ENVIRON_KEYS: dict[str, Callable[[str], str]] = {
    "RAW_URI": redact_uri,
    "REQUEST_URI": redact_uri,
    "PATH_INFO": redact_path,
    "QUERY_STRING": redact_query,
    "HTTP_REFERER": redact_uri,
}


def could_carry_credential(value: str) -> bool:
    """False when ``value`` surely holds no credential parameter: no percent sign to decode, and no ``=`` or no
    part of a credential's name. The redactors answer the rest (a request's environ: about 1 µs against 11).

    Every credential name (``_NAMES``, ``_SUFFIXES``) holds one of the words below, in any case; a value
    without a percent sign decodes to itself (``+`` becomes a space), so one holding none of them holds no
    credential."""
    if "%" in value:
        return True
    if "=" not in value:
        return False  # a credential is a parameter: a name, then "="
    # Substring tests, written out: a regular expression's alternation scans about ten times slower.
    lowered = value.lower()
    return (
        "token" in lowered
        or "secret" in lowered
        or "passw" in lowered
        or "key" in lowered
        or "authorization" in lowered
        or "bearer" in lowered
    )


def redact_environ(environ: dict) -> None:
    for key, redactor in _ENVIRON_KEYS.items():
        value = environ.get(key)
        if isinstance(value, str) and value and could_carry_credential(value):
            environ[key] = redactor(value)


class RedactLogEnviron:
    """WSGI middleware: once the application has answered (its body sent), the environ's request line,
    path, query string and referer lose their credentials, before the server writes its access line.

    The application itself sees the request as sent (the admin's ``next`` must still work). A file answer
    (``wsgi.file_wrapper``, sent with sendfile) is passed on untouched; its environ is redacted at once."""

    def __init__(self, app: Callable) -> None:
        self.app = app

    def __call__(self, environ: dict, start_response: Callable) -> Iterable[bytes]:
        try:
            result = self.app(environ, start_response)
        except Exception:
            # Only when Django's own 500 handling failed. Answered here, because gunicorn would log the
            # request line it read itself (token and all) with its error page.
            redact_environ(environ)
            return _last_resort(environ, start_response)
        except BaseException:
            redact_environ(environ)
            raise
        file_wrapper = environ.get("wsgi.file_wrapper")
        if file_wrapper is not None and isinstance(result, file_wrapper):
            redact_environ(environ)
            return result
        return _RedactAfter(result, environ)


def _last_resort(environ: dict, start_response: Callable) -> list[bytes]:
    logger.error(
        "Unhandled error answering %s %s",
        environ.get("REQUEST_METHOD", "-"),
        environ.get("PATH_INFO", "-"),
        exc_info=True,
    )
    request_id = f"req_{uuid.uuid4().hex}"
    body = json.dumps(
        {
            "success": False,
            "error": {"code": "INTERNAL_ERROR", "message": "An unexpected error occurred."},
            "meta": {
                "request_id": request_id,
                "timestamp": datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z"),
            },
        }
    ).encode()
    headers = [
        ("Content-Type", "application/json"),
        ("Content-Length", str(len(body))),
        ("X-Request-ID", request_id),
    ]
    start_response("500 Internal Server Error", headers, sys.exc_info())
    return [body]


class _RedactAfter:
    """The application's iterable; the environ is redacted after its last chunk, or on close when the server
    stopped before it (once either way)."""

    def __init__(self, result: Iterable[bytes], environ: dict) -> None:
        self.result = result
        self.environ = environ
        self.redacted = False

    def _redact(self) -> None:
        if not self.redacted:
            redact_environ(self.environ)
            self.redacted = True

    def __iter__(self) -> Iterator[bytes]:
        try:
            yield from self.result
        finally:
            self._redact()

    def close(self) -> None:
        try:
            close = getattr(self.result, "close", None)
            if close is not None:
                close()
        finally:
            self._redact()
