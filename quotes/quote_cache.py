"""Quotes kept in Redis first: the Redis side of ``quotes.services``.

A quote made while Redis keeps quotes is written to Redis in one round trip: its copy (``qts:q:<pk>``, read by
``GET /v1/quotes/{quote_id}`` and by order creation until the row is in PostgreSQL) and its entry in the
pending list (``qts:pending``), which the batched writer copies to PostgreSQL and trims. The copy lives as long
as the quote plus ``COPY_GRACE_SECONDS``; by then the writer has long written the row.

Nothing a partner was promised lives only here: the quote's self-contained id (``quotes.codec``) proves its
price, quantity, row and expiry. What only Redis holds until the writer runs is the quote's snapshot of names
and restrictions (rebuilt from the catalog if Redis is lost) and the seller's contact (``user_metadata``).
"""

import functools
import json
import logging
import operator
import re
from collections.abc import Callable
from typing import Any

from django.db import connection
from django.db.models import CharField, DateTimeField, Field, TextField

from catalog.models import Row
from config.api.ratelimit import pipelined
from config.core import jsontext
from config.core.pending import PendingList, redis_backend
from partners.models import Partner

from .models import Quote

logger = logging.getLogger(__name__)

PENDING_KEY = "qts:pending"
FLUSH_LOCK_KEY = "qts:flush-lock"
COPY_GRACE_SECONDS = 3600

_FIELDS = list(Quote._meta.concrete_fields)


def _dumper(field) -> Callable[[Any], Any]:
    """What :func:`quote_dumps` writes of ``field``'s value: the value itself for ``None`` and JSON, else the
    field's ``value_to_string``, done without the field's own lookups: Django's is ``str`` (numbers, decimals,
    booleans, text, keys) or ``isoformat`` (instants) for every column a quote has."""
    if field.get_internal_type() == "JSONField":
        return _as_it_is
    if type(field).value_to_string is Field.value_to_string:
        return _as_text
    if type(field).value_to_string is DateTimeField.value_to_string:
        return _as_instant
    # Another kind of field writes its text its own way: it needs a dumper of its own here.
    raise TypeError(f"no dumper for {field!r}")


def _as_it_is(value):
    return value


def _as_text(value):
    return None if value is None else str(value)


def _as_instant(value):
    return None if value is None else value.isoformat()


_DUMPERS = [_dumper(field) for field in _FIELDS]
_VALUES = operator.attrgetter(*(field.attname for field in _FIELDS))


def quote_dumps(quote: Quote) -> str:
    """Every column of ``quote`` as one JSON array, in the model's field order: ``None`` and JSON as they are,
    every other value as its field's ``value_to_string`` gives it."""
    return jsontext.dumps([dump(value) for dump, value in zip(_DUMPERS, _VALUES(quote), strict=True)])


def quote_loads(raw: bytes | str) -> Quote:
    """The unsaved ``Quote`` that :func:`quote_dumps` wrote."""
    values = json.loads(raw)
    return Quote(
        **{
            field.attname: value if value is None else field.to_python(value)
            for field, value in zip(_FIELDS, values, strict=True)
        }
    )


@functools.cache
def pending_insert_sql() -> str:
    """The statement that writes entries of the pending list as :func:`quote_dumps` made them, read by
    PostgreSQL itself: one parameter, the entries as one JSON array (:func:`pending_as_json`). Each column is
    read from its position: text as it is (the column's length is checked as on any insert), JSON nested as
    it is (JSON ``null`` as SQL ``NULL``, as Django writes ``None``), every other value converted from its
    text by the column's type (without the type's modifiers, which the insert applies). An entry whose partner
    or row is gone is skipped; one whose quote is already written (by an earlier run, or by the order that
    used it first) is too."""
    quote_name = connection.ops.quote_name
    names, values = [], []
    for position, field in enumerate(_FIELDS):
        names.append(quote_name(field.column))
        if field.get_internal_type() == "JSONField":
            values.append(f"NULLIF(q.v -> {position}, 'null'::jsonb)")
        elif isinstance(field, (CharField, TextField)):
            values.append(f"q.v ->> {position}")
        else:
            cast = re.sub(r"\(.*\)", "", field.db_type(connection))
            values.append(f"(q.v ->> {position})::{cast}")
    partner = _FIELDS.index(Quote._meta.get_field("partner"))
    row = _FIELDS.index(Quote._meta.get_field("row"))
    return (
        f"INSERT INTO {quote_name(Quote._meta.db_table)} ({', '.join(names)})"  # noqa: S608 - names from the models
        f" SELECT {', '.join(values)} FROM jsonb_array_elements(%s::jsonb) AS q(v)"
        f" WHERE EXISTS (SELECT 1 FROM {quote_name(Partner._meta.db_table)} p"
        f" WHERE p.{quote_name(Partner._meta.pk.column)} = {values[partner]})"
        f" AND EXISTS (SELECT 1 FROM {quote_name(Row._meta.db_table)} r"
        f" WHERE r.{quote_name(Row._meta.pk.column)} = {values[row]})"
        " ON CONFLICT DO NOTHING"
    )


def pending_as_json(entries: list[bytes]) -> str:
    """Entries of the pending list, each one JSON array, as one JSON array of them."""
    return "[" + ",".join(entry.decode() for entry in entries) + "]"


# Drained by the batched writer (quotes.services.quotes_flush).
pending_list = PendingList(PENDING_KEY, lock_key=FLUSH_LOCK_KEY, loads=quote_loads)
quotes_pending = pending_list.read


def _copy_key(backend, pk: int) -> str:
    return backend.make_and_validate_key(f"qts:q:{pk}")


def quote_store_commands(quote: Quote) -> list[tuple]:
    """The commands that keep ``quote`` in Redis: its copy, then its entry in the pending list (the reply of
    the second is the list's length)."""
    backend = redis_backend()
    raw = quote_dumps(quote)
    copy_key = _copy_key(backend, quote.pk)
    kept = max(1, int((quote.expires_at - quote.created_at).total_seconds())) + COPY_GRACE_SECONDS
    return [("SET", copy_key, raw, "EX", kept), *pending_list.append_commands(backend, raw, ttl=kept)]


def quote_pending_add(quote: Quote) -> int:
    """Keep ``quote`` in Redis: its copy and its entry in the pending list, in one round trip. Returns the
    list's length. Raises if Redis does not answer."""
    commands = quote_store_commands(quote)
    replies = pipelined(redis_backend()._cache.get_client(commands[0][1], write=True), commands)
    return int(replies[1])


def quote_copy(pk: int) -> Quote | None:
    """Redis's copy of a quote not yet written (None if there is none, or Redis does not answer)."""
    backend = redis_backend()
    key = _copy_key(backend, pk)
    try:
        raw = backend._cache.get_client(key).get(key)
    except Exception:
        logger.warning("quote cache unreachable; the quote is rebuilt from its id")
        return None
    return None if raw is None else quote_loads(raw)
