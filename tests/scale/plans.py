"""What the scale tests share: the statements a page ran and the plan PostgreSQL would take for one of them."""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from django.db import connection
from django.test.utils import CaptureQueriesContext

T = TypeVar("T")


def statements_of(run: Callable[[], T]) -> tuple[T, list[str]]:
    """What ``run()`` returned and the statements it ran."""
    with CaptureQueriesContext(connection) as captured:
        result = run()
    return result, [query["sql"] for query in captured.captured_queries]


def on_table(statements: list[str], table: str) -> list[str]:
    """The SELECTs that read ``table``, as their main table or in a subquery."""
    return [sql for sql in statements if sql.startswith("SELECT") and f'FROM "{table}"' in sql]


def _plan(sql: str, params: tuple | list, *, off: tuple[str, ...]) -> str:
    """The plan of ``sql`` with the planner's ``enable_<kind>`` settings of ``off`` turned off for it."""
    with connection.cursor() as cursor:
        for kind in off:
            cursor.execute(f"SET enable_{kind} = off")
        try:
            cursor.execute("EXPLAIN " + sql, params)
            return "\n".join(row[0] for row in cursor.fetchall())
        finally:
            for kind in off:
                cursor.execute(f"RESET enable_{kind}")


def plan_without_seq_scans(sql: str, params: tuple | list = ()) -> str:
    """The plan of ``sql`` when the planner avoids sequential scans wherever an index can answer instead: a
    table read sequentially all the same has no index for the statement (small test tables would otherwise be
    scanned whatever their indexes)."""
    return _plan(sql, params, off=("seqscan",))


def plan_from_indexes_alone(sql: str, params: tuple | list = ()) -> str:
    """The plan of ``sql`` when the planner may read tables only through index-only scans: a table it still reads
    (a sequential scan at a prohibitive cost) has no index that holds every column the statement needs. Which of
    two usable indexes the planner prefers on a test's few rows is its guess; whether one covers is not."""
    return _plan(sql, params, off=("seqscan", "indexscan", "bitmapscan"))
