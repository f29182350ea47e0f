"""Plain SQL for the hottest statements: inserts of single model instances (token sessions, quotes, orders,
their history and notifications), and the few reads written as SQL (:class:`Select`).

``Model.save()`` compiles its INSERT anew on every call; on the write path that compile cost more CPU than
the database spent on the statement. :func:`insert` writes the same row: every concrete field's value is
prepared by the field itself (``pre_save``, so ``auto_now_add`` and defaults apply, then
``get_db_prep_save``), through Django's cursor (its error translation, its execute wrappers), with the
statement text built once per model, so that the connection prepares it like any repeated query. Model
signals are not sent: none of these models has receivers (a model with ``db_default`` values, or any
expression as a value, is saved through the ORM instead). :func:`columns`, :func:`values` and
:func:`json_row` give the same columns and prepared values to a caller that writes several rows in one
statement of its own (the order's creation on PostgreSQL, a data-modifying ``WITH``).
"""

from collections.abc import Sequence
from datetime import date, datetime, time
from decimal import Decimal
from typing import Any, NamedTuple
from uuid import UUID

from django.db import connections
from django.db.models import (
    AutoField,
    BigAutoField,
    BigIntegerField,
    BooleanField,
    CharField,
    DateTimeField,
    Field,
    ForeignKey,
    IntegerField,
    Model,
    PositiveBigIntegerField,
    PositiveIntegerField,
    PositiveSmallIntegerField,
    SmallIntegerField,
    TextField,
)

from . import jsontext


class Columns(NamedTuple):
    """What an INSERT of a model names: its table and columns (every concrete field but the database-generated
    primary key), quoted, in the order of ``fields``; ``pk`` is the primary key's column."""

    table: str
    names: str
    fields: list[Field]
    pk: str


_columns: dict[tuple[type[Model], str], Columns] = {}
_statements: dict[tuple, str] = {}
_kinds: dict[tuple[type[Model], str], tuple[list[type | None], list[Any], list[bool]]] = {}

# Fields (these exact classes, not subclasses) whose ``pre_save`` is Field's (the attribute) and whose
# ``get_db_prep_save`` gives back a value of this exact type as it is (an aware datetime for DateTimeField), or
# for an integer column, as the backend's type of that column's integers (psycopg's ``Int4`` for an
# IntegerField, as Django's ``adapt_integerfield_value`` gives it), so :func:`values` takes it without the
# field's steps. Any other value of theirs (a string in an integer field, a naive datetime, an expression) is
# prepared by the field, as every value of any other field is.
_AS_THEY_ARE: dict[type[Field], type] = {
    CharField: str,
    TextField: str,
    IntegerField: int,
    BigIntegerField: int,
    SmallIntegerField: int,
    PositiveIntegerField: int,
    PositiveBigIntegerField: int,
    PositiveSmallIntegerField: int,
    AutoField: int,
    BigAutoField: int,
    BooleanField: bool,
}


def _kind(field: Field, using: str) -> tuple[type | None, Any]:
    """The type of value ``field`` takes as it is, and what it then wraps such a value in (``None``: nothing)."""
    if type(field) is ForeignKey:
        return _kind(field.target_field, using)
    if type(field) is DateTimeField and not (field.auto_now or field.auto_now_add):
        return datetime, None
    kind = _AS_THEY_ARE.get(type(field))
    if kind is not int or type(field) in (AutoField, BigAutoField):  # an auto field's value is not wrapped
        return kind, None
    wrap = getattr(connections[using].ops, "integerfield_type_map", {}).get(field.get_internal_type())
    return (int, wrap) if wrap is not None else (None, None)


def _field_kinds(model: type[Model], using: str) -> tuple[list[type | None], list[Any], list[bool]]:
    """Per insert column: the type of value it takes as it is (``None``: every value is prepared), what it
    wraps it in, and whether it is a JSON column (built once per model and database)."""
    found = _kinds.get((model, using))
    if found is None:
        fields = columns(model, using=using).fields
        kinds = [_kind(f, using) for f in fields]
        found = _kinds[(model, using)] = (
            [kind for kind, _wrap in kinds],
            [wrap for _kind, wrap in kinds],
            [f.get_internal_type() == "JSONField" for f in fields],
        )
    return found


def columns(model: type[Model], *, using: str = "default") -> Columns:
    """The model's insert columns (built once per model and database)."""
    found = _columns.get((model, using))
    if found is None:
        meta = model._meta
        quote = connections[using].ops.quote_name
        fields = [f for f in meta.local_concrete_fields if f is not meta.auto_field]
        found = _columns[(model, using)] = Columns(
            quote(meta.db_table), ", ".join(quote(f.column) for f in fields), fields, quote(meta.pk.column)
        )
    return found


