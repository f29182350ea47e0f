"""Response headers set as Django sets them, without its checks where a value passes them as it is.

``HttpResponse[name] = value`` encodes the name as ASCII and the value as Latin-1 (MIME-encoding one that is
not) and refuses a newline, then stores ``(name, value)`` under the lower-cased name. A value of printable
ASCII characters passes every step unchanged, so :func:`put` stores it directly; any other value takes
Django's setter, with its errors. Every API answer carries about a dozen headers: the checks of each cost
more than the rest of its setting.

:class:`ResponseHooks` runs the response hooks of the X-Frame-Options, common and security middleware for the
short path (``config.api.routes``) in the same way: what each adds, added as it adds it.
"""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse, HttpResponseBase
from django.middleware.clickjacking import XFrameOptionsMiddleware
from django.middleware.common import CommonMiddleware
from django.middleware.security import SecurityMiddleware


def put(response: HttpResponseBase, name: str, value: str) -> None:
    """``response[name] = value``. ``name`` is one of the service's own header names (ASCII)."""
    if type(value) is str and value.isascii() and value.isprintable():
        response.headers._store[name.lower()] = (name, value)
    else:
        response[name] = value


class _Probe:
    """A request as the security middleware's response hook reads it: whether it came over HTTPS."""

    def __init__(self, secure: bool) -> None:
        self.secure = secure

    def is_secure(self) -> bool:
        return self.secure


class ResponseHooks:
    """The response hooks of ``xframe``, ``common`` and ``security``, each giving what the middleware's own
    ``process_response`` gives: the same headers, in the same order, with the same values.

    - X-Frame-Options: its value read per response, as the middleware reads it (a setting, or a subclass's);
      none where the response has one or is exempt.
    - The common middleware (``config.api.middleware.CommonMiddleware``): ``Content-Length`` of a response that
      is not streamed and has none; a 404 (its redirect to the path with a slash) and a 304 (no length: the rule
      is the middleware's own) take the middleware's own hook.
    - The security middleware: its headers depend on its settings, read when it was made, and on whether the
      request came over HTTPS (``Strict-Transport-Security``); each is added only where the response has none.
      They are read once for each of the two kinds of request, from the middleware itself over an empty
      response, and kept with it.
    """

    def __init__(
        self, xframe: XFrameOptionsMiddleware, common: CommonMiddleware, security: SecurityMiddleware
    ) -> None:
        self.xframe, self.common, self.security = xframe, common, security
        self._security_entries: dict[bool, tuple[tuple[str, tuple[str, str]], ...]] = {}

    def framed(self, request: HttpRequest, response: HttpResponseBase) -> HttpResponseBase:
        if "x-frame-options" in response.headers._store or getattr(response, "xframe_options_exempt", False):
            return response
        put(response, "X-Frame-Options", self.xframe.get_xframe_options_value(request, response))
        return response

    def common_done(self, request: HttpRequest, response: HttpResponseBase) -> HttpResponseBase:
        if response.status_code in (304, 404):
            return self.common.process_response(request, response)
        if not response.streaming and "content-length" not in response.headers._store:
            response.headers._store["content-length"] = ("Content-Length", str(len(response.content)))
        return response

    def secured(self, request: HttpRequest, response: HttpResponseBase) -> HttpResponseBase:
        # The middleware asks whether the request is secure only when it would send Strict-Transport-Security.
        secure = bool(self.security.sts_seconds) and request.is_secure()
        entries = self._security_entries.get(secure)
        if entries is None:
            probe = HttpResponse()
            before = set(probe.headers._store)
            self.security.process_response(_Probe(secure), probe)
            entries = tuple((key, entry) for key, entry in probe.headers._store.items() if key not in before)
            self._security_entries[secure] = entries
        store = response.headers._store
        for key, entry in entries:
            if key not in store:
                store[key] = entry
        return response
