"""Poison mail through the real receiver (docs/operations/receiving-mail.md "Receiving mail"): a nest of 1,000 multiparts, 201
parts, NUL characters; each ends ``processed`` at once, never tried again. Junk mail never holds the in-hand
expiry, the processing holds no lock across DNS, and the decoded text goes with the raw mail."""

from __future__ import annotations

import threading
from datetime import datetime, time, timedelta
from email.utils import format_datetime

import pytest
import time_machine
from django.db import connections, transaction
from django.utils import timezone

from config.celery import app
from orders.services import orders_expire_overdue
from orders.transfers.authenticity.dns import use_resolver
from orders.transfers.decision.services import reminders
from orders.transfers.decision.services.retention import raw_purge
from orders.transfers.models import InboundMessage, TransferCase
from orders.transfers.pipeline import process
from orders.transfers.testing.simulator import sandbox_sign
from tests.transfers.e2e.conftest import PLATFORM, PLATFORM_FROM, genuine, mail_for
from tests.transfers.mailkit import inbound_message, resolver_for, sign

from .conftest import smtp_send

pytestmark = pytest.mark.django_db(transaction=True)

HEAD = (
    "From: Sandbox Tickets <transfers@sandbox.invalid>\r\nTo: {to}\r\n"
    "Subject: You've been sent 2 tickets to Skyline Festival\r\n"
    "Date: {date}\r\nMessage-ID: <{mid}@sandbox.invalid>\r\nMIME-Version: 1.0\r\n"
)


def nested(to: str, depth: int) -> bytes:
    head = (
        HEAD.format(to=to, mid=f"nest{depth}", date=format_datetime(timezone.now()))
        + 'Content-Type: multipart/mixed; boundary="b0"\r\n\r\n'
    )
    opening = "".join(
        f'--b{level}\r\nContent-Type: multipart/mixed; boundary="b{level + 1}"\r\n\r\n'
        for level in range(depth)
    )
    closing = "".join(f"--b{level}--\r\n" for level in reversed(range(depth + 1)))
    return (head + opening + f"--b{depth}\r\nContent-Type: text/plain\r\n\r\nhi\r\n" + closing).encode()


def many_parts(to: str, parts: int) -> bytes:
    head = (
        HEAD.format(to=to, mid=f"parts{parts}", date=format_datetime(timezone.now()))
        + 'Content-Type: multipart/mixed; boundary="p"\r\n\r\n'
    )
    body = "".join(f"--p\r\nContent-Type: text/plain\r\n\r\npart {n}\r\n" for n in range(parts))
    return (head + body + "--p--\r\n").encode()


def later(minutes: int = 10) -> datetime:
    return datetime.now().astimezone() + timedelta(minutes=minutes)


@pytest.mark.parametrize(
    "build,why",
    [
        (lambda to: nested(to, 1000), "nested deeper than 50 levels"),
        (lambda to: many_parts(to, 201), "more than 200 MIME parts"),
    ],
    ids=["1000 levels", "201 parts"],
)
def test_a_poison_structure_ends_processed_with_an_unparsed_case_and_is_never_tried_again(
    receiver, waiting_orders, dns, build, why
):
    order = waiting_orders()
    assert smtp_send(receiver, build(order.transfer_address), [order.transfer_address])[0] == 250

    message = InboundMessage.objects.get(order=order)
    assert (message.stage, message.outcome) == ("processed", "case")
    case = TransferCase.objects.get(order=order)
    assert case.kind == "unparsed" and why in case.summary and case.defers_expiry is False
    # The sweep never publishes it again, however late.
    assert message.pk not in reminders.messages_process_due(now=later(24 * 60))
    assert process.message_process(message_pk=message.pk) == "case"
    assert TransferCase.objects.filter(order=order).count() == 1


def test_200_parts_and_50_levels_are_still_read(receiver, waiting_orders, dns):
    order = waiting_orders()
    smtp_send(receiver, many_parts(order.transfer_address, 200), [order.transfer_address])
    other = waiting_orders()
    smtp_send(receiver, nested(other.transfer_address, 49), [other.transfer_address])  # 50 boundaries
    for o in (order, other):
        case = TransferCase.objects.get(order=o)
        # Read, and found unsigned: the structure did not stop it.
        assert case.kind == "unverified", case.summary


def test_nul_characters_are_dropped_and_the_genuine_mail_still_moves_its_order(receiver, waiting_orders, dns):
    order = waiting_orders()
    raw = mail_for(order, subject="=?utf-8?q?You've_been_sent_2_tickets_to_Sky=00line?=")
    raw = raw.replace(
        b"Content-Type: text/plain; charset=utf-8\r\n",
        b"Content-Type: text/plain; charset=utf-8\r\nContent-Transfer-Encoding: quoted-printable\r\n",
    )
    raw = raw.replace(b"Row: A\r\n", b"Row: A=00\r\n")
    assert smtp_send(receiver, sandbox_sign(raw), [order.transfer_address])[0] == 250

    message = InboundMessage.objects.get(order=order)
    assert (message.stage, message.outcome) == ("processed", "matched")
    assert "\x00" not in message.header_subject and "Skyline" in message.header_subject
    order.refresh_from_db()
    assert order.status == "ticket_received"


def test_an_unexpected_error_closes_the_message_instead_of_retrying_it(
    receiver, waiting_orders, dns, monkeypatch
):
    order = waiting_orders()

    def broken(*args, **kwargs):
        raise KeyError("a template bug")

    monkeypatch.setattr(process.platforms, "parse", broken)
    assert smtp_send(receiver, genuine(order), [order.transfer_address])[0] == 250
    message = InboundMessage.objects.get(order=order)
    assert (message.stage, message.outcome) == ("processed", "case")
    case = TransferCase.objects.get(order=order)
    assert case.kind == "unparsed" and "KeyError" in case.summary
    assert message.pk not in reminders.messages_process_due(now=later(24 * 60))