def _json_scalar(value: Any) -> Any:
    # What a prepared value is in JSON: PostgreSQL reads each back through its column type's input.
    if isinstance(value, datetime | date | time):
        return value.isoformat()
    if isinstance(value, Decimal | UUID):
        return str(value)
    raise TypeError(f"{type(value).__name__} has no JSON form")


def json_row(obj: Model, *, using: str = "default", with_pk: bool = False) -> str | None:
    """``obj``'s insert values (:func:`values`) as one JSON object keyed by column, for a statement that reads
    them back with PostgreSQL's ``jsonb_populate_record(NULL::<table>, %s::jsonb)``: one parameter per row
    instead of one per column (a statement of a few rows keeps few parameters, so the driver converts its text
    once per process, not per call). A JSON column's value is nested as it is. ``None`` when a value is an
    expression. ``with_pk``: the primary key too, for a row whose key the caller chose."""
    fields = columns(type(obj), using=using).fields
    prepared = values(obj, using=using)
    if prepared is None:
        return None
    _kinds_of, _wraps, is_json = _field_kinds(type(obj), using)
    row = {
        f.column: getattr(obj, f.attname) if json else value
        for f, json, value in zip(fields, is_json, prepared, strict=True)
    }
    if with_pk:
        row[obj._meta.pk.column] = obj.pk
    return jsontext.dumps(row, default=_json_scalar)


def values(obj: Model, *, using: str = "default") -> list[Any] | None:
    """The parameters that insert ``obj``, in the order of :func:`columns`, each prepared by its field
    (``pre_save``, so ``auto_now_add`` and defaults apply, then ``get_db_prep_save``); ``None`` when a value
    is an expression, which only the ORM can save. A value those two steps would give back unchanged (a string
    of a ``CharField``, an aware datetime of a ``DateTimeField``: ``_AS_THEY_ARE``) is taken as it is."""
    fields = columns(type(obj), using=using).fields
    kinds, wraps, _json = _field_kinds(type(obj), using)
    raw = [
        f.pre_save(obj, True) if kind is None else getattr(obj, f.attname)
        for f, kind in zip(fields, kinds, strict=True)
    ]
    to_prepare = []
    for i, (f, kind, wrap, value) in enumerate(zip(fields, kinds, wraps, raw, strict=True)):
        if kind is not None:
            if value is None:
                if f.null:
                    continue
            elif type(value) is kind and (kind is not datetime or value.tzinfo is not None):
                if wrap is not None:
                    raw[i] = wrap(value)
                continue
        if hasattr(value, "resolve_expression"):
            return None
        to_prepare.append(i)
    if to_prepare:
        connection = connections[using]
        for i in to_prepare:
            raw[i] = fields[i].get_db_prep_save(raw[i], connection)
    return raw


def saved(obj: Model, pk: Any, *, using: str = "default") -> Model:
    """Mark ``obj`` as the row just inserted under ``pk``."""
    setattr(obj, obj._meta.pk.attname, pk)
    obj._state.adding = False
    obj._state.db = using
    return obj


def insert(obj: Model, *, using: str = "default", with_pk: bool = False) -> Model:
    """INSERT ``obj`` (a new instance with a database-generated primary key, or with the one it holds when
    ``with_pk``); sets its pk and returns it."""
    model = type(obj)
    params = values(obj, using=using)
    if params is None:
        obj.save(force_insert=True, using=using)
        return obj
    connection = connections[using]
    sql = _statements.get((model, using, with_pk))
    if sql is None:
        table, names, fields, pk = columns(model, using=using)
        if with_pk:
            names = f"{pk}, {names}"
        placeholders = ", ".join(["%s"] * (len(fields) + with_pk))
        # Names from the model's metadata, every value a parameter.
        sql = f"INSERT INTO {table} ({names}) VALUES ({placeholders}) RETURNING {pk}"  # noqa: S608
        _statements[(model, using, with_pk)] = sql
    if with_pk:
        params = [obj.pk, *params]
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        (pk,) = cursor.fetchone()
    return saved(obj, pk, using=using)


