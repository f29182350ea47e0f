"""The corpus through the whole pipeline: every captured e-mail of ``tests/fixtures/transfer_mail/sandbox``
is addressed to a real order made through the API for the fixture's event (its To, Date and Message-ID
rewritten, as the platform would send it now), signed with the sandbox key, handed to the intake and
processed after its commit. What it does to the order is the decision the corpus expects of it
(``make transfer-corpus`` measures reading and matching alone), and no mismatch is ever received."""

import json
import re
import secrets
from datetime import datetime, timedelta
from email.utils import format_datetime
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest
from django.utils import timezone

from catalog.services import local_event_date
from orders.models import Order
from orders.transfers.models import InboundMessage
from orders.transfers.testing.simulator import sandbox_sign
from tests.catalog.factories import EventFactory, RowFactory, SectionFactory, VenueFactory
from tests.testmode.conftest import api_order

from .conftest import deliver, open_cases

S, TS, Outcome = Order.Status, Order.TransferState, InboundMessage.Outcome
pytestmark = pytest.mark.django_db

CORPUS = Path(__file__).resolve().parents[2] / "fixtures" / "transfer_mail" / "sandbox"
FIXTURES = sorted(CORPUS.glob("*.eml"))


def _two_weeks_before_the_first_event() -> datetime:
    """The corpus was captured for real events on real dates: its orders are made, and its mail arrives, on a
    clock two weeks before the earliest of them, whatever day the suite runs on."""
    starts = [
        datetime.strptime(meta["order"]["starts_at_local"], "%Y-%m-%d %H:%M").replace(
            tzinfo=ZoneInfo(meta["order"].get("timezone", "America/New_York"))
        )
        for meta in (json.loads(eml.with_suffix(".json").read_text(encoding="utf-8")) for eml in FIXTURES)
    ]
    return min(starts) - timedelta(days=14)


@pytest.fixture(autouse=True)
def _clock_of_the_corpus(time_machine):
    time_machine.move_to(_two_weeks_before_the_first_event())


def corpus_order(shop, spec: dict) -> Order:
    """A confirmed test order of ``spec``'s event, section and row, made through the API."""
    zone = ZoneInfo(spec.get("timezone", "America/New_York"))
    starts = datetime.strptime(spec["starts_at_local"], "%Y-%m-%d %H:%M").replace(tzinfo=zone)
    venue = VenueFactory(name=spec["venue"], timezone=zone.key)
    event = EventFactory(
        name=spec["event"],
        venue=venue,
        starts_at=starts,
        timezone=zone.key,
        event_date=local_event_date(starts_at=starts, tz_name=zone.key),
    )
    section = SectionFactory(
        event=event,
        name=spec["section_name"],
        name_display=spec["section_name_display"],
        general_admission=spec.get("general_admission", False),
    )
    row = RowFactory(section=section, name=spec["row_name"], name_display=spec["row_name_display"])
    with shop.capture(execute=True):
        data = api_order(shop.test, row, quantity=spec["quantity"])
    order = Order.objects.select_related("event__venue").get(order_id=data["order_id"])
    assert order.status == S.AWAITING_TRANSFER
    return order


def addressed(eml: bytes, order: Order) -> bytes:
    """The captured message as the platform sends it to ``order`` now (CRLF, as received over SMTP)."""
    head, _, body = eml.replace(b"\r\n", b"\n").partition(b"\n\n")
    fresh = {
        b"To": order.transfer_address.encode(),
        b"Date": format_datetime(timezone.now()).encode(),
        b"Message-ID": f"<{secrets.token_hex(12)}@sandbox.invalid>".encode(),
    }
    for name, value in fresh.items():
        head, count = re.subn(rb"(?mi)^" + name + rb":.*$", name + b": " + value, head)
        assert count == 1, name
    return sandbox_sign((head + b"\n\n" + body).replace(b"\n", b"\r\n"))


def test_the_corpus_through_the_pipeline_gives_each_fixtures_decision(shop):
    orders: dict[str, Order] = {}
    results = []
    for eml in FIXTURES:
        meta = json.loads(eml.with_suffix(".json").read_text(encoding="utf-8"))
        series = meta.get("series", eml.stem)
        if series not in orders:
            orders[series] = corpus_order(shop, meta["order"])
        order = orders[series]
        message = deliver(addressed(eml.read_bytes(), order), order, shop.capture)
        order.refresh_from_db()
        results.append((eml.name, meta["truth"], meta["expected"]["decision"], message, order))

    for name, truth, decision, message, order in results:
        assert message.authentic is True, (name, message.verdicts["auth"]["failures"])
        assert message.stage == InboundMessage.Stage.PROCESSED, name
    for name, truth, decision, message, order in results:
        got = (
            message.outcome,
            message.verdicts["decision"].get("action"),
            message.verdicts["decision"].get("case"),
        )
        if decision == "received":
            assert message.outcome == Outcome.MATCHED, (name, got)
        elif decision == "partial":
            assert message.outcome == Outcome.PARTIAL, (name, got)
        elif decision in ("mismatch", "unparsed"):
            assert (message.outcome, message.verdicts["decision"]["case"]) == (Outcome.CASE, decision), (
                name,
                got,
            )
        elif decision == "transfer_accepted":
            assert message.kind == decision and message.outcome == Outcome.IGNORED, (name, got)
        else:
            assert message.kind == decision and message.outcome == Outcome.RECALLED, (name, got)

    final = {name: order for name, _t, _d, _m, order in results}
    for name, truth, decision, _message, _order in results:
        order = Order.objects.get(pk=final[name].pk)
        if decision == "received":
            assert (order.status, order.transfer.state) == (S.TICKET_RECEIVED, TS.DETECTED), name
            assert order.transfer.quantity_detected == order.quantity and open_cases(order) == []
        elif decision == "mismatch":
            assert (order.status, order.transfer.state) == (S.AWAITING_TRANSFER, TS.MISMATCH), name
            assert open_cases(order) == ["mismatch"]
        elif decision == "unparsed":
            assert (order.status, order.transfer.state) == (S.AWAITING_TRANSFER, TS.NONE), name
            assert open_cases(order) == ["unparsed"]
        elif decision in ("transfer_accepted", "transfer_canceled"):
            # A notice with no transfer before it moves nothing.
            assert (order.status, order.transfer.state) == (S.AWAITING_TRANSFER, TS.NONE), name
    # A person reads a mismatch: the service never received one automatically.
    wrongly = [
        n
        for n, truth, _d, m, _o in results
        if truth == "mismatch" and m.outcome in (Outcome.MATCHED, Outcome.PARTIAL)
    ]
    assert wrongly == [] and sum(1 for r in results if r[1] == "mismatch") >= 3
    assert len(results) == len(FIXTURES) >= 20
