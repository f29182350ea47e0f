"""The documented commands, run exactly as written, deliver a webhook.

Two shapes, each with real processes against the tests' PostgreSQL and Redis (DJANGO_ENV=production):
- the Procfile's lines as the file writes them (``web``, ``worker``, ``webhooks``, ``beat``), through a shell
  like a process manager runs them;
- the command-line contract: ``gunicorn config.wsgi``, ``celery -A config worker`` with no flags (it
  consumes every queue, the ``webhooks`` one included) and ``celery -A config beat``.

A partner registers an endpoint pointed at a receiver on 127.0.0.1 and asks for a ping over HTTP; the signed
delivery arrives and verifies with the secret the API showed. Beat's periodic tasks reach the worker too.
"""

from __future__ import annotations

import os
import re
import shlex
import smtplib

import pytest
import redis
from django.conf import settings
from standardwebhooks.webhooks import Webhook

from config.deploy.local import METRICS_PORTS
from orders.models import Order
from orders.transfers.decision.state import order_receive
from tests.webhooks.conftest import Receiver

from .conftest import ORDER_FORM, quote_body
from .live import BIN, ROOT, bearer_auth, free_port, http, production_env, wait_for

pytestmark = pytest.mark.django_db(transaction=True)

QUEUES = ("celery", "webhooks", "webhooks_slow")


def procfile() -> dict[str, str]:
    lines = (ROOT / "Procfile").read_text().splitlines()
    return dict(line.split(": ", 1) for line in lines if line.strip() and not line.startswith("#"))


@pytest.fixture
def broker():
    """The service's own queues on the tests' Redis db, empty before and after (the workers here consume
    them by their real names)."""
    client = redis.Redis.from_url(settings.CELERY_BROKER_URL)

    def clear() -> None:
        client.delete(*QUEUES)
        for tag, payload in client.hgetall("unacked").items():
            if any(f'"routing_key": "{name}"'.encode() in payload for name in QUEUES):
                client.hdel("unacked", tag)
                client.zrem("unacked_index", tag)

    clear()
    yield client
    clear()


@pytest.fixture
def hooks():
    """A partner's webhook endpoint: an HTTP server on 127.0.0.1 that records what it receives."""
    server = Receiver()
    server.thread.start()
    yield server
    server.server.shutdown()
    server.server.server_close()


@pytest.fixture
def shell_env():
    """What a process manager gives each line: the virtualenv's ``python``, ``celery`` and ``gunicorn``
    first on PATH, the code importable, a working directory of its own (beat writes its schedule file
    there), a short payout-progress interval so beat has something to send within seconds."""
    return production_env(
        PATH=f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}",
        PYTHONPATH=str(ROOT),
        WEBHOOK_ALLOW_HTTP="true",
        WEBHOOK_ALLOW_PRIVATE_TARGETS="true",
        PAYOUTS_PROGRESS_INTERVAL_SECONDS="2",
        CELERY_CONCURRENCY="1",
        WEBHOOK_CONCURRENCY="1",
        WEB_CONCURRENCY="1",
        WEB_THREADS="4",
        NGINX_WORKERS="1",
        HOST="127.0.0.1",
        # Each process's own /metrics on a free port (the Procfile's defaults may be taken on a shared machine).
        **{name: str(free_port()) for name in METRICS_PORTS},
    )


def start(processes, name: str, command: str, env: dict[str, str], cwd) -> object:
    """``command`` as written, run by a shell (variables such as ``${CELERY_CONCURRENCY:-4}`` expand)."""
    return processes.spawn(name, ["/bin/sh", "-c", f"exec {command}"], env, cwd=cwd)


def wait_until_serving(url: str, process) -> None:
    def answering() -> bool:
        try:
            return http("GET", url + "/healthz", timeout=2).status == 200
        except OSError:
            return False

    assert wait_for(answering, timeout=60), process.output()[-3000:]


