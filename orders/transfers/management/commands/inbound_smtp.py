"""``python manage.py inbound_smtp [--listen host:port]``: the SMTP receiver of transfer e-mails
(docs/operations/receiving-mail.md "Receiving mail"). Runs until SIGTERM or SIGINT, then stops taking connections and lets the
messages being stored commit and be answered (up to 20 s)."""

from __future__ import annotations

import errno
import logging
import os
import signal
import socket
import threading

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from config.deploy.exporter import start_from_settings as start_metrics_exporter
from orders.transfers.intake.smtp import TransferMailController, TransferMailHandler, parse_listen

# Test hook (tests/transfers/smtp/test_crash.py): seconds the receiver waits after a message is committed
# before it answers 250, so a test can kill it in that window. Never set in a deployment.
HOLD_AFTER_STORE_ENV = "INBOUND_SMTP_TEST_HOLD_AFTER_STORE_SECONDS"
GRACE_SECONDS = 20.0


def port_in_use(host: str, port: int) -> bool:
    with socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET) as probe:
        probe.settimeout(1.0)
        return probe.connect_ex((host, port)) == 0


class Command(BaseCommand):
    help = "Receive transfer e-mails over SMTP on INBOUND_SMTP_LISTEN (docs/operations/receiving-mail.md 'Receiving mail')."

    def add_arguments(self, parser):
        parser.add_argument("--listen", help="host:port (default: INBOUND_SMTP_LISTEN)")
        parser.add_argument("--threads", type=int, default=4, help="database threads (default 4)")

    def handle(self, *args, **options):
        listen = options["listen"] or settings.INBOUND_SMTP_LISTEN
        try:
            host, port = parse_listen(listen)
        except ValueError as exc:
            raise CommandError(f"--listen / INBOUND_SMTP_LISTEN: {exc}") from exc
        if port_in_use(host, port):
            raise CommandError(
                f"{host}:{port} is in use: another SMTP receiver (a second `make run` or `inbound_smtp`?) is "
                "listening there. Stop it, or set INBOUND_SMTP_LISTEN=host:port to another port."
            )
        # aiosmtpd logs every command of every session, addresses included: its warnings only. The receiver
        # logs one line per message itself (orders.transfers.intake.smtp).
        logging.getLogger("mail.log").setLevel(logging.WARNING)
        hold = float(os.environ.get(HOLD_AFTER_STORE_ENV) or 0)
        handler = TransferMailHandler(threads=options["threads"], hold_after_store=hold)
        controller = TransferMailController(handler, host, port)
        try:
            controller.start()
        except OSError as exc:
            if exc.errno == errno.EADDRINUSE:
                raise CommandError(f"{host}:{port} is in use: {exc}") from exc
            raise CommandError(f"cannot listen on {host}:{port}: {exc}") from exc
        except RuntimeError as exc:  # aiosmtpd reports a failed bind from its thread this way
            raise CommandError(f"cannot listen on {host}:{port}: {exc.__cause__ or exc}") from exc

        # Its own /metrics on METRICS_PORT (the Procfile sets it; config/deploy/exporter.py).
        start_metrics_exporter()
        stop = threading.Event()
        received: list[int] = []

        def on_signal(signum, _frame):
            received.append(signum)
            stop.set()

        signal.signal(signal.SIGTERM, on_signal)
        signal.signal(signal.SIGINT, on_signal)
        self.stdout.write(
            f"Receiving transfer e-mails on {host}:{port} for @{settings.ORDER_TRANSFER_ADDRESS_DOMAIN} "
            f"(SIZE {settings.INBOUND_MAX_BYTES}); SIGTERM stops."
        )
        self.stdout.flush()
        while not stop.wait(3600):
            pass
        name = signal.Signals(received[0]).name if received else "signal"
        self.stdout.write(f"{name}: no new connections; letting the messages being stored finish")
        self.stdout.flush()
        server = controller.server
        if server is not None:
            controller.loop.call_soon_threadsafe(server.close)
        handler.wait_idle(GRACE_SECONDS)
        controller.stop()
        handler.close()
        self.stdout.write("Inbound SMTP receiver stopped.")
