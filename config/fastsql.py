"""Plain-SQL inserts of single model instances, for the hottest writes (token sessions, quotes, orders,
their history and notifications).

``Model.save()`` compiles its INSERT anew on every call; on the write path that compile cost more CPU than
the database spent on the statement. :func:`insert` writes the same row: every concrete field's value is
prepared by the field itself (``pre_save``, so ``auto_now_add`` and defaults apply, then
``get_db_prep_save``), through Django's cursor (its error translation, its execute wrappers), with the
statement text built once per model, so that the connection prepares it like any repeated query. Model
signals are not sent: none of these models has receivers (a model with ``db_default`` values, or any
expression as a value, is saved through the ORM instead).
"""

from typing import Any

from django.db import connections
from django.db.models import Model

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