def ping_arrives(url: str, auth: dict[str, str], hooks, workers) -> None:
    created = http(
        "POST",
        url + "/v1/webhook_endpoints",
        json_body={"url": hooks.url("/doors"), "event_types": ["order.created"]},
        headers=auth,
    )
    assert created.status == 201, created.body
    endpoint = created.body["data"]
    ping = http("POST", url + f"/v1/webhook_endpoints/{endpoint['endpoint_id']}/ping", headers=auth)
    assert ping.status == 202, ping.body

    logs = lambda: "\n".join(p.output()[-3000:] for p in workers)  # noqa: E731
    assert wait_for(lambda: len(hooks.requests) >= 1, timeout=60), logs()
    delivered = hooks.requests[0]
    assert delivered.path == "/doors"
    payload = Webhook(endpoint["secret"]).verify(delivered.body, delivered.headers)
    assert payload["type"] == "webhook.ping"
    assert payload["data"]["endpoint_id"] == endpoint["endpoint_id"]


def order_reaches_payout(url: str, auth: dict[str, str], row, workers) -> None:
    """An order placed over HTTP is confirmed by a worker (the ``celery`` queue); marked received, it
    moves on to ``payout_in_process`` when beat's payout progression (every 2 s here) runs on a worker."""
    logs = lambda: "\n".join(p.output()[-3000:] for p in workers)  # noqa: E731
    quote = http("POST", url + "/v1/quotes", json_body=quote_body(row), headers=auth)
    assert quote.status == 201, quote.body
    placed = http(
        "POST",
        url + "/v1/orders",
        form={"quote_id": quote.body["data"]["quote_id"], **ORDER_FORM},
        headers=auth,
    )
    assert placed.status == 201, placed.body
    order = Order.objects.get(order_id=placed.body["data"]["order_id"])

    def reached(status: str):
        return lambda: Order.objects.get(pk=order.pk).status == status

    assert wait_for(reached(Order.Status.AWAITING_TRANSFER), timeout=60), logs()
    order_receive(order=order, source="staff", actor="staff:doors", reason="Ticket received", accepted=True)
    assert wait_for(reached(Order.Status.PAYOUT_IN_PROCESS), timeout=60), logs()


def test_the_procfile_as_written_delivers_a_ping(processes, broker, hooks, shell_env, tmp_path, creds, row):
    """``web`` (nginx + gunicorn), ``worker``, ``webhooks`` and ``beat`` exactly as the Procfile writes them."""
    lines = procfile()
    assert set(lines) >= {"web", "worker", "webhooks", "beat"}, lines
    port = free_port()
    env = {**shell_env, "PORT": str(port), "WEB_RUNTIME_DIR": str(tmp_path / "web-runtime")}
    web = start(processes, "web", lines["web"], env, tmp_path)
    worker = start(processes, "worker", lines["worker"], env, tmp_path)
    webhooks = start(processes, "webhooks", lines["webhooks"], env, tmp_path)
    beat = start(processes, "beat", lines["beat"], env, tmp_path)
    url = f"http://127.0.0.1:{port}"
    wait_until_serving(url, web)
    auth = bearer_auth(url, creds)
    ping_arrives(url, auth, hooks, [webhooks, worker])
    # The split holds: the ping went to the webhooks worker, never to the general one.
    assert "Task orders.webhooks.tasks.delivery_attempt[" in webhooks.output(), webhooks.output()[-3000:]
    assert "Task orders.webhooks.tasks.delivery_attempt[" not in worker.output()
    order_reaches_payout(url, auth, row, [worker, beat])
    assert "Sending due task payouts-progress" in beat.output()
    assert "Task payouts.tasks.payouts_progress[" in worker.output()


