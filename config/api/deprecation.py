"""Deprecation of a route (docs/partners/compatibility.md "Deprecations"): every answer of a route marked
deprecated, its errors included, carries ``Deprecation`` (RFC 9745: ``@`` and the Unix time it was deprecated),
once dated ``Sunset`` (RFC 8594: the HTTP date after which it may stop answering) and a ``Link`` to the changelog
entry that announced it (``rel="deprecation"``, and ``rel="sunset"`` once dated). Nothing is deprecated today;
a route is marked where it is mounted::

    path("orders/<str:order_id>/old", deprecated(OldView.as_view(), since=..., sunset=..., entry="2027-03-01"))

Only the marked route's view is wrapped, so no other request pays for it.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from django.conf import settings
from django.http import HttpRequest, HttpResponse
from django.utils.http import http_date
from django.views.decorators.http import require_safe

CHANGELOG_PATH = "/changelog"


@dataclass(frozen=True)
class Deprecation:
    since: datetime
    sunset: datetime | None = None
    entry: str = ""  # the changelog's heading that announced it (its anchor)

    def __post_init__(self) -> None:
        for instant in (self.since, self.sunset):
            if instant is not None and instant.tzinfo is None:
                raise ValueError("Deprecation and Sunset instants need a time zone (UTC)")
        if self.sunset is not None and self.sunset <= self.since:
            raise ValueError("Sunset must come after the deprecation")

    def headers(self) -> dict[str, str]:
        link = CHANGELOG_PATH + (f"#{self.entry}" if self.entry else "")
        headers = {"Deprecation": f"@{int(self.since.timestamp())}"}
        relations = ["deprecation"]
        if self.sunset is not None:
            headers["Sunset"] = http_date(self.sunset.timestamp())
            relations.append("sunset")
        headers["Link"] = ", ".join(
            f'<{link}>; rel="{relation}"; type="text/plain"' for relation in relations
        )
        return headers


def deprecated(view, *, since: datetime, sunset: datetime | None = None, entry: str = ""):
    """``view`` (a view function, e.g. ``SomeView.as_view()``) answering with the deprecation headers."""
    deprecation = Deprecation(since=since, sunset=sunset, entry=entry)
    headers = deprecation.headers()

    @functools.wraps(view)
    def wrapped(request: HttpRequest, *args, **kwargs) -> HttpResponse:
        response = view(request, *args, **kwargs)
        for name, value in headers.items():
            if name == "Link" and response.has_header("Link"):
                value = f"{response['Link']}, {value}"
            response[name] = value
        return response

    wrapped.deprecation = deprecation
    return wrapped


_HEADER_DESCRIPTIONS = {
    "Deprecation": "RFC 9745: deprecated since this instant (`@` and Unix seconds).",
    "Sunset": "RFC 8594: after this instant the operation may stop answering.",
    "Link": 'The changelog entry that announced the deprecation (`rel="deprecation"`, and `rel="sunset"`).',
}


def deprecation_postprocessing_hook(result: dict, generator, request, public) -> dict:
    """The schema says what the route says: a deprecated route's operations are ``deprecated: true``, and each of
    their answers documents the headers it carries."""
    for path, _regex, method, callback in generator.endpoints or []:
        deprecation = getattr(callback, "deprecation", None)
        operation = result.get("paths", {}).get(path, {}).get(method.lower())
        if deprecation is None or operation is None:
            continue
        operation["deprecated"] = True
        for response in operation.get("responses", {}).values():
            headers = response.setdefault("headers", {})
            for name, value in deprecation.headers().items():
                headers[name] = {
                    "schema": {"type": "string"},
                    "description": _HEADER_DESCRIPTIONS[name],
                    "example": value,
                }
    return result


@require_safe
def changelog(request: HttpRequest) -> HttpResponse:
    """The partner guide's changelog as text: what a deprecated route's ``Link`` points to."""
    text = (Path(settings.BASE_DIR) / "docs/partners/changelog.md").read_text(encoding="utf-8")
    response = HttpResponse(text, content_type="text/plain; charset=utf-8")
    response["Cache-Control"] = "public, max-age=300"
    return response