def insert_many(
    objs: Sequence[Model], *, using: str = "default", ignore_conflicts: bool = False
) -> list[Model]:
    """INSERT ``objs`` (new instances of one model, their primary keys made by the database) in one statement,
    as ``bulk_create`` does, and return them. Their values (:func:`json_row`) go as one JSON array that
    PostgreSQL reads back with ``jsonb_populate_recordset``: one parameter, where ``bulk_create`` sends an
    array per column that the driver builds value by value. The rows are inserted in the order of ``objs`` and
    each gets its primary key from ``RETURNING``, in that order, as ``bulk_create`` gives them on PostgreSQL.
    ``ignore_conflicts``: a row that conflicts is skipped (``ON CONFLICT DO NOTHING``) and no instance gets its
    key, as with ``bulk_create``. A value that is an expression sends the whole batch through ``bulk_create``."""
    if not objs:
        return []
    model = type(objs[0])
    rows = [json_row(obj, using=using) for obj in objs]
    if None in rows:
        return model._default_manager.using(using).bulk_create(objs, ignore_conflicts=ignore_conflicts)
    key = (model, using, "many", ignore_conflicts)
    sql = _statements.get(key)
    if sql is None:
        table, names, _fields, pk = columns(model, using=using)
        # Names from the model's metadata, every value in the one parameter.
        sql = (
            f"INSERT INTO {table} ({names}) SELECT {names}"  # noqa: S608
            f" FROM jsonb_populate_recordset(NULL::{table}, %s::jsonb) WITH ORDINALITY ORDER BY ordinality"
            + (" ON CONFLICT DO NOTHING" if ignore_conflicts else f" RETURNING {pk}")
        )
        _statements[key] = sql
    with connections[using].cursor() as cursor:
        cursor.execute(sql, ["[" + ",".join(rows) + "]"])
        if ignore_conflicts:
            for obj in objs:
                obj._state.adding, obj._state.db = False, using
            return list(objs)
        pks = [pk for (pk,) in cursor.fetchall()]
    if len(pks) != len(objs):
        raise RuntimeError(f"{len(objs)} rows inserted, {len(pks)} keys returned")
    for obj, pk in zip(objs, pks, strict=True):
        saved(obj, pk, using=using)
    return list(objs)


class Select:
    """A SELECT written in SQL whose every column is a model field's, answering what the ORM would.

    The database driver alone answers in its own types (JSON as text, for one). Each column goes through the
    converters the ORM applies to that field (the backend's ``get_db_converters`` for the column, then the
    field's own ``from_db_value``), so the rows hold aware datetimes in UTC, ``Decimal``, ``bool``, ``UUID``
    and decoded JSON. The converters are looked up once per statement and connection; a column that needs
    none (all but JSON) costs nothing per row.

    ``sql`` names the columns in the order of ``fields``; values are passed as parameters.
    """

    __slots__ = ("_converters", "fields", "sql")

    def __init__(self, sql: str, fields: Sequence[Field]) -> None:
        self.sql = sql
        self.fields = tuple(fields)
        self._converters: dict[str, list[tuple[int, list, Any]]] = {}

    def _converters_for(self, connection) -> list[tuple[int, list, Any]]:
        key = connection.alias
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


def update_many(objs: Sequence[Model], fields: Sequence[str], *, using: str = "default") -> int:
    """Write ``fields`` of every instance of ``objs`` (one model, saved rows) in one statement; returns the rows
    updated.

    ``QuerySet.bulk_update`` writes the same thing as ``CASE WHEN pk = … THEN …`` per field and row, whose
    expressions cost more CPU to build than the database spends on them. This is one
    ``UPDATE … FROM (VALUES …)``, each value prepared by its field and cast to its column's type.
    """
    if not objs:
        return 0
    model = type(objs[0])
    connection = connections[using]
    meta = model._meta
    quote = connection.ops.quote_name
    columns = [meta.pk, *(meta.get_field(name) for name in fields)]
    row = "(" + ", ".join(["%s"] * len(columns)) + ")"
    assignments = ", ".join(
        f"{quote(f.column)} = CAST(v.{quote(f.column)} AS {f.cast_db_type(connection)})" for f in columns[1:]
    )
    names = ", ".join(quote(f.column) for f in columns)
    pk = quote(meta.pk.column)
    sql = (
        f"UPDATE {quote(meta.db_table)} SET {assignments} "  # noqa: S608  (names from the model's metadata)
        f"FROM (VALUES {', '.join([row] * len(objs))}) AS v({names}) "
        f"WHERE {quote(meta.db_table)}.{pk} = CAST(v.{pk} AS {meta.pk.cast_db_type(connection)})"
    )
    params = [f.get_db_prep_save(getattr(obj, f.attname), connection) for obj in objs for f in columns]
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return cursor.rowcount
