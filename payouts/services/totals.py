"""The partners' payout totals (``PayoutTotal``): kept by PostgreSQL's triggers on ``payouts_payout`` (migration
0021) as delta rows, folded here into one row per partner and status so that a read sums a few rows.

Triggers append rows and never change one, so writers of payouts never wait for each other on the totals; the
fold deletes the rows it saw and inserts their sums in one statement, so every snapshot sums to the same totals
before, during and after it. A delta row a writer adds meanwhile is not in the fold's snapshot: it stays and is
folded by the next run.
"""

from __future__ import annotations

from dataclasses import dataclass

from django.db import connection, transaction

# One fold at a time: a second run (a slow beat, a manual one) finds the lock taken and folds nothing. Taken by
# the fold alone, before anything else, so it adds no lock order to any other transaction.
COMPACT_LOCK_KEY = 0x706F_7474  # "pott"

# The partner's rows of a status that are more than one, or one that counts nothing: deleted and replaced by
# their sums (none when they sum to nothing).
COMPACT_SQL = """
WITH gone AS (
    DELETE FROM payouts_payouttotal
    WHERE (partner_id, status) IN (
        SELECT partner_id, status FROM payouts_payouttotal GROUP BY partner_id, status
        HAVING count(*) > 1 OR (sum(count) = 0 AND sum(amount) = 0)
    )
    RETURNING partner_id, status, count, amount
), folded AS (
    INSERT INTO payouts_payouttotal (partner_id, status, count, amount)
    SELECT partner_id, status, sum(count), sum(amount) FROM gone GROUP BY partner_id, status
    HAVING sum(count) <> 0 OR sum(amount) <> 0
    RETURNING 1
)
SELECT (SELECT count(*) FROM gone), (SELECT count(*) FROM folded)
"""

# The totals counted again from the payouts, with writes held off meanwhile (reads go on): for a database whose
# payouts were written with the triggers off (a bulk load under ``session_replication_role = replica``). After
# the fold's lock: a fold under way would write its sums beside the new totals.
REBUILD_SQL = (
    f"SELECT pg_advisory_xact_lock({COMPACT_LOCK_KEY})",
    "LOCK TABLE payouts_payout IN SHARE ROW EXCLUSIVE MODE",
    "DELETE FROM payouts_payouttotal",
    """INSERT INTO payouts_payouttotal (partner_id, status, count, amount)
    SELECT partner_id, status, count(*), sum(amount) FROM payouts_payout GROUP BY partner_id, status""",
)


@dataclass(frozen=True)
class Compaction:
    folded: int  # delta rows deleted
    written: int  # rows of their sums written in their place


def payout_totals_compact() -> Compaction | None:
    """Fold each partner's delta rows into one row per status; ``None`` when another run was folding."""
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute("SELECT pg_try_advisory_xact_lock(%s)", [COMPACT_LOCK_KEY])
        if not cursor.fetchone()[0]:
            return None
        cursor.execute(COMPACT_SQL)
        folded, written = cursor.fetchone()
    return Compaction(folded=folded, written=written)


def payout_totals_rebuild() -> None:
    """Count the totals again from the payouts (after a load that bypassed the triggers)."""
    with transaction.atomic(), connection.cursor() as cursor:
        for statement in REBUILD_SQL:
            cursor.execute(statement)
