"""The partners' payout totals kept by the database (``PayoutTotal``, payouts.services.totals): after every kind
of write on payouts, and while payouts move under a running compaction, they equal the payouts summed up."""

import re
import threading
from decimal import Decimal

import pytest
from django.db import connection, transaction
from django.db.migrations.executor import MigrationExecutor
from django.db.models import Count, Sum

from payouts.models import Payout, PayoutTotal
from payouts.selectors import payout_totals
from payouts.services.progression import payout_transition
from payouts.services.totals import payout_totals_compact, payout_totals_rebuild
from payouts.tasks import payout_totals_compact as compact_task
from tests.orders.factories import make_order
from tests.portal.exports_data import payout_on

P = Payout.Status
ACTOR = "staff:test"


def summed(partner_pk: int) -> dict[str, tuple[int, Decimal]]:
    """The partner's payouts counted and summed per status, from the payouts themselves."""
    return {
        row["status"]: (row["n"], row["total"])
        for row in Payout.objects.filter(partner_id=partner_pk)
        .values("status")
        .annotate(n=Count("*"), total=Sum("amount"))
    }


def kept(partner_pk: int) -> dict[str, tuple[int, Decimal]]:
    """The same from the totals the database keeps (statuses that count nothing left out)."""
    rows = (
        PayoutTotal.objects.filter(partner_id=partner_pk)
        .values("status")
        .annotate(n=Sum("count"), total=Sum("amount"))
    )
    return {row["status"]: (row["n"], row["total"]) for row in rows if row["n"] or row["total"]}


def assert_kept(partner_pk: int) -> None:
    assert kept(partner_pk) == summed(partner_pk)
    plain = summed(partner_pk)
    totals = payout_totals(partner_pk=partner_pk)
    assert totals.paid == plain.get(P.PAID, (0, Decimal("0.00")))[1]
    assert totals.failed == plain.get(P.FAILED, (0, 0))[0]
    assert totals.in_flight == sum(
        (plain.get(s, (0, Decimal("0.00")))[1] for s in Payout.IN_FLIGHT_STATUSES), 0
    )


@pytest.mark.django_db
def test_the_totals_follow_every_write_on_payouts(two_partners, ready_portal, other_portal):
    mine, theirs = (order.payout for order in two_partners)
    partners = (ready_portal.partner.pk, other_portal.partner.pk)
    for partner_pk in partners:
        assert_kept(partner_pk)
    # Created through progression, then along the platform's path to paid, and failed after it was paid.
    mine = payout_transition(payout=mine, to=P.SCHEDULED, actor=ACTOR)
    assert_kept(ready_portal.partner.pk)
    mine = payout_transition(payout=mine, to=P.PAID, actor=ACTOR)
    assert_kept(ready_portal.partner.pk)
    mine = payout_transition(
        payout=mine, to=P.FAILED, actor=ACTOR, changes={"failure_reason": "account_closed"}
    )
    assert_kept(ready_portal.partner.pk)
    assert payout_totals(partner_pk=ready_portal.partner.pk).failed == 1
    # Back to pending as staff retry it, more payouts, an amount changed, a write that moves no total.
    mine = payout_transition(payout=mine, to=P.PENDING, actor=ACTOR)
    more = [payout_on(make_order(ready_portal.partner, status="paid")) for _ in range(3)]
    Payout.objects.filter(pk=more[0].pk).update(amount=Decimal("12.34"))
    rows = PayoutTotal.objects.count()
    Payout.objects.filter(partner_id=ready_portal.partner.pk).update(last_error="checked")
    assert PayoutTotal.objects.count() == rows
    assert_kept(ready_portal.partner.pk)
    # One statement over both partners' payouts, a partner changed, deletes.
    Payout.objects.filter(pk__in=[more[1].pk, theirs.pk]).update(status=P.FAILED)
    for partner_pk in partners:
        assert_kept(partner_pk)
    Payout.objects.filter(pk=more[2].pk).update(partner_id=other_portal.partner.pk, amount=Decimal("1.00"))
    for partner_pk in partners:
        assert_kept(partner_pk)
    Payout.objects.filter(pk__in=[more[0].pk, more[2].pk]).delete()
    for partner_pk in partners:
        assert_kept(partner_pk)
    # A compaction: one row per partner and status, the same totals.
    before = {partner_pk: kept(partner_pk) for partner_pk in partners}
    outcome = payout_totals_compact()
    assert outcome.folded > outcome.written > 0
    for partner_pk in partners:
        assert kept(partner_pk) == before[partner_pk]
        assert_kept(partner_pk)
        per_status = PayoutTotal.objects.filter(partner_id=partner_pk).values("status").annotate(n=Count("*"))
        assert {row["n"] for row in per_status} == {1}
    assert payout_totals_compact().folded == 0  # nothing left to fold
    # The rebuild (after a load with the triggers off) counts the same.
    payout_totals_rebuild()
    for partner_pk in partners:
        assert kept(partner_pk) == before[partner_pk]


@pytest.mark.django_db
def test_the_beat_compacts_the_totals(ready_portal, settings):
    assert settings.CELERY_BEAT_SCHEDULE["payouts-compact-totals"]["task"] == compact_task.name
    assert 0 < compact_task.soft_time_limit < compact_task.time_limit
    for _ in range(2):
        payout_on(make_order(ready_portal.partner, status="paid"))
    assert PayoutTotal.objects.filter(partner_id=ready_portal.partner.pk).count() == 2
    assert compact_task.delay().get() == {"folded": 2, "written": 1}
    assert PayoutTotal.objects.filter(partner_id=ready_portal.partner.pk).count() == 1
    assert_kept(ready_portal.partner.pk)


