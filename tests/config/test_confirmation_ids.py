"""docs/staff-guide.md "The admin and commands" (confirmations): each confirmation page carries an id the server
issued and recorded; the database consumes it once. Two POSTs of one page at once (a double click, a second tab)
change things once; a POST without a valid unused id (none, another staff member's, another change's, too old)
changes nothing.

Confirmations are fired twice at once in real threads, through the admin's pages, on PostgreSQL: a quantity
adjustment, a credential rotation, a refund retry (a list's action), a payout retry (a record's button), and the
other changes staff confirm (a suspension, an event's cancellation, an order's cancellation, tickets received)."""

from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta

import pytest
import time_machine
from django.contrib.admin.models import LogEntry
from django.contrib.auth import get_user_model
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from catalog.models import EventStatusHistory, RowQuantityAdjustment
from config.core import confirmation_ids
from config.core.confirmation import INVALID_MESSAGE
from config.core.models import StaffConfirmation
from orders.models import OrderStatusHistory
from partners.models import PartnerStatusHistory
from payouts.models import Charge
from payouts.sandbox.models import SandboxCard
from tests.catalog.factories import RowFactory
from tests.concurrency import all_at_once
from tests.confirming import confirmation_id_of
from tests.conftest import make_partner
from tests.orders.factories import make_order
from tests.payouts.test_admin import make_failed_payout
from tests.payouts.test_refunds import (
    REFUND_FAILS_CARD,
    cancel_order,
    charged_order,
    partner_with_card,
    set_card_behavior,
)

pytestmark = [pytest.mark.django_db(transaction=True)]
ALREADY = "This confirmation was sent already: nothing was done again."


@dataclass
class Kind:
    url: str
    data: dict  # the page's own fields (the reason and any question), without confirmed and its id
    done: Callable[[], int]  # how many times the change was made
    show: str = "post"  # how the page is reached: its button POSTs, or a GET


def _logged(obj, text: str) -> Callable[[], int]:
    return lambda: LogEntry.objects.filter(object_id=str(obj.pk), change_message__startswith=text).count()


def quantity_adjustment() -> Kind:
    row = RowFactory(available_quantity=8)
    return Kind(
        reverse("admin:catalog_row_adjust_quantity", args=[row.pk]),
        {"delta": "5", "reason": "Supplier added seats"},
        lambda: RowQuantityAdjustment.objects.filter(row=row).count(),
    )


def credential_rotation() -> Kind:
    partner = make_partner(name="Harbour Tickets").partner
    return Kind(
        reverse("admin:partners_partner_rotate", args=[partner.pk]),
        {"reason": "secret leaked in a support ticket"},
        _logged(partner, "Rotated credentials"),
        show="get",
    )


def refund_retry() -> Kind:
    creds = partner_with_card(REFUND_FAILS_CARD)
    order = charged_order(creds.partner)
    cancel_order(order)
    charge = Charge.objects.get(order=order)
    assert charge.refund_status == "failed"
    set_card_behavior(creds.partner, SandboxCard.Behavior.SUCCEED)
    return Kind(
        reverse("admin:payouts_charge_changelist"),
        {
            "action": "retry_refund_action",
            "_selected_action": [charge.pk],
            "reason": "Issuer reopened the card",
        },
        _logged(charge, "Refund retry requested"),
    )


def payout_retry() -> Kind:
    _, payout = make_failed_payout()
    return Kind(
        reverse("admin:payouts_payout_retry", args=[payout.pk]),
        {"reason": "Bank confirmed the account"},
        _logged(payout, "Retry requested"),
    )


def partner_suspension() -> Kind:
    partner = make_partner(name="Harbour Tickets").partner
    return Kind(
        reverse("admin:partners_partner_suspend", args=[partner.pk]),
        {"reason": "chargebacks under review"},
        lambda: PartnerStatusHistory.objects.filter(partner=partner, to_status="suspended").count(),
        show="get",
    )


def event_cancellation() -> Kind:
    event = RowFactory().section.event
    return Kind(
        reverse("admin:catalog_event_changelist"),
        {"action": "cancel_events", "_selected_action": [event.pk], "index": "0", "reason": "Venue closed"},
        lambda: EventStatusHistory.objects.filter(event=event, to_status="canceled").count(),
    )


def _order_status_changes(order, to: str) -> Callable[[], int]:
    return lambda: OrderStatusHistory.objects.filter(order=order, to_status=to).count()


def order_cancellation() -> Kind:
    order = make_order(make_partner(name="Harbour Tickets").partner)
    return Kind(
        reverse("admin:orders_order_cancel", args=[order.pk]),
        {"reason": "Seller asked by phone"},
        _order_status_changes(order, "canceled"),
    )