def test_the_procfile_inbound_line_as_written_receives_a_transfer_email(
    processes, shell_env, tmp_path, creds, row
):
    """``inbound`` exactly as the Procfile writes it: a real SMTP session stores a message for an order waiting
    for its tickets and refuses any other address (550)."""
    from orders.transfers.models import InboundMessage
    from tests.orders.factories import make_order

    lines = procfile()
    assert lines["inbound"].endswith(" python manage.py inbound_smtp"), lines
    listen = f"127.0.0.1:{free_port()}"
    inbound = start(
        processes, "inbound", lines["inbound"], {**shell_env, "INBOUND_SMTP_LISTEN": listen}, ROOT
    )
    order = make_order(creds.partner, status="awaiting_transfer")
    host, port = listen.split(":")

    def listening() -> bool:
        try:
            smtplib.SMTP(host, int(port), timeout=2).quit()
        except OSError:
            return False
        return True

    assert wait_for(listening, timeout=60), inbound.output()[-3000:]
    raw = (
        f"From: Sandbox Tickets <transfers@sandbox.invalid>\r\nTo: {order.transfer_address}\r\n"
        "Subject: You've been sent 2 tickets to Skyline Festival\r\n\r\nTickets: 2\r\n"
    ).encode()
    with smtplib.SMTP(host, int(port), timeout=30) as client:
        assert client.sendmail("transfers@sandbox.invalid", [order.transfer_address], raw) == {}
    with smtplib.SMTP(host, int(port), timeout=30) as client:
        client.ehlo("mx.sandbox.invalid")
        assert client.mail("transfers@sandbox.invalid")[0] == 250
        assert client.rcpt(f"ord-unknown@{settings.ORDER_TRANSFER_ADDRESS_DOMAIN}")[0] == 550
    stored = InboundMessage.objects.get(recipient=order.transfer_address)
    assert (stored.channel, stored.peer, stored.order_id) == ("smtp", "127.0.0.1", order.pk)
    # Its one log line for the message names the order.
    assert wait_for(lambda: order.order_id in inbound.output(), timeout=10), inbound.output()[-3000:]
    assert order.order_id in inbound.output(), inbound.output()[-3000:]


def test_the_plain_commands_deliver_a_ping_with_one_worker_for_every_queue(
    processes, broker, hooks, shell_env, tmp_path, creds, row
):
    """``gunicorn config.wsgi``, ``celery -A config worker`` and ``celery -A config beat``, nothing added."""
    port = free_port()
    # gunicorn reads its bind address from the environment too: loopback, on a free port.
    env = {**shell_env, "GUNICORN_CMD_ARGS": f"--bind 127.0.0.1:{port}"}
    web = start(processes, "gunicorn", "gunicorn config.wsgi", env, tmp_path)
    worker = start(processes, "worker", "celery -A config worker", env, tmp_path)
    beat = start(processes, "beat", "celery -A config beat", env, tmp_path)
    url = f"http://127.0.0.1:{port}"
    wait_until_serving(url, web)
    auth = bearer_auth(url, creds)
    ping_arrives(url, auth, hooks, [worker])
    order_reaches_payout(url, auth, row, [worker, beat])
    # Its banner lists every queue it consumes.
    consumed = set(re.findall(r"\.> (\S+)\s+exchange=", worker.output()))
    assert consumed == set(QUEUES), worker.output()[:3000]


def test_the_documented_worker_commands_name_no_queue_for_the_one_worker_shape():
    """`make worker` is the plain worker; the Procfile's split names a queue on each of its workers."""
    makefile = (ROOT / "Makefile").read_text()
    recipe = makefile.split("\nworker:", 1)[1].split("\n\n", 1)[0]
    assert "celery -A config worker" in recipe and "--queues" not in recipe and "-Q" not in recipe
    lines = procfile()
    queues = {
        name: shlex.split(lines[name])[shlex.split(lines[name]).index("--queues") + 1]
        for name in ("worker", "webhooks", "webhooks_slow")
    }
    # Each names its queue by the variable config/celery.py reads, so a renamed queue keeps its worker.
    assert queues == {
        "worker": "${TASK_QUEUE:-celery}",
        "webhooks": "${WEBHOOK_QUEUE:-webhooks}",
        "webhooks_slow": "${WEBHOOK_SLOW_QUEUE:-webhooks_slow}",
    }, queues
    defaults = {re.fullmatch(r"\$\{\w+:-(\w+)\}", queue).group(1) for queue in queues.values()}
    assert defaults == set(QUEUES), queues