def test_a_message_whose_runs_never_finish_is_closed_after_five(waiting_orders, monkeypatch):
    order = waiting_orders()
    message = inbound_message(order, genuine(order))
    # Every run dies before it ends (a worker killed mid-run): the message is left received, leased.
    monkeypatch.setattr(process, "_process", lambda message: (_ for _ in ()).throw(SystemExit("killed")))
    moment = later(0)
    for run in range(1, process.MAX_RUNS + 1):
        moment += timedelta(minutes=3)  # each lease runs out, the sweep publishes it again
        assert message.pk in reminders.messages_process_due(now=moment)
        with time_machine.travel(moment, tick=False), pytest.raises(SystemExit):
            process.message_process(message_pk=message.pk)
        message.refresh_from_db()
        assert message.runs == run and message.stage == "received"
        with time_machine.travel(moment, tick=False):
            assert process.message_process(message_pk=message.pk) == ""  # leased meanwhile: left alone
    moment += timedelta(minutes=3)
    with time_machine.travel(moment, tick=False):
        assert process.message_process(message_pk=message.pk) == "case"
    message.refresh_from_db()
    assert message.stage == "processed"
    assert TransferCase.objects.get(order=order).kind == "unparsed"


def test_the_sweep_takes_due_messages_by_next_attempt_whatever_crowds_the_table(waiting_orders, dns):
    order = waiting_orders()
    now = later(0)
    base = dict(channel="smtp", recipient=order.transfer_address, order=order, size=1)
    leased = [
        InboundMessage(
            **base,
            sha256=f"{n:064x}",
            received_at=now - timedelta(hours=1),
            next_attempt_at=now + timedelta(minutes=2),
        )
        for n in range(250)
    ]
    InboundMessage.objects.bulk_create(leased)
    due = InboundMessage.objects.create(**base, sha256="f" * 64, received_at=now - timedelta(minutes=3))
    assert reminders.messages_process_due(now=now) == [due.pk]


def test_junk_mail_never_holds_the_in_hand_expiry_a_mismatch_does(receiver, waiting_orders, dns):
    junk_order, mismatched = waiting_orders(), waiting_orders()
    unsigned = mail_for(junk_order)  # the seller's own mail, no signature
    smtp_send(receiver, unsigned, [junk_order.transfer_address])
    smtp_send(receiver, genuine(mismatched, row="Z"), [mismatched.transfer_address])
    assert TransferCase.objects.get(order=junk_order).kind == "unverified"
    assert TransferCase.objects.get(order=mismatched).kind == "mismatch"

    day_after = datetime.combine(
        junk_order.in_hand_date + timedelta(days=1), time(12), tzinfo=junk_order.event.zone
    )
    assert day_after < junk_order.event.starts_at
    with time_machine.travel(day_after, tick=False):
        expired = orders_expire_overdue()
    assert junk_order.order_id in expired and mismatched.order_id not in expired


def test_no_lock_is_held_on_the_message_while_its_key_is_looked_up(
    receiver, waiting_orders, platform, platform_key
):
    order = waiting_orders(primary_site=PLATFORM)
    seen: list[str] = []

    class Watching:
        """The platform's key, answered only after another connection took the message's row at once."""

        inner = resolver_for(platform_key)

        def txt(self, name):
            if name.startswith(platform_key.selector + "._domainkey"):
                seen.append(_row_free())
            return self.inner.txt(name)

        def lookup(self, name, rdtype):
            return self.inner.lookup(name, rdtype)

    with use_resolver(Watching()):
        smtp_send(
            receiver, sign(mail_for(order, sender=PLATFORM_FROM), platform_key), [order.transfer_address]
        )
    assert seen and set(seen) == {"free"}
    order.refresh_from_db()
    assert order.status == "ticket_received"


def _row_free() -> str:
    result = []

    def take():
        try:
            with transaction.atomic():
                pk = InboundMessage.objects.latest("pk").pk
                InboundMessage.objects.select_for_update(nowait=True).get(pk=pk)
            result.append("free")
        except Exception as exc:  # noqa: BLE001  (the lock's error is the answer)
            result.append(f"locked: {exc.__class__.__name__}")
        finally:
            connections.close_all()

    thread = threading.Thread(target=take)
    thread.start()
    thread.join(30)
    return result[0] if result else "no answer"


def test_every_transfer_task_has_a_soft_and_a_hard_time_limit():
    import orders.transfers.tasks  # noqa: F401  (registers them)

    tasks = {name: task for name, task in app.tasks.items() if name.startswith("orders.transfers.tasks.")}
    assert len(tasks) >= 9
    for name, task in tasks.items():
        assert task.soft_time_limit and task.time_limit, name
        assert task.soft_time_limit < task.time_limit, name
    assert tasks["orders.transfers.tasks.message_process"].time_limit < process.LEASE.total_seconds()


def test_the_decoded_text_goes_with_the_raw_mail(receiver, waiting_orders, dns, settings):
    order = waiting_orders()
    smtp_send(receiver, mail_for(order, row="Secret row text"), [order.transfer_address])
    case = TransferCase.objects.get(order=order)
    assert "Secret row text" in case.details["text"]

    purge_at = later(0) + timedelta(days=settings.INBOUND_RAW_RETENTION_DAYS + 1)
    assert raw_purge(now=purge_at) == 1
    case.refresh_from_db()
    message = InboundMessage.objects.get(order=order)
    assert message.outcome == "purged" and "text" not in case.details
    assert "Secret row text" not in str(message.verdicts) and "Secret row text" not in str(case.details)
