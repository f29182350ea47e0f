"""The embedded default (`make run`) runs the periodic work in its web process, with no broker."""

import time
from decimal import Decimal

import pytest
from django.conf import settings

from config.deploy.scheduler import EmbeddedScheduler, Entry, entries_from_settings
from orders.models import Order
from payouts.models import Payout
from tests.conftest import make_partner
from tests.faults.live import Processes, database_url_of_tests, free_port, http
from tests.orders.factories import make_order

pytestmark = pytest.mark.embedded


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_scheduler_runs_each_entry_on_its_interval():
    clock = FakeClock()
    ran: list[str] = []
    scheduler = EmbeddedScheduler(
        [Entry("fast", "t.fast", 10, due=1005), Entry("slow", "t.slow", 60, due=1005)],
        run=ran.append,
        clock=clock,
    )
    assert scheduler.run_due() == []
    clock.now = 1005
    assert scheduler.run_due() == ["fast", "slow"]
    clock.now = 1014
    assert scheduler.run_due() == []
    assert scheduler.seconds_to_next() == 1
    clock.now = 1015
    assert scheduler.run_due() == ["fast"]
    clock.now = 1065
    assert scheduler.run_due() == ["fast", "slow"]
    assert ran == ["t.fast", "t.slow", "t.fast", "t.fast", "t.slow"]


def test_a_failing_task_is_logged_and_runs_again_next_interval(caplog):
    clock = FakeClock()
    calls: list[str] = []

    def run(task: str) -> None:
        calls.append(task)
        raise RuntimeError("platform down")

    scheduler = EmbeddedScheduler([Entry("x", "t.x", 30, due=1000)], run=run, clock=clock)
    assert scheduler.run_due() == ["x"]
    assert "t.x failed" in caplog.text
    clock.now = 1029
    assert scheduler.run_due() == []
    clock.now = 1030
    assert scheduler.run_due() == ["x"]
    assert calls == ["t.x", "t.x"]


def test_every_beat_entry_is_scheduled_in_the_embedded_default():
    entries = entries_from_settings(now=0.0)
    assert {e.name for e in entries} == set(settings.CELERY_BEAT_SCHEDULE)
    assert all(e.interval > 0 and e.due == settings.EMBEDDED_SCHEDULER_FIRST_DELAY_SECONDS for e in entries)


@pytest.fixture
def processes(tmp_path):
    procs = Processes(tmp_path)
    yield procs
    procs.stop_all()


@pytest.mark.django_db(transaction=True)
def test_make_run_moves_a_received_order_to_paid_on_its_own(processes):
    """The embedded web process alone (no Redis, no worker, no beat) takes an order from ticket_received to
    paid through the sandbox platform."""
    creds = make_partner()
    order = make_order(creds.partner, status="ticket_received", quantity=2, offer_price=Decimal("40.00"))
    env = {
        k: v
        for k, v in __import__("os").environ.items()
        if k not in ("DJANGO_SETTINGS_MODULE", "REDIS_URL", "DJANGO_ENV")
    }
    env.update(
        {
            "DATABASE_URL": database_url_of_tests(),
            "SECRET_KEY": settings.SECRET_KEY,
            "TOKEN_SIGNING_KEY": settings.TOKEN_SIGNING_KEY,
            "QUOTE_ENCRYPTION_KEY": settings.QUOTE_ENCRYPTION_KEY,
            "EMBEDDED_SCHEDULER_FIRST_DELAY_SECONDS": "0.5",
            "PAYOUTS_PROGRESS_INTERVAL_SECONDS": "1",
            "SANDBOX_PAYOUT_SCHEDULE_AFTER_SECONDS": "1",
            "SANDBOX_PAYOUT_PAID_AFTER_SECONDS": "2",
            "EMAIL_URL": "consolemail://",
            # The receiver make run starts beside it listens on a port of this test's own, not on 2525, which a
            # make run of the developer's (or another test run) may hold.
            "INBOUND_SMTP_LISTEN": f"127.0.0.1:{free_port()}",
        }
    )
    url = processes.web(env, config="config/deploy/gunicorn_embedded.py")
    assert http("GET", url + "/healthz").status == 200

    seen = []
    deadline = time.monotonic() + 45
    while time.monotonic() < deadline:
        order.refresh_from_db()
        if not seen or seen[-1] != order.status:
            seen.append(order.status)
        if order.status == Order.Status.PAID:
            break
        time.sleep(0.25)
    assert order.status == Order.Status.PAID, (seen, processes.started[0].output()[-3000:])
    assert Payout.objects.get(order=order).status == Payout.Status.PAID
    history = list(order.status_history.values_list("to_status", flat=True).order_by("at", "pk"))
    assert history[-3:] == list(Order.PAYOUT_PATH[1:])