def tickets_received() -> Kind:
    order = make_order(make_partner(name="Harbour Tickets").partner, status="awaiting_transfer")
    return Kind(
        reverse("admin:orders_order_mark_received", args=[order.pk]),
        {"reason": "Arrived in the transfer account", "accepted": "no"},
        _order_status_changes(order, "ticket_received"),
    )


# Money and access first (what a double click must never do twice), then the other changes staff confirm.
KINDS = [
    quantity_adjustment,
    credential_rotation,
    refund_retry,
    payout_retry,
    partner_suspension,
    event_cancellation,
    order_cancellation,
    tickets_received,
]


def _staff(username: str = "ops") -> Client:
    user = get_user_model().objects.create_superuser(
        username, f"{username}@service.example", "admin pass 5511"
    )
    client = Client()
    client.force_login(user)
    return client


def _page(client: Client, kind: Kind) -> str:
    page = client.get(kind.url) if kind.show == "get" else client.post(kind.url, kind.data)
    confirmation_id = confirmation_id_of(page)
    assert confirmation_id, page.content[:500]
    return confirmation_id


def _said(response) -> list[str]:
    """The messages this very request gave (the tabs share a session, so a page may show the other's too)."""
    return [str(m) for m in response.wsgi_request._messages._queued_messages]


def _tab(client: Client) -> Client:
    """Another tab of the same browser: the same session."""
    tab = Client()
    tab.cookies = client.cookies
    return tab


@pytest.mark.parametrize("kind", KINDS, ids=lambda k: k.__name__)
def test_one_confirmation_posted_twice_at_once_changes_things_once(kind):
    case = kind()
    client = _staff()
    sent = {**case.data, "confirmed": "yes", "confirmation_id": _page(client, case)}
    tabs = [_tab(client), _tab(client)]  # a double click, or two tabs: one session
    answers = all_at_once([lambda tab=tab: tab.post(case.url, sent) for tab in tabs])
    assert [a.status_code for a in answers] == [302, 302]
    assert case.done() == 1
    assert sorted(ALREADY in _said(a) for a in answers) == [False, True]
    # The page staff land on repeats nothing when reloaded; the same form sent once more is refused too.
    landed = answers[0]["Location"]
    assert client.get(landed).status_code == 200 and client.get(landed).status_code == 200
    again = client.post(case.url, sent)
    assert _said(again) == [ALREADY] and case.done() == 1


@pytest.mark.parametrize("kind", KINDS, ids=lambda k: k.__name__)
def test_a_confirmation_without_a_valid_unused_id_changes_nothing(kind):
    case = kind()
    client, other = _staff(), _staff("other")
    confirmed = {**case.data, "confirmed": "yes"}
    refused = [
        client.post(case.url, confirmed),  # no id at all: a script posting the fields
        client.post(case.url, {**confirmed, "confirmation_id": "made-up"}),
        client.post(case.url, {**confirmed, "confirmation_id": "x" * 10_000}),
        client.post(case.url, {**confirmed, "confirmation_id": _page(other, case)}),  # issued to someone else
    ]
    with time_machine.travel(timezone.now() - confirmation_ids.VALID_FOR - timedelta(minutes=1)):
        stale = _page(client, case)
    refused.append(client.post(case.url, {**confirmed, "confirmation_id": stale}))  # opened too long ago
    for response in refused:
        assert response.status_code == 200
        page = response.content.decode()
        assert "could not be checked" in page and "nothing was done" in page
        assert confirmation_id_of(response)  # the page again, with a fresh id to confirm deliberately
    assert INVALID_MESSAGE.split(":")[0] in refused[0].content.decode()
    assert case.done() == 0
    # The page's own id still works, once.
    fresh = client.post(case.url, {**confirmed, "confirmation_id": _page(client, case)}, follow=True)
    assert fresh.status_code == 200 and case.done() == 1


def test_an_id_is_good_only_for_the_change_it_was_issued_for():
    first, second = quantity_adjustment(), quantity_adjustment()
    client = _staff()
    issued_for_first = _page(client, first)
    response = client.post(
        second.url, {**second.data, "confirmed": "yes", "confirmation_id": issued_for_first}
    )
    assert "could not be checked" in response.content.decode()
    assert (first.done(), second.done()) == (0, 0)


def test_old_ids_are_purged_used_or_not():
    case = quantity_adjustment()
    client = _staff()
    with time_machine.travel(timezone.now() - confirmation_ids.KEPT_FOR - timedelta(minutes=1)):
        old = [_page(client, case), _page(client, case)]
        client.post(case.url, {**case.data, "confirmed": "yes", "confirmation_id": old[0]})
    recent = _page(client, case)
    assert confirmation_ids.staff_confirmations_purge() == 2
    assert list(StaffConfirmation.objects.values_list("pk", flat=True)) == [recent]