@pytest.mark.django_db(transaction=True)
def test_payouts_moving_while_the_totals_are_compacted_stay_counted(ready_portal):
    """Two writers walk their payouts of one partner round the payout's cycle (paid → failed → pending …), a
    third reads totals and payouts in one snapshot, and compactions run throughout (PostgreSQL, real threads)."""
    partner_pk = ready_portal.partner.pk
    payouts = [payout_on(make_order(ready_portal.partner, status="paid"), status=P.PENDING) for _ in range(6)]
    cycle = (P.IN_PROCESS, P.SCHEDULED, P.PAID, P.FAILED, P.PENDING)
    rounds = 4
    barrier = threading.Barrier(4)
    writers_done = threading.Event()
    errors: list[BaseException] = []
    compactions: list[object] = []
    snapshots: list[bool] = []

    def writer(mine: list[Payout]) -> None:
        try:
            barrier.wait()
            for _ in range(rounds):
                for to in cycle:
                    for payout in mine:
                        with transaction.atomic():
                            payout_transition(payout=payout, to=to, actor=ACTOR)
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)
        finally:
            connection.close()

    def compactor() -> None:
        try:
            barrier.wait()
            while not writers_done.is_set():
                compactions.append(payout_totals_compact())
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)
        finally:
            connection.close()

    def reader() -> None:
        try:
            barrier.wait()
            while not writers_done.is_set():
                with transaction.atomic():
                    with connection.cursor() as cursor:
                        cursor.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
                    snapshots.append(kept(partner_pk) == summed(partner_pk))
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)
        finally:
            connection.close()

    writers = [threading.Thread(target=writer, args=(payouts[i::2],)) for i in range(2)]
    others = [threading.Thread(target=compactor), threading.Thread(target=reader)]
    for thread in writers + others:
        thread.start()
    for thread in writers:
        thread.join()
    writers_done.set()
    for thread in others:
        thread.join()
    assert not errors, errors
    assert snapshots and all(snapshots)
    assert [c for c in compactions if c is not None and c.folded]  # some ran while payouts moved
    assert summed(partner_pk) == {P.PENDING: (6, sum((p.amount for p in payouts), Decimal("0.00")))}
    assert_kept(partner_pk)
    payout_totals_compact()
    assert list(PayoutTotal.objects.filter(partner_id=partner_pk).values_list("status", "count")) == [
        (P.PENDING, 6)
    ]


@pytest.mark.django_db(transaction=True)
def test_the_migration_counts_the_payouts_already_there_and_its_reverse_drops_the_totals(ready_portal):
    partner_pk = ready_portal.partner.pk
    for status in (P.PAID, P.PAID, P.FAILED):
        payout_on(make_order(ready_portal.partner, status="paid"), status=status)
    executor = MigrationExecutor(connection)
    latest = executor.loader.graph.leaf_nodes()
    executor.migrate([("payouts", "0020_staff_groups_mail_once")])
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT to_regclass('payouts_payouttotal')")
            assert cursor.fetchone() == (None,)
            cursor.execute("SELECT count(*) FROM pg_trigger WHERE tgname LIKE 'payout_totals_%%'")
            assert cursor.fetchone() == (0,)
        Payout.objects.filter(partner_id=partner_pk, status=P.FAILED).update(status=P.PENDING)
    finally:
        executor = MigrationExecutor(connection)
        executor.migrate(latest)
    assert kept(partner_pk) == summed(partner_pk)
    assert set(summed(partner_pk)) == {P.PAID, P.PENDING}
    assert PayoutTotal.objects.filter(partner_id=partner_pk).count() == 2


def stats(content: bytes) -> dict[str, str]:
    """The figures of a portal page's stat boxes, by label."""
    found = re.findall(r'<div class="label">([^<]+)</div><div class="value">([^<]+)</div>', content.decode())
    return dict(found)


@pytest.mark.django_db
def test_the_payouts_page_and_the_dashboard_show_the_payouts_summed_up(ready_portal, other_portal):
    amounts = {
        P.PAID: "100.00",
        P.FAILED: "7.50",
        P.IN_PROCESS: "20.00",
        P.SCHEDULED: "30.25",
        P.PENDING: "1.00",
    }
    for status, amount in [*amounts.items(), (P.PAID, "1000.00"), (P.FAILED, "2.50")]:
        payout_on(make_order(ready_portal.partner, status="paid"), status=status, amount=Decimal(amount))
    payout_on(make_order(other_portal.partner, status="paid"), status=P.PAID, amount=Decimal("5000.00"))
    client = ready_portal.client
    assert stats(client.get("/portal/payouts").content) == {
        "Paid out": "$1,100.00",
        "On the way": "$51.25",
        "Failed": "2",
    }
    dashboard = stats(client.get("/portal/").content)
    assert (dashboard["Payouts on the way"], dashboard["Paid out"]) == ("$51.25", "$1,100.00")
    # The bank sends a paid payout back: the figures move with it, before and after a fold.
    paid = Payout.objects.get(partner=ready_portal.partner, amount=Decimal("1000.00"))
    payout_transition(payout=paid, to=P.FAILED, actor=ACTOR)
    for fold in (False, True):
        if fold:
            payout_totals_compact()
        assert stats(client.get("/portal/payouts").content) == {
            "Paid out": "$100.00",
            "On the way": "$51.25",
            "Failed": "3",
        }
        assert stats(client.get("/portal/").content)["Paid out"] == "$100.00"
