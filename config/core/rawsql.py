"""Plain SQL for the hottest statements: inserts of single model instances (token sessions, quotes, orders,
their history and notifications), and the few reads written as SQL (:class:`Select`).

``Model.save()`` compiles its INSERT anew on every call; on the write path that compile cost more CPU than
the database spent on the statement. :func:`insert` writes the same row: every concrete field's value is
prepared by the field itself (``pre_save``, so ``auto_now_add`` and defaults apply, then
``get_db_prep_save``), through Django's cursor (its error translation, its execute wrappers), with the
statement text built once per model, so that the connection prepares it like any repeated query. Model
signals are not sent: none of these models has receivers (a model with ``db_default`` values, or any
expression as a value, is saved through the ORM instead).
"""

from collections.abc import Sequence
from typing import Any

from django.db import connections
from django.db.models import Field, Model

_statements: dict[type[Model], tuple[str, list[Any]]] = {}


def _statement(model: type[Model], using: str) -> tuple[str, list[Any]]:
    found = _statements.get(model)
    if found is None:
        meta = model._meta
        quote = connections[using].ops.quote_name
        fields = [f for f in meta.local_concrete_fields if f is not meta.auto_field]
        # Names from the model's metadata, every value a parameter.
        table, columns = quote(meta.db_table), ", ".join(quote(f.column) for f in fields)
        placeholders, pk = ", ".join(["%s"] * len(fields)), quote(meta.pk.column)
        sql = f"INSERT INTO {table} ({columns}) VALUES ({placeholders}) RETURNING {pk}"  # noqa: S608
        found = _statements[model] = (sql, fields)
    return found


def insert(obj: Model, *, using: str = "default") -> Model:
    """INSERT ``obj`` (a new instance with a database-generated primary key); sets its pk and returns it."""
    model = type(obj)
    sql, fields = _statement(model, using)
    connection = connections[using]
    values = [f.pre_save(obj, True) for f in fields]
    if any(hasattr(value, "resolve_expression") for value in values):
        obj.save(force_insert=True, using=using)
        return obj
    params = [f.get_db_prep_save(value, connection) for f, value in zip(fields, values, strict=True)]
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        (pk,) = cursor.fetchone()
    setattr(obj, model._meta.pk.attname, pk)
    obj._state.adding = False
    obj._state.db = using
    return obj


class Select:
    """A SELECT written in SQL whose every column is a model field's, answering what the ORM would.

    The database driver alone answers in its own types: SQLite (the embedded default) gives a datetime as
    a naive value or a string, a decimal as a float or a string, a boolean as 0 or 1, a UUID as hex and
    JSON as text. Each column goes through the converters the ORM applies to that field on the current
    backend (the backend's ``get_db_converters`` for the column, then the field's own ``from_db_value``),
    so both databases answer aware datetimes in UTC, ``Decimal``, ``bool``, ``UUID`` and decoded JSON.
    The converters are looked up once per statement and backend; a column that needs none (on PostgreSQL,
    all but JSON) costs nothing per row.

    ``sql`` names the columns in the order of ``fields``; values are passed as parameters.
    """

    __slots__ = ("_converters", "fields", "sql")

    def __init__(self, sql: str, fields: Sequence[Field]) -> None:
        self.sql = sql
        self.fields = tuple(fields)
        self._converters: dict[tuple[str, str], list[tuple[int, list, Any]]] = {}

    def _converters_for(self, connection) -> list[tuple[int, list, Any]]:
        key = (connection.alias, connection.vendor)
        found = self._converters.get(key)
        if found is None:
            found = []
            for position, field in enumerate(self.fields):
                column = field.get_col(field.model._meta.db_table)
                converters = connection.ops.get_db_converters(column) + column.get_db_converters(connection)
                if converters:
                    found.append((position, converters, column))
            self._converters[key] = found
        return found

    def _convert(self, row: tuple, converters: list[tuple[int, list, Any]], connection) -> tuple:
        if not converters:
            return row
        values = list(row)
        for position, functions, column in converters:
            value = values[position]
            for function in functions:
                value = function(value, column, connection)
            values[position] = value
        return tuple(values)

    def fetchone(self, params: Sequence[Any], *, using: str = "default") -> tuple | None:
        """The first row (converted), or None."""
        connection = connections[using]
        with connection.cursor() as cursor:
            cursor.execute(self.sql, params)
            row = cursor.fetchone()
        if row is None:
            return None
        return self._convert(row, self._converters_for(connection), connection)

    def fetchall(self, params: Sequence[Any], *, using: str = "default") -> list[tuple]:
        """Every row (converted)."""
        connection = connections[using]
        with connection.cursor() as cursor:
            cursor.execute(self.sql, params)
            rows = cursor.fetchall()
        converters = self._converters_for(connection)
        return [self._convert(row, converters, connection) for row in rows]
