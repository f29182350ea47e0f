"""Transfer detection's benchmark (``make bench-transfers``; bench/README.md "Transfer detection"): arrival of a
transfer e-mail to ``ticket_received``.

A fresh database with 200 test-mode orders in ``awaiting_transfer``; the SMTP receiver
(``manage.py inbound_smtp``) as its own process; 200 sandbox-signed ``match`` e-mails sent one after another
over SMTP, each to its own order, paced at ``--rate`` per second (4 by default; 0 sends them back to back,
which measures the backlog of a burst rather than a message's own latency). Latency per message: from its arrival (``InboundMessage.received_at``,
written as the DATA phase ends) to the order's ``ticket_received`` history row.

The service's one shape: PostgreSQL, Redis as broker, one Celery worker (``--concurrency 1``, or
``--concurrency N``) processing the messages.

With ``--hostile`` (the default) a second round of as many genuine e-mails to other orders runs while a
seller attacks beside them (``bench/transfers_hostile.py``): every ``HOSTILE_EVERY_SECONDS`` a 1 MB
signature flood over SMTP (refused at DATA) and the same flood handed over as a provider would (stored and
processed), a 1,000-deep MIME nest, and a sandbox-signed mobile_qr mail carrying a PDF bomb (decoded until
its child process is killed at 10 s). The genuine mails' p95 is reported with and without the attack.

And, when the ticket-file check exists (``orders.transfers.files.services.ticket_file_check``), its seconds per page
on a generated multi-page ticket PDF (p95 over 20 runs).

Usage: ``python -m bench.transfers [--messages 200] [--no-hostile]``; the driver runs itself again under the
shape's environment (``--inner``) to use the ORM there.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PY = sys.executable


def percentile(values: list[float], p: float) -> float:
    ordered = sorted(values)
    if not ordered:
        return float("nan")
    k = max(0, min(len(ordered) - 1, round(p / 100 * (len(ordered) - 1))))
    return ordered[k]


def free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def shape_env(shape: str, data_dir: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "DJANGO_SETTINGS_MODULE"}
    env.update({"PYTHONPATH": str(ROOT), "DATA_DIR": str(data_dir), "PYTHONUNBUFFERED": "1"})
    if shape == "production":
        env.update(
            {
                "DJANGO_ENV": "production",
                "DATABASE_URL": os.environ.get(
                    "BENCH_TRANSFERS_DATABASE_URL", "postgres://postgres@127.0.0.1:5432/ps_smtp_bench"
                ),
                "REDIS_URL": os.environ.get("BENCH_TRANSFERS_REDIS_URL", "redis://127.0.0.1:6379/10"),
                "SECRET_KEY": "bench-transfers-secret-key-0123456789-abcdefghijklmnopqrstuvwxyz",
                "TOKEN_SIGNING_KEY": "bench-transfers-token-key-0123456789-abcdefghijklmnopqrstuvwxyz",
                "QUOTE_ENCRYPTION_KEY": "bench-quote-encryption-key",
                "ALLOWED_HOSTS": "127.0.0.1",
                "PAYMENT_PLATFORM": "sandbox",
                "SECURE_SSL_REDIRECT": "False",
                "EMAIL_URL": "consolemail://",
                "MEDIA_SHARED": "true",  # one host
            }
        )
        env.pop("CELERY_BROKER_URL", None)
    return env


def run_shape(shape: str, messages: int, rate: float, hostile: bool = True, concurrency: int = 1) -> dict:
    data_dir = Path(tempfile.mkdtemp(prefix=f"bench-transfers-{shape}-"))
    env = shape_env(shape, data_dir)
    if shape == "production":
        from bench.stack import flush_redis, recreate_database

        recreate_database(env["DATABASE_URL"])
        flush_redis(env["REDIS_URL"])
    subprocess.run([PY, "manage.py", "migrate", "--noinput", "-v0"], cwd=ROOT, env=env, check=True)
    processes: list[subprocess.Popen] = []
    listen = f"127.0.0.1:{free_port()}"
    env["INBOUND_SMTP_LISTEN"] = listen
    logs = data_dir / "logs"
    logs.mkdir()
    try:
        if shape == "production":
            processes.append(
                subprocess.Popen(
                    [
                        PY,
                        "-m",
                        "celery",
                        "-A",
                        "config",
                        "worker",
                        "--concurrency",
                        str(concurrency),
                        "--loglevel=WARNING",
                    ],
                    cwd=ROOT,
                    env=env,
                    stdout=(logs / "worker.log").open("wb"),
                    stderr=subprocess.STDOUT,
                )
            )
        processes.append(
            subprocess.Popen(
                [PY, "manage.py", "inbound_smtp", "--listen", listen],
                cwd=ROOT,
                env=env,
                stdout=(logs / "inbound.log").open("wb"),
                stderr=subprocess.STDOUT,
            )
        )
        done = subprocess.run(
            [
                PY,
                "-m",
                "bench.transfers",
                "--inner",
                shape,
                "--messages",
                str(messages),
                "--rate",
                str(rate),
                *([] if hostile else ["--no-hostile"]),
            ],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
            check=False,
        )
        if done.returncode != 0:
            raise SystemExit(f"{shape}: {done.stderr[-4000:]}")
        return json.loads(done.stdout.strip().splitlines()[-1])
    finally:
        for process in processes:
            process.terminate()
        for process in processes:
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()


# --- inside a shape's environment -------------------------------------------------------------------------
HOSTILE_EVERY_SECONDS = 10.0
HOSTILE_TARGETS = 12  # orders the attacks are sent to (each attack its own order)


def inner(shape: str, messages: int, rate: float, hostile: bool = True) -> dict:
    import django

    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    django.setup()
    from datetime import timedelta

    from django.conf import settings

    from orders.models import Order
    from orders.services import order_create
    from orders.transfers.testing import mail_compose
    from partners import services as partner_services
    from tests.orders.factories import order_row
    from tests.quotes.factories import QuoteFactory, quote_token

    issued = partner_services.partner_create(name="Bench Transfers", contact_email="bench@transfers.example")
    partner = issued.partner
    from payouts.services.methods import payment_methods_create_sandbox

    payment_methods_create_sandbox(partner=partner)
    row = order_row(available_quantity=10_000)

    def make(count: int, delivery_type: str = "mobile_transfer") -> list:
        made = []
        for _ in range(count):
            quote = QuoteFactory(partner=partner, row=row, quantity=2, livemode=False)
            made.append(
                order_create(
                    partner_pk=partner.pk,
                    actor="partner:bench",
                    quote_id=quote_token(quote),
                    delivery_type=delivery_type,
                    is_ready_to_deliver=delivery_type == "mobile_transfer",
                    in_hand_date=quote.event.event_date - timedelta(days=7),
                    livemode=False,
                )
            )
        return made

    orders = make(messages)
    attacked = make(messages) if hostile else []
    targets = make(HOSTILE_TARGETS) if hostile else []
    bombed = make(HOSTILE_TARGETS, "mobile_qr") if hostile else []
    pks = [o.pk for o in (*orders, *attacked, *targets, *bombed)]
    deadline = time.monotonic() + 600
    while time.monotonic() < deadline:
        waiting = Order.objects.filter(pk__in=pks, status=Order.Status.AWAITING_TRANSFER).count()
        if waiting == len(pks):
            break
        time.sleep(0.5)
    else:
        raise SystemExit(f"only {waiting} of {len(pks)} orders reached awaiting_transfer")
    # The confirmations' follow-up work (notifications, the [TEST] e-mails) drains first: the messages are
    # measured on a worker that has nothing else queued.
    if shape == "production":
        import redis

        from config.celery import QUEUES

        broker = redis.Redis.from_url(settings.CELERY_BROKER_URL)
        idle_since = None
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline:
            if sum(broker.llen(q) for q in QUEUES) or broker.hlen("unacked"):
                idle_since = None
            elif idle_since is None:
                idle_since = time.monotonic()
            elif time.monotonic() - idle_since > 3:
                break
            time.sleep(0.2)
    # The receiver is up once it answers.
    host, port = mail_compose.listen_address(settings.INBOUND_SMTP_LISTEN)
    for _ in range(300):
        try:
            import smtplib

            smtplib.SMTP(host, port, timeout=2).quit()
            break
        except OSError:
            time.sleep(0.2)
    result = {"shape": shape, "messages": messages, "rate": rate or "burst", **genuine_round(orders, rate)}
    if hostile:
        import threading

        stop = threading.Event()
        attacks: dict[str, int] = {}
        attacker = threading.Thread(target=attack, args=(targets, bombed, stop, attacks), daemon=True)
        attacker.start()
        try:
            result["hostile"] = genuine_round(attacked, rate)
        finally:
            stop.set()
            attacker.join(120)
        result["hostile"]["attacks"] = attacks
    result["pdf"] = pdf_seconds_per_page(orders[0])
    return result


def genuine_round(orders: list, rate: float) -> dict:
    """Send each order its sandbox-signed ``match`` e-mail at ``rate`` per second; the latency from arrival to
    ``ticket_received``."""
    from orders.models import Order, OrderStatusHistory
    from orders.transfers.models import InboundMessage
    from orders.transfers.testing import mail_compose

    pks = [o.pk for o in orders]
    started = time.monotonic()
    for n, order in enumerate(Order.objects.filter(pk__in=pks).select_related("event__venue")):
        if rate:  # paced arrivals: the n-th message leaves at n / rate seconds
            time.sleep(max(0.0, started + n / rate - time.monotonic()))
        mail_compose.send_test_transfer(order, "match")
    sent_seconds = time.monotonic() - started
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:
        if Order.objects.filter(pk__in=pks, status=Order.Status.TICKET_RECEIVED).count() == len(pks):
            break
        time.sleep(0.5)
    latencies = []
    arrived = {m.order_id: m.received_at for m in InboundMessage.objects.filter(order_id__in=pks)}
    moved = {
        h.order_id: h.at
        for h in OrderStatusHistory.objects.filter(order_id__in=pks, to_status=Order.Status.TICKET_RECEIVED)
    }
    for pk in pks:
        if pk in arrived and pk in moved:
            latencies.append((moved[pk] - arrived[pk]).total_seconds())
    return {
        "stored": len(arrived),
        "moved": len(moved),
        "send_seconds": round(sent_seconds, 2),
        "p50": round(percentile(latencies, 50), 3) if latencies else None,
        "p95": round(percentile(latencies, 95), 3) if latencies else None,
        "max": round(max(latencies), 3) if latencies else None,
        "mean": round(statistics.mean(latencies), 3) if latencies else None,
    }


def attack(targets: list, bombed: list, stop, counts: dict) -> None:
    """A seller beside the genuine mail, every ``HOSTILE_EVERY_SECONDS`` until ``stop``: a 1 MB signature
    flood over SMTP and handed over as a provider would, a 1,000-deep MIME nest, and a PDF bomb."""
    import smtplib

    from django.db import close_old_connections

    from bench.transfers_hostile import bomb_mail, poison_nest, signature_flood
    from orders.transfers.intake import services as intake
    from orders.transfers.testing import mail_compose
    from orders.transfers.testing.simulator import sandbox_sign

    def count(name: str) -> None:
        counts[name] = counts.get(name, 0) + 1

    def send(raw: bytes, to: str, name: str) -> None:
        try:
            mail_compose.smtp_send(raw, recipient=to)
            count(name + " stored")
        except (smtplib.SMTPException, mail_compose.RecipientRefused, mail_compose.ReceiverUnavailable):
            count(name + " refused")

    n = 0
    while not stop.is_set() and n < len(targets):
        target, bomb_target = targets[n], bombed[n]
        flood = signature_flood(sandbox_sign(mail_compose.compose_sandbox_transfer(target, "match")))
        send(flood, target.transfer_address, "flood over SMTP")
        intake.message_receive(flood, recipients=[target.transfer_address], channel="postmark", peer="bench")
        count("flood from a provider")
        send(poison_nest(target.transfer_address, message_id=f"nest{n}"), target.transfer_address, "poison")
        send(sandbox_sign(bomb_mail(bomb_target.transfer_address)), bomb_target.transfer_address, "pdf bomb")
        close_old_connections()
        n += 1
        stop.wait(HOSTILE_EVERY_SECONDS)


def pdf_seconds_per_page(order) -> dict | None:
    """Seconds per page of ``ticket_file_check`` on a 4-page ticket PDF with a QR code a page (p95 of 20)."""
    try:
        from orders.transfers.files.services import ticket_file_check
    except ImportError:
        return None
    import io

    import segno
    from fpdf import FPDF

    from orders.models import Order

    pages = 4
    timings = []
    for run in range(20):
        pdf = FPDF()
        for page in range(pages):
            pdf.add_page()
            pdf.set_font("helvetica", size=14)
            pdf.cell(0, 10, f"Skyline Festival - Section Lower 101 Row A Seat {page + 1}")
            qr = io.BytesIO()
            segno.make(f"BENCH-{run}-{page}-{order.order_id}", error="m").save(qr, kind="png", scale=8)
            qr.seek(0)
            pdf.image(qr, x=60, y=40, w=90)
        data = bytes(pdf.output())
        target = Order.objects.get(pk=order.pk)
        started = time.monotonic()
        try:
            ticket_file_check(order=target, data=data, source="pdf")
        except Exception as exc:  # a verdict the bench does not care about; the timing counts
            _ = exc
        timings.append((time.monotonic() - started) / pages)
    return {
        "pages": pages,
        "p50": round(percentile(timings, 50), 3),
        "p95": round(percentile(timings, 95), 3),
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--shape", choices=("production",), default="production")
    parser.add_argument("--messages", type=int, default=200)
    parser.add_argument(
        "--rate", type=float, default=4.0, help="messages per second sent (0: all at once, one after another)"
    )
    parser.add_argument("--inner", choices=("production",))
    parser.add_argument("--concurrency", type=int, default=1, help="the production shape's worker processes")
    parser.add_argument(
        "--no-hostile", dest="hostile", action="store_false", help="leave out the round under attack"
    )
    args = parser.parse_args()
    if args.inner:
        print(json.dumps(inner(args.inner, args.messages, args.rate, args.hostile)))
        return
    shapes = (args.shape,)
    results = [run_shape(shape, args.messages, args.rate, args.hostile, args.concurrency) for shape in shapes]
    for result in results:
        print(json.dumps(result))


if __name__ == "__main__":
    main()
