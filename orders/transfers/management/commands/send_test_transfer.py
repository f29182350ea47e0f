"""``python manage.py send_test_transfer ORDER_ID [--variant V]``: the sandbox platform's transfer e-mail for a
test-mode order, signed and sent through the SMTP receiver (docs/partners/test-mode.md "Simulating the ticket
transfer"). The receiver must be running (``make run`` starts it; ``manage.py inbound_smtp`` otherwise)."""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError

from orders.models import Order
from orders.transfers.testing import mail_compose


class Command(BaseCommand):
    help = "Send the sandbox platform's transfer e-mail for a test-mode order through the SMTP receiver."

    def add_arguments(self, parser):
        parser.add_argument("order_id", help="A test-mode order (ord_…).")
        parser.add_argument("--variant", choices=mail_compose.VARIANTS, default="match")
        parser.add_argument("--listen", help="the receiver's host:port (default: INBOUND_SMTP_LISTEN)")

    def handle(self, *args, **options):
        order = Order.objects.select_related("event__venue").filter(order_id=options["order_id"]).first()
        if order is None:
            raise CommandError(f"No order {options['order_id']}.")
        if order.livemode:
            raise CommandError(
                f"{order.order_id} is a live order: simulated transfers are for test-mode orders only."
            )
        if order.status not in mail_compose.SIMULATE_STATUSES:
            raise CommandError(
                f"{order.order_id} is {order.status}: a transfer can be simulated while it is accepted or "
                "awaiting_transfer."
            )
        try:
            sent = mail_compose.send_test_transfer(order, options["variant"], listen=options["listen"])
        except ValueError as exc:
            raise CommandError(str(exc)) from exc
        except mail_compose.ReceiverUnavailable as exc:
            raise CommandError(
                f"{exc}. Start it (`make run` does, or `python manage.py inbound_smtp`) and try again."
            ) from exc
        except mail_compose.RecipientRefused as exc:
            raise CommandError(f"The receiver refused {order.transfer_address}: {exc}") from exc
        self.stdout.write(
            f"Sent the sandbox platform's {sent.kind} ({sent.variant}) for {sent.order_id} to "
            f"{sent.recipient} via {sent.listen}: {sent.size} bytes, Message-ID {sent.message_id}, "
            f"sha256 {sent.sha256}"
        )
