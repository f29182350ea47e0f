"""The worker's database connections are reset again and again while it confirms a burst of orders: every
order is still confirmed once — one charge, one move to awaiting_transfer, one e-mail to the seller.

Production shape: a Celery worker (solo pool) reaches PostgreSQL through a TCP proxy that resets every open
connection at random moments (and refuses new ones for a moment), and sends mail to a recording SMTP server.
"""

import random
import re
import threading
from collections import Counter
from urllib.parse import urlsplit, urlunsplit

import pytest
from django.conf import settings
from rest_framework.test import APIClient

from orders.models import Order, OrderStatusHistory
from payouts.models import Charge
from payouts.sandbox.models import SandboxCharge
from tests.catalog.factories import RowFactory
from tests.conftest import issue_token
from tests.orders.factories import confirmation_mail, confirmation_mailed

from .conftest import ORDER_FORM, quote_body
from .live import TcpProxy, database_url_of_tests, production_env, wait_for

pytestmark = pytest.mark.django_db(transaction=True)

ORDERS = 30
RESETS = 50
MESSAGE_ID = re.compile(r"^Message-ID: <confirmation\.(ord_\w+)@", re.MULTILINE | re.IGNORECASE)


class Cuts:
    """The statements whose connection the proxy resets right after sending them, each ``times`` times: the
    charge's insert and the status move, the two writes the confirmation must never make twice."""

    def __init__(self, times: int) -> None:
        self.left = {pattern: times for pattern in CUT_STATEMENTS}
        self._lock = threading.Lock()

    def __call__(self, data: bytes) -> bool:
        with self._lock:
            for pattern, left in self.left.items():
                if left and pattern in data:
                    self.left[pattern] = left - 1
                    return True
        return False

    def done(self) -> bool:
        with self._lock:
            return not any(self.left.values())


CUT_STATEMENTS = (b'INSERT INTO "payouts_charge"', b'INSERT INTO "orders_orderstatushistory"')


@pytest.fixture
def db_proxy():
    db = urlsplit(database_url_of_tests())
    cuts = Cuts(times=1)
    proxy = TcpProxy((db.hostname, db.port or 5432), cut_after=cuts)
    proxy.up()
    # In clear, so that the proxy sees the statements.
    url = urlunsplit(
        db._replace(netloc=f"{db.username or 'postgres'}@127.0.0.1:{proxy.port}", query="sslmode=disable")
    )
    yield proxy, url, cuts
    proxy.down()


class Chaos:
    """Resets every connection through the proxy every 50–150 ms (and refuses connections for 20 ms), ``RESETS``
    times while the orders come in: deliveries and confirmations are cut wherever they are."""

    def __init__(self, proxy: TcpProxy) -> None:
        self.proxy = proxy
        self.resets = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        rng = random.Random(7)
        while self.resets < RESETS and not self._stop.wait(rng.uniform(0.05, 0.15)):
            self.proxy.down()
            self.resets += 1
            self._stop.wait(0.02)
            self.proxy.up()

    def __enter__(self) -> "Chaos":
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._thread.join()


# A task attempt that failed on the database and is tried again: the confirmation batch's own, or the
# delivery of the order's notifications, whose reaction queues the batch.
DATABASE_FAILURE = re.compile(
    r"(orders_confirm_batch|notifications_deliver\w*)\([^\n]*?\) failed for now \("
    r"(?:OperationalError|InterfaceError|DeliveryInterrupted\([^\n]*?(?:OperationalError|InterfaceError))"
)


def test_connection_resets_during_confirmation_confirm_every_order_once(
    processes, worker_queue, smtp, db_proxy, creds
):
    proxy, db_url_via_proxy, cuts = db_proxy
    row = RowFactory(available_quantity=ORDERS * 2)
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {issue_token(client, creds)}")
    quote_ids = []
    for _ in range(ORDERS):
        quote = client.post("/v1/quotes", quote_body(row), format="json")
        assert quote.status_code == 201, quote.content
        quote_ids.append(quote.json()["data"]["quote_id"])

    worker = processes.celery_worker(
        production_env(DATABASE_URL=db_url_via_proxy, EMAIL_URL=f"smtp://127.0.0.1:{smtp.port}"),
        queue=worker_queue,
    )
    # The resets start once the worker consumes, so they fall on the burst, not on its start-up.
    assert wait_for(lambda: " ready." in worker.output(), timeout=60), worker.output()[-3000:]
    with Chaos(proxy) as chaos:
        order_ids = []
        for quote_id in quote_ids:  # the burst: each order's confirmation is queued as it commits
            response = client.post("/v1/orders", {"quote_id": quote_id, **ORDER_FORM}, format="multipart")
            assert response.status_code == 201, response.content
            order_ids.append(response.json()["data"]["order_id"])
    # Then the confirmation's own writes are cut, each once, wherever the retries have got to.
    under_faults = wait_for(cuts.done, timeout=240)
    output = worker.output()
    assert under_faults, (cuts.left, output[:3000], output[-3000:])

    def all_confirmed() -> bool:
        confirmed = Order.objects.filter(order_id__in=order_ids, status="awaiting_transfer")
        return len(confirmation_mailed(confirmed)) == len(order_ids)

    # Retries back off from 10 s; the confirmations finish once the resets stop.
    # After the last failure a retry may wait up to 160 s (10, 20, 40, 80 s, jittered).
    if not wait_for(all_confirmed, timeout=300):
        everyone = Order.objects.filter(order_id__in=order_ids)
        mailed = confirmation_mailed(everyone)
        stuck = [order for order in everyone if order.status != "awaiting_transfer" or order.pk not in mailed]
        pytest.fail(
            "not confirmed: "
            + repr(
                [
                    (
                        order.order_id,
                        order.status,
                        order.confirmation_started_at,
                        confirmation_mail(order).claimed_at,
                        confirmation_mail(order).handed_over_at,
                    )
                    for order in stuck
                ]
            )
            + "\n"
            + worker.output()[-3000:]
        )
    output = worker.output()
    assert chaos.resets >= RESETS
    # The faults did hit the confirmation: attempts failed on the database and were retried.
    hits = [m.group(1) for m in DATABASE_FAILURE.finditer(output)]
    assert len(hits) >= 3 and "orders_confirm_batch" in hits, output[-4000:]

    orders = Order.objects.filter(order_id__in=order_ids)
    assert Charge.objects.filter(order__in=orders, status="succeeded").count() == ORDERS
    assert Charge.objects.filter(order__in=orders).count() == ORDERS
    assert SandboxCharge.objects.count() == ORDERS  # the platform saw one charge per order
    moves = Counter(
        OrderStatusHistory.objects.filter(order__in=orders, to_status="awaiting_transfer").values_list(
            "order_id", flat=True
        )
    )
    assert sorted(moves.values()) == [1] * ORDERS
    sent = Counter(MESSAGE_ID.findall("\n".join(smtp.messages)))
    assert sent == Counter({order_id: 1 for order_id in order_ids}), sent
    assert not any(confirmation_mail(order).unconfirmed for order in orders)
    assert settings.ORDER_CONFIRMATION_STALE_SECONDS <= 300  # a stall the retries miss resumes in minutes
