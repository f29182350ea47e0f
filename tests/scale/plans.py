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


def plan_without_seq_scans(sql: str, params: tuple | list = ()) -> str:
    """The plan of ``sql`` when the planner avoids sequential scans wherever an index can answer instead: a
    table read sequentially all the same has no index for the statement (small test tables would otherwise be
    scanned whatever their indexes). The tables' statistics are taken first, of this test's rows: the planner's
    choice between two indexes then rests on the rows at hand, not on what earlier tests left in the tables."""
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE")
        cursor.execute("SET enable_seqscan = off")
        try:
            cursor.execute("EXPLAIN " + sql, params)
            return "\n".join(row[0] for row in cursor.fetchall())
        finally:
            cursor.execute("RESET enable_seqscan")
