"""Redis lost entirely in the middle of the partner flow: orders placed, their confirmations and notifications
queued, then the Redis server killed and replaced by an empty one (no backup, as
docs/operations/backup-and-restore.md "Backups" says). The outbox and the sweeps bring every confirmation and
every notification through: each order confirmed, each notification delivered to the partner's endpoint
exactly once."""

from __future__ import annotations

import json
import shutil
import signal
import subprocess
from collections import Counter

import pytest

from orders.models import Notification, Order
from tests.faults.conftest import ORDER_FORM, quote_body
from tests.faults.live import bearer_auth, free_port, http, real_clock_env, wait_for
from tests.webhooks.conftest import Receiver

from .shape import Host, host_env, own_queues, poll

pytestmark = pytest.mark.django_db(transaction=True)


class RedisServer:
    """A Redis server of the test's own, on a free port, that can be killed (SIGKILL: nothing saved)."""

    def __init__(self, tmp_path) -> None:
        self.port = free_port()
        self.dir = tmp_path
        self.process: subprocess.Popen | None = None

    def start(self) -> None:
        binary = shutil.which("redis-server")
        assert binary, "redis-server is not installed"
        self.process = subprocess.Popen(  # noqa: S603
            [binary, "--port", str(self.port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
             "--dir", str(self.dir)],
            stdout=subprocess.DEVNULL,
            env=real_clock_env(),  # infrastructure: on the machine's clock, like the shared Redis
        )  # fmt: skip
        import redis

        client = redis.Redis(port=self.port)
        assert wait_for(lambda: self._pings(client), timeout=20)

    @staticmethod
    def _pings(client) -> bool:
        try:
            return client.ping()
        except Exception:
            return False

    def kill(self) -> None:
        if self.process and self.process.poll() is None:
            self.process.send_signal(signal.SIGKILL)
            self.process.wait(timeout=10)

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"


@pytest.fixture
def redis_server(tmp_path):
    server = RedisServer(tmp_path)
    server.start()
    yield server
    server.kill()


@pytest.fixture
def endpoint():
    server = Receiver()
    server.thread.start()
    yield server
    server.server.shutdown()
    server.server.server_close()


def test_losing_redis_mid_flow_loses_no_confirmation_and_no_notification(
    processes, tmp_path, creds, row, redis_server, endpoint
):
    env, ports = host_env(
        "host",
        tmp_path,
        token="t",
        queues=own_queues(),
        REDIS_URL=redis_server.url,
        # The sweeps' grace periods short, so that the test waits seconds rather than minutes.
        ORDER_CONFIRMATION_GRACE_SECONDS="3",
        NOTIFICATION_DISPATCH_GRACE_SECONDS="3",
    )
    host = Host("host", processes, env, ports)
    # Only the web process at first: what it publishes waits in Redis, where the loss will take it.
    host.start(roles=("web",))
    host.wait_serving()
    url = host.url
    https = {"X-Forwarded-Proto": "https", "X-Forwarded-For": "198.51.100.7"}
    auth = bearer_auth(url, creds, https)
    hook = http("POST", url + "/v1/webhook_endpoints", json_body={"url": endpoint.url("/hooks"), "event_types": ["*"]}, headers=auth)  # fmt: skip
    assert hook.status == 201, hook.body

    def place() -> str:
        quote = http("POST", url + "/v1/quotes", json_body=quote_body(row), headers=auth)
        assert quote.status == 201, quote.body
        order = http("POST", url + "/v1/orders", form={"quote_id": quote.body["data"]["quote_id"], **ORDER_FORM}, headers=auth)  # fmt: skip
        assert order.status == 201, order.body
        return order.body["data"]["order_id"]

    before = [place() for _ in range(3)]
    # Redis dies with their confirmations and notifications queued, and comes back empty.
    redis_server.kill()
    redis_server.start()
    after = [place() for _ in range(2)]
    host.start(roles=("worker", "webhooks", "webhooks_slow", "beat"))

    def confirmed() -> bool:
        return Order.objects.filter(order_id__in=before + after, status="awaiting_transfer").count() == 5

    poll(confirmed, 150, "an order was never confirmed", host.logs)

    def delivered() -> dict[str, int]:
        return Counter(json.loads(request.body)["id"] for request in endpoint.requests)

    expected = set(
        Notification.objects.filter(partner=creds.partner).values_list("notification_id", flat=True)
    )
    poll(
        lambda: set(delivered()) >= expected,
        150,
        "a notification was never delivered",
        lambda: f"missing {expected - set(delivered())}\n{host.logs()}",
    )
    # Every order's notifications are among them (created, then confirmed), and none came twice.
    assert Notification.objects.filter(order__order_id__in=before + after).count() >= 10
    assert all(count == 1 for count in delivered().values()), delivered()
