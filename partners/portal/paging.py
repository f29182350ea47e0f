"""The portal's lists, newest first, page by page through their index: "← Newer" and "Older →" carry the cursor
of the page beside (``?newer=`` or ``?older=``), so a page deep in years of orders costs what the first costs and
no page counts every row. A cursor the service did not sign, or one too long, is the first page."""

from __future__ import annotations

from django.db.models import QuerySet
from django.http import HttpRequest

from config.api.errors import ValidationFailed
from config.api.pagination import TwoWayPage, paginate_two_ways

PAGE_SIZE = 25
CURSOR_MAX_LENGTH = 512


def _cursor(request: HttpRequest, name: str) -> str | None:
    value = request.GET.get(name, "")
    return value if 0 < len(value) <= CURSOR_MAX_LENGTH else None


def portal_page_of(request: HttpRequest, queryset: QuerySet, *, ordering: tuple[str, ...]) -> TwoWayPage:
    try:
        return paginate_two_ways(
            queryset,
            ordering=ordering,
            limit=PAGE_SIZE,
            after=_cursor(request, "older"),
            before=_cursor(request, "newer"),
        )
    except ValidationFailed:
        return paginate_two_ways(queryset, ordering=ordering, limit=PAGE_SIZE)
