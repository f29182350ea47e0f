"""Raw mail is kept ``INBOUND_RAW_RETENTION_DAYS`` (docs/operations/receiving-mail.md "Retention and privacy"): then its
stored file goes (once no message within the retention still names it) and the row stays, verdicts kept."""

from __future__ import annotations

from datetime import timedelta

import pytest
import time_machine
from django.core.files.storage import default_storage
from django.utils import timezone

from config.settings_parts.beat import beat_schedule
from orders.transfers import tasks
from orders.transfers.decision.services.retention import raw_purge
from orders.transfers.intake.selectors import raw_read
from orders.transfers.intake.services import message_receive
from orders.transfers.models import InboundMessage

from .conftest import awaiting_order

pytestmark = pytest.mark.django_db


def _mail(subject: str, *to: str) -> bytes:
    return (
        f"From: Sandbox Tickets <transfers@sandbox.invalid>\r\nTo: {', '.join(to)}\r\nSubject: {subject}\r\n"
        "Date: Thu, 25 Nov 2021 05:00:00 +0000\r\nMessage-ID: <x@sandbox.invalid>\r\n\r\nEvent: Skyline\r\n"
    ).encode()


def _receive(raw: bytes, *orders, when) -> list[InboundMessage]:
    with time_machine.travel(when, tick=False):
        received = message_receive(raw, recipients=[o.transfer_address for o in orders], channel="smtp")
    rows = [r.message for r in received]
    for row in rows:
        InboundMessage.objects.filter(pk=row.pk).update(
            verdicts={"auth": {"dkim": "pass"}}, outcome=InboundMessage.Outcome.MATCHED
        )
    return rows


def test_raw_mail_past_the_retention_is_deleted_and_the_rows_keep_their_verdicts(partner, settings):
    assert settings.INBOUND_RAW_RETENTION_DAYS == 180
    now = timezone.now()
    first, second = awaiting_order(partner), awaiting_order(partner)
    old = now - timedelta(days=181)
    (alone,) = _receive(_mail("Alone", first.transfer_address), first, when=old)
    shared_old, shared_recent = (
        *_receive(_mail("Shared", first.transfer_address, second.transfer_address), first, when=old),
        *_receive(_mail("Shared", first.transfer_address, second.transfer_address), second, when=now),
    )
    (recent,) = _receive(_mail("Recent", first.transfer_address), first, when=now - timedelta(days=179))
    assert shared_old.raw.name == shared_recent.raw.name  # one stored copy for both

    with time_machine.travel(now, tick=False):
        assert raw_purge(batch=1) == 2  # batch of one: every batch commits on its own

    alone.refresh_from_db()
    shared_old.refresh_from_db()
    assert (alone.raw.name, alone.outcome) == ("", "purged")
    assert alone.verdicts["auth"] == {"dkim": "pass"}
    assert alone.verdicts["retention"]["outcome"] == "matched"
    assert raw_read(alone) is None and raw_read(shared_old) is None
    assert not default_storage.exists(f"inbound/{alone.sha256[:2]}/{alone.sha256}.eml")
    # The copy a message within the retention still names stays, and so do the recent ones.
    assert default_storage.exists(shared_recent.raw.name)
    assert raw_read(shared_recent).startswith(b"From: Sandbox Tickets")
    assert raw_read(InboundMessage.objects.get(pk=recent.pk)) is not None
    assert InboundMessage.objects.count() == 4

    with time_machine.travel(now, tick=False):
        assert raw_purge() == 0  # nothing left to purge: a second run changes nothing
    with time_machine.travel(now + timedelta(days=181), tick=False):
        assert tasks.raw_purge.delay().get() == 2
    shared_recent.refresh_from_db()
    assert shared_recent.outcome == "purged"
    assert not default_storage.exists(f"inbound/{shared_old.sha256[:2]}/{shared_old.sha256}.eml")
    assert InboundMessage.objects.count() == 4


def test_the_purge_runs_on_the_beat_schedule():
    entries = beat_schedule(payouts_progress_seconds=10.0).values()
    assert {"task": "orders.transfers.tasks.raw_purge", "schedule": 3600.0} in entries
