"""Admin lists that cost the same at a million rows as at ten thousand.

``LargeTableAdmin`` (mixed into a model admin) changes three things of Django's change list:

- the row count: exact while the planner expects fewer than ``EXACT_COUNT_BELOW`` rows, otherwise the
  planner's estimate, which the pager shows as "about N" (``EstimatedCountPaginator``); the unfiltered total
  beside a filtered count is not counted at all;
- the search: each term matches the ``exact_search`` lookups whole (identifiers and addresses pasted from an
  e-mail, each backed by an index), or a row whose related object (``related_search``: a small table, such as
  partners or events) matches it; the related objects are looked up first, so the big table is read through
  its indexes, never scanned for a fragment across joins;
- no date hierarchy (its first level is a DISTINCT over every row): the date list filter remains.

``RelatedWithRowsFilter`` lists the related objects (partners, events) that have rows, asking each through the
foreign key's index, where Django's ``RelatedOnlyFieldListFilter`` reads the DISTINCT of every row.
"""

from __future__ import annotations

import json
from functools import cached_property

from django.contrib import admin
from django.core.paginator import Paginator
from django.db import connections
from django.db.models import Exists, OuterRef, Q, QuerySet
from django.utils.text import smart_split, unescape_string_literal

# Below this many rows (as the planner expects them) the list counts them exactly.
EXACT_COUNT_BELOW = 10_000
# The related objects a fragment may name, at most: a term matching more is not a search for one of them.
RELATED_MATCHES_MAX = 500


def planner_rows(queryset: QuerySet) -> int | None:
    """The number of rows the database's planner expects ``queryset`` to return (no row is read)."""
    compiler = queryset.query.get_compiler(queryset.db)
    try:
        sql, params = compiler.as_sql()
    except Exception:  # an empty result (EmptyResultSet) or a query the planner cannot take alone
        return None
    connection = connections[queryset.db]
    with connection.cursor() as cursor:
        cursor.execute("EXPLAIN (FORMAT JSON) " + sql, params)
        plan = cursor.fetchone()[0]
    plan = json.loads(plan) if isinstance(plan, str) else plan
    return int(plan[0]["Plan"]["Plan Rows"])


class EstimatedCountPaginator(Paginator):
    """A paginator that counts exactly only lists expected to be short; ``estimated`` tells the pager."""

    estimated = False

    @cached_property
    def count(self) -> int:
        expected = planner_rows(self.object_list) if isinstance(self.object_list, QuerySet) else None
        if expected is None or expected < EXACT_COUNT_BELOW:
            return super().count
        self.estimated = True
        return expected


def _term(raw: str) -> str:
    if raw[:1] in ("'", '"') and raw[-1:] == raw[:1] and len(raw) > 1:
        return unescape_string_literal(raw)
    return raw


class LargeTableAdmin:
    """Mixed into a ``ModelAdmin`` of a table that grows without bound (see the module's docstring)."""

    show_full_result_count = False
    paginator = EstimatedCountPaginator
    date_hierarchy = None
    # Lookups matched to a whole search term, e.g. "order_id", "seller_email__iexact"; each needs an index.
    exact_search: tuple[str, ...] = ()
    # A relation (a path of foreign keys) to the lookups its small table is searched with, e.g.
    # {"partner": ("name__icontains", "public_id")}: rows whose related object matches.
    related_search: dict[str, tuple[str, ...]] = {}

    def get_search_results(self, request, queryset: QuerySet, search_term: str) -> tuple[QuerySet, bool]:
        for term in (_term(raw) for raw in smart_split(search_term)):
            if not term:
                continue
            matches = Q()
            for lookup in self.exact_search:
                matches |= Q(**{lookup: term})
            for path, lookups in self.related_search.items():
                ids = self._related_ids(path, lookups, term)
                if ids:
                    matches |= Q(**{f"{path}__in": ids})
            queryset = queryset.filter(matches) if matches else queryset.none()
        return queryset, False

    def _related_ids(self, path: str, lookups: tuple[str, ...], term: str) -> list[int]:
        model = self.model
        for name in path.split("__"):
            model = model._meta.get_field(name).related_model
        condition = Q()
        for lookup in lookups:
            condition |= Q(**{lookup: term})
        return list(
            model._default_manager.filter(condition).values_list("pk", flat=True)[:RELATED_MATCHES_MAX]
        )


class RelatedWithRowsFilter(admin.RelatedOnlyFieldListFilter):
    """A foreign key's filter offering the related objects that have at least one row: one EXISTS per related
    object, answered by the foreign key's index."""

    def field_choices(self, field, request, model_admin):
        rows = model_admin.get_queryset(request).filter(**{field.name: OuterRef("pk")})
        ordering = self.field_admin_ordering(field, request, model_admin)
        return field.get_choices(include_blank=False, limit_choices_to=Q(Exists(rows)), ordering=ordering)
