"""Plain views: a busy endpoint answered without DRF's dispatch, byte for byte as its DRF view answers.

An endpoint's DRF view (``APIView``) stays: drf-spectacular documents it, and it answers every request the plain
view does not take itself. :func:`plain_view` builds the URL's view: ``answer(request)`` for the requests of
its method (POST) that ``takes(request)`` accepts, the DRF view for the rest. The plain answer uses the same
pieces as the DRF path: the JSON parser of every view (:func:`json_body`), the envelope renderer's text
(:func:`config.api.renderers.render_compact`), the exception handler (every error, its envelope, headers and log
line), and DRF's ``Allow`` header.
"""

from __future__ import annotations

import io
from collections.abc import Callable
from typing import Any

from django.conf import settings
from django.http import HttpRequest, HttpResponse
from rest_framework.views import APIView

from .envelope import success_body
from .exceptions import exception_handler
from .headers import put
from .parsers import JSONObjectParser
from .renderers import render_compact

CONTENT_TYPE = "application/json; charset=utf-8"
_parser = JSONObjectParser()


def content_length(request: HttpRequest) -> int:
    """The body's length as DRF reads it (0: no body)."""
    try:
        return int(request.META.get("CONTENT_LENGTH") or 0)
    except ValueError:
        return 0


def json_body(request: HttpRequest) -> Any:
    """The JSON body as every API view's parser reads it (config.api.parsers): its errors are the same."""
    encoding = request.encoding or settings.DEFAULT_CHARSET
    return _parser.parse(io.BytesIO(request.body), "application/json", {"encoding": encoding})


def takes_body(request: HttpRequest, media_type: str) -> bool:
    """A body of ``media_type`` the plain view reads as DRF would, and an answer DRF would render plainly: an
    ``Accept`` asking for indented JSON goes to DRF, as does a body in another media type or with no length."""
    return (
        request.content_type == media_type
        and content_length(request) > 0
        and "indent" not in request.META.get("HTTP_ACCEPT", "")
    )


def takes_json(request: HttpRequest) -> bool:
    """A JSON body, as :func:`takes_body` tells it."""
    return takes_body(request, "application/json")


class Answer:
    """What a plain view of ``drf_view_class`` answers, as its DRF view's dispatch would."""

    def __init__(self, drf_view_class: type[APIView]) -> None:
        self.view_class = drf_view_class
        view = drf_view_class()
        view.setup(HttpRequest())  # as for a request: a view that reads also answers HEAD
        self.allow = ", ".join(view.allowed_methods)
        # DRF adds it when a view has several renderers to choose from (every partner API view has one).
        self.vary = "Accept" if len(view.renderer_classes) > 1 else None

    def _finish(self, response: HttpResponse) -> HttpResponse:
        put(response, "Allow", self.allow)
        if self.vary:
            put(response, "Vary", self.vary)
        return response

    def ok(
        self, data: Any, request: HttpRequest, *, status: int = 200, headers: dict[str, str] | None = None
    ) -> HttpResponse:
        response = HttpResponse(
            render_compact(success_body(data, request)), status=status, content_type=CONTENT_TYPE
        )
        for name, value in (headers or {}).items():
            response[name] = value
        return self._finish(response)

    def failed(self, exc: Exception, request: HttpRequest, **kwargs) -> HttpResponse:
        """The exception handler's answer (its envelope, headers and log line), rendered as DRF renders it."""
        view = self.view_class()
        view.args, view.kwargs, view.request = (), kwargs, request
        handled = exception_handler(exc, {"view": view, "args": (), "kwargs": kwargs, "request": request})
        response = HttpResponse(
            render_compact(handled.data), status=handled.status_code, content_type=CONTENT_TYPE
        )
        for name, value in handled.items():
            if name.lower() != "content-type":
                response[name] = value
        return self._finish(response)


def plain_view(
    drf_view: Callable,
    takes: Callable[[HttpRequest], bool],
    answer: Callable[..., HttpResponse],
    *,
    method: str = "POST",
) -> Callable:
    """The URL's view: ``answer`` for the requests of ``method`` that ``takes`` accepts, ``drf_view``
    (``APIView.as_view()``) for the rest (every other method: 405, ``OPTIONS``)."""

    def view(request: HttpRequest, **kwargs) -> HttpResponse:
        if request.method == method and takes(request):
            return answer(request, **kwargs)
        return drf_view(request, **kwargs)

    # drf-spectacular and DRF's tooling find the view class here, as on any APIView's view.
    view.cls = drf_view.cls
    view.initkwargs = drf_view.initkwargs
    view.csrf_exempt = True
    return view
