"""Staff resolve transfer cases in the admin: each action behind its own permission, a confirmation with a
reason, then a GET (a second POST changes nothing); a forged POST is refused with nothing changed; the mail is
shown as escaped text, never rendered."""

from datetime import timedelta

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Permission
from django.contrib.messages import get_messages
from django.core import mail
from django.test import Client
from django.urls import reverse

from orders.models import Notification, Order
from orders.transfers.models import TransferCase, TransferCaseHistory, TransferStateHistory
from orders.transfers.staff.admin.actions import ACTIONS
from tests.confirming import post_confirmed
from tests.conftest import make_partner
from tests.orders.factories import make_order

from .fixtures import ACCEPT_LINK, HOSTILE_HTML, detected_order, mismatch_case, transfer_mail

pytestmark = pytest.mark.django_db

VIEW = (
    "view_transfercase",
    "view_transfercasehistory",
    "view_inboundmessage",
    "view_transferevidence",
    "view_order",
)


def staff(username: str, *codenames: str) -> Client:
    user = get_user_model().objects.create_user(
        username, f"{username}@service.example", "pw-long-123456", is_staff=True
    )
    user.user_permissions.add(*Permission.objects.filter(codename__in=[*VIEW, *codenames]))
    client = Client()
    client.force_login(user)
    return client


@pytest.fixture
def order():
    partner = make_partner(name="Harbour Tickets").partner
    return make_order(partner, status="awaiting_transfer")


@pytest.fixture
def case(order):
    return mismatch_case(order)


def url(name: str, case: TransferCase) -> str:
    return reverse(f"admin:transfers_transfercase_{name}", args=[case.pk])


def page(case: TransferCase) -> str:
    return reverse("admin:transfers_transfercase_change", args=[case.pk])


def everything(case: TransferCase) -> tuple:
    order = Order.objects.get(pk=case.order_id)
    fresh = TransferCase.objects.get(pk=case.pk)
    return (
        order.status,
        order.transfer.state,
        fresh.state,
        fresh.resolution,
        TransferCaseHistory.objects.count(),
        TransferStateHistory.objects.count(),
        Notification.objects.count(),
        len(mail.outbox),
    )


# --- the case page ---------------------------------------------------------------------------------------------
def test_the_case_page_shows_the_mail_as_text_the_authentication_and_the_evidence(order):
    case = mismatch_case(order, raw=transfer_mail(order, html=HOSTILE_HTML))
    html = staff("viewer").get(page(case)).content.decode()
    assert 'data-testid="mail-text"' in html and "Row: B" in html  # the text part
    assert "d=sandbox.invalid" in html and "s=s2026" in html and "result=pass" in html
    assert "Aligned with From" in html and "yes (From domain sandbox.invalid)" in html
    assert 'data-testid="evidence"' in html and "✘ differs (similarity 0.50)" in html
    assert ACCEPT_LINK.format(order.order_id) in html
    assert "<script>" not in html.split('data-testid="mail-text"')[1].split("</pre>")[0]
    assert "tracker.invalid" not in html  # the HTML part is not shown at all when there is a text part


def test_an_html_only_mail_is_turned_into_text_and_escaped(order):
    case = mismatch_case(order, raw=transfer_mail(order, html=HOSTILE_HTML, text=False))
    html = staff("viewer").get(page(case)).content.decode()
    body = html.split('class="transfer-mail-body">')[1].split("</pre>")[0]
    assert "Event: Skyline Festival" in body and "Row: B" in body
    assert "<script" not in body and "<img" not in body and "onerror" not in body.replace("&", "")
    assert "<script>document.title" not in html and 'src="http://tracker.invalid' not in html


def test_the_queue_lists_open_live_cases_oldest_first_and_searches_by_order_and_address(order, case):
    test_order = make_order(
        make_partner(name="Test Resale", email="t@test.example").partner, status="awaiting_transfer"
    )
    Order.objects.filter(pk=test_order.pk).update(livemode=False)
    test_case = mismatch_case(Order.objects.get(pk=test_order.pk))
    client = staff("viewer")
    listed = client.get("/admin/transfers/transfercase/").content.decode()
    assert order.order_id in listed and test_order.order_id not in listed
    assert test_order.order_id in client.get("/admin/transfers/transfercase/?mode=test").content.decode()
    found = client.get("/admin/transfers/transfercase/", {"q": order.transfer_address}).content.decode()
    assert order.order_id in found
    assert (
        order.order_id in client.get("/admin/transfers/transfercase/", {"q": order.order_id}).content.decode()
    )
    assert test_case.pk != case.pk


# --- permissions ----------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", list(ACTIONS))
def test_each_action_needs_its_own_permission_and_a_forged_post_changes_nothing(case, name):
    others = {p.split(".")[1] for a in ACTIONS.values() if a.name != name for p in a.permissions}
    others -= {p.split(".")[1] for p in ACTIONS[name].permissions}
    client = staff("other", *others)
    before = everything(case)
    assert client.get(url(name, case)).status_code == 403
    assert (
        post_confirmed(
            client,
            url(name, case),
            {"confirmed": "yes", "reason": "forged", "accepted": "yes", "message": "x"},
        ).status_code
        == 403
    )
    assert everything(case) == before
    allowed = staff("allowed", *(p.split(".")[1] for p in ACTIONS[name].permissions))
    confirmation = allowed.post(url(name, case))
    assert (
        confirmation.status_code == 200 and f'data-testid="confirm-{name}"' in confirmation.content.decode()
    )
    assert everything(case) == before


def test_a_viewer_sees_no_button_and_the_operations_member_sees_them(case):
    html = staff("viewer").get(page(case)).content.decode()
    assert all(url(name, case) not in html for name in ACTIONS)
    ops = staff(
        "ops",
        "resolve_transfer_case",
        "mark_received",
        "ask_seller",
        "mark_accepted_on_platform",
        "mark_recalled",
    )
    html = ops.get(page(case)).content.decode()
    # An order awaiting transfer: received, asked, dismissed, forged, recalled; not yet accepted on the platform.
    assert {n for n in ACTIONS if url(n, case) in html} == {
        "mark_received",
        "ask_seller",
        "dismiss",
        "forged",
        "recalled",
    }


@pytest.mark.parametrize("name", list(ACTIONS))
def test_a_reason_is_required(case, name):
    client = staff(
        "ops",
        "resolve_transfer_case",
        "mark_received",
        "ask_seller",
        "mark_accepted_on_platform",
        "mark_recalled",
    )
    before = everything(case)
    response = post_confirmed(
        client, url(name, case), {"confirmed": "yes", "reason": "  ", "message": "Please check"}
    )
    assert response.status_code == 200 and "Give a reason" in response.content.decode()
    assert everything(case) == before


# --- the actions --------------------------------------------------------------------------------------------------
def test_mark_received_with_accepted_moves_once_and_a_second_post_changes_nothing(order, case):
    client = staff("ops", "resolve_transfer_case", "mark_received")
    data = {"confirmed": "yes", "reason": "Seats checked by phone", "accepted": "yes"}
    response = post_confirmed(client, url("mark_received", case), data)
    assert response.status_code == 302 and response["Location"] == page(case)
    order.refresh_from_db()
    assert (order.status, order.transfer.state, order.transfer.source) == (
        "ticket_received",
        "accepted",
        "staff",
    )
    assert order.status_history.order_by("-id").first().reason == "Seats checked by phone"
    reasons = list(Notification.objects.filter(order=order).values_list("payload__data__reason", flat=True))
    assert "received_by_staff" in reasons
    fresh = TransferCase.objects.get(pk=case.pk)
    assert (fresh.state, fresh.resolution, fresh.resolution_reason) == (
        "resolved",
        "marked_received",
        data["reason"],
    )
    assert fresh.resolved_by.startswith("staff:ops") and not order.transfer.case_open
    before = everything(case)
    again = post_confirmed(client, url("mark_received", case), data, follow=True)
    assert any("already resolved" in str(m) for m in get_messages(again.wsgi_request))
    assert everything(case) == before
    assert TransferCaseHistory.objects.filter(case=case, to_status="resolved").count() == 1


def test_ask_the_seller_emails_a_test_orders_partner_with_test_in_the_subject(
    order, django_capture_on_commit_callbacks
):
    Order.objects.filter(pk=order.pk).update(livemode=False)
    case = mismatch_case(Order.objects.get(pk=order.pk))
    client = staff("ops", "ask_seller")
    confirmation = client.post(url("ask_seller", case)).content.decode()
    assert "row" in confirmation and 'name="message"' in confirmation  # the question starts from the mismatch
    missing = post_confirmed(
        client, url("ask_seller", case), {"confirmed": "yes", "reason": "r", "message": " "}
    )
    assert "Write the message" in missing.content.decode() and not mail.outbox
    with django_capture_on_commit_callbacks(execute=True):
        post_confirmed(
            client,
            url("ask_seller", case),
            {"confirmed": "yes", "reason": "row differs", "message": "Which row?"},
        )
    assert [m.to for m in mail.outbox] == [["ops@acme.example"]]
    assert mail.outbox[0].subject.startswith("[TEST] ") and "Which row?" in mail.outbox[0].body
    assert TransferCase.objects.get(pk=case.pk).resolution == "asked_seller"
    assert Order.objects.get(pk=order.pk).status == "awaiting_transfer"


@pytest.mark.parametrize(("name", "resolution"), [("dismiss", "dismissed"), ("forged", "forged")])
def test_dismiss_and_forged_resolve_and_leave_the_order(order, case, name, resolution):
    client = staff("ops", "resolve_transfer_case")
    post_confirmed(client, url(name, case), {"confirmed": "yes", "reason": "checked"})
    assert TransferCase.objects.get(pk=case.pk).resolution == resolution
    order.refresh_from_db()
    assert (order.status, order.transfer.state, order.transfer.case_open) == (
        "awaiting_transfer",
        "mismatch",
        False,
    )


def test_mark_recalled_sends_a_received_order_back_to_awaiting_transfer(order):
    order = detected_order(make_partner(name="Recall Co", email="r@recall.example").partner)
    case = mismatch_case(order, kind=TransferCase.Kind.RECALLED)
    client = staff("ops", "mark_recalled")
    post_confirmed(client, url("recalled", case), {"confirmed": "yes", "reason": "seller took them back"})
    order.refresh_from_db()
    assert (order.status, order.transfer.state) == ("awaiting_transfer", "recalled")
    assert TransferCase.objects.get(pk=case.pk).resolution == "recalled"


def test_accepted_on_platform_in_bulk_lists_the_accept_links_and_records_once():
    partner = make_partner(name="Bulk Co", email="b@bulk.example").partner
    orders = [detected_order(partner) for _ in range(2)]
    cases = [mismatch_case(o, kind=TransferCase.Kind.UNVERIFIED) for o in orders]
    waiting = make_order(partner, status="awaiting_transfer")
    cases.append(mismatch_case(waiting, kind=TransferCase.Kind.UNVERIFIED))
    client = staff("ops", "mark_accepted_on_platform")
    selection = {"action": "accept_on_platform", "_selected_action": [c.pk for c in cases], "index": "0"}
    confirmation = client.post("/admin/transfers/transfercase/", selection).content.decode()
    assert 'data-testid="confirm-accept"' in confirmation
    for o in [*orders, waiting]:
        assert f'href="{ACCEPT_LINK.format(o.order_id)}"' in confirmation
    before = everything(cases[0])
    post_confirmed(client, "/admin/transfers/transfercase/", {**selection, "confirmed": "yes", "reason": ""})
    assert everything(cases[0]) == before
    done = post_confirmed(
        client,
        "/admin/transfers/transfercase/",
        {**selection, "confirmed": "yes", "reason": "accepted"},
        follow=True,
    )
    for o in orders:
        o.refresh_from_db()
        assert o.transfer.state == "accepted" and o.transfer.accepted_at is not None
    assert Order.objects.get(pk=waiting.pk).transfer.state == "none"
    assert TransferCase.objects.get(pk=cases[2].pk).state == "open"
    assert any("only an order whose tickets were received" in str(m) for m in get_messages(done.wsgi_request))
    notes = Notification.objects.filter(order__in=orders, payload__data__reason="accepted_by_staff").count()
    assert notes == 2
    post_confirmed(
        client, "/admin/transfers/transfercase/", {**selection, "confirmed": "yes", "reason": "accepted"}
    )
    assert (
        Notification.objects.filter(order__in=orders, payload__data__reason="accepted_by_staff").count() == 2
    )


def test_a_viewer_has_no_bulk_action_and_a_forged_one_changes_nothing(case):
    client = staff("viewer")
    assert 'name="action"' not in client.get("/admin/transfers/transfercase/").content.decode()
    before = everything(case)
    post_confirmed(
        client,
        "/admin/transfers/transfercase/",
        {
            "action": "accept_on_platform",
            "_selected_action": [case.pk],
            "confirmed": "yes",
            "reason": "x",
            "index": "0",
        },
    )
    assert everything(case) == before


def test_the_raw_message_downloads_only_for_staff_who_resolve_cases(case):
    raw_url = reverse("admin:transfers_inboundmessage_raw", args=[case.message_id])
    message_page = reverse("admin:transfers_inboundmessage_change", args=[case.message_id])
    viewer = staff("viewer", "view_inboundmessage")
    assert viewer.get(raw_url).status_code == 403 and raw_url not in viewer.get(message_page).content.decode()
    resolver = staff("resolver", "resolve_transfer_case")
    assert raw_url in resolver.get(message_page).content.decode()
    response = resolver.get(raw_url)
    assert response.status_code == 200 and b"DKIM-Signature" in response.content
    assert response["Content-Disposition"].startswith("attachment")


def test_ask_the_seller_sends_nothing_until_the_resolution_commits(
    order, case, django_capture_on_commit_callbacks
):
    client = staff("ops", "ask_seller")
    data = {"confirmed": "yes", "reason": "row differs", "message": "Which row?"}
    with django_capture_on_commit_callbacks(execute=False) as after_commit:
        post_confirmed(client, url("ask_seller", case), data)
    # The case is resolved inside the transaction; the question waits for its commit.
    assert TransferCase.objects.get(pk=case.pk).resolution == "asked_seller" and not mail.outbox
    for callback in after_commit:
        callback()
    assert len(mail.outbox) == 1 and "Which row?" in mail.outbox[0].body


@pytest.mark.django_db(transaction=True)
def test_ask_the_seller_e_mails_with_no_transaction_open_and_the_case_already_resolved(monkeypatch):
    from django.db import connection

    from orders.transfers.staff import mail as staff_mail

    order = make_order(make_partner(name="Quay Tickets").partner, status="awaiting_transfer")
    case = mismatch_case(order)
    seen = []
    send = staff_mail.send_transfer_question

    def watching(**kwargs):
        # What the mail server sees: no row lock held (no transaction at all), the case resolved for good.
        seen.append((connection.in_atomic_block, TransferCase.objects.get(pk=case.pk).state))
        return send(**kwargs)

    monkeypatch.setattr(staff_mail, "send_transfer_question", watching)
    client = staff("ops", "ask_seller")
    post_confirmed(
        client,
        url("ask_seller", case),
        {"confirmed": "yes", "reason": "row differs", "message": "Which row?"},
    )
    assert seen == [(False, "resolved")]
    assert ["Which row?" in m.body for m in mail.outbox].count(True) == 1


# --- a question whose task message was lost -------------------------------------------------------------------


def _ask(client: Client, case: TransferCase, capture, *, lost: bool) -> None:
    data = {"confirmed": "yes", "reason": "row differs", "message": "Which row?"}
    with capture(execute=not lost):
        post_confirmed(client, url("ask_seller", case), data)


def test_a_question_whose_publish_was_lost_is_sent_once_by_the_sweep_and_never_again(
    order, case, django_capture_on_commit_callbacks
):
    import time_machine

    from orders.transfers import tasks
    from orders.transfers.staff.services import (
        QUESTION_SWEEP_AFTER,
        transfer_question_send,
        transfer_question_sent,
    )

    _ask(staff("ops", "ask_seller"), case, django_capture_on_commit_callbacks, lost=True)
    recorded = TransferCase.objects.get(pk=case.pk)
    assert (
        recorded.question == "Which row?"
        and transfer_question_sent(case_pk=case.pk)[0] is None
        and not mail.outbox
    )
    # Just resolved: the task published after the commit has it, not the sweep.
    assert tasks.transfer_questions_send_due() == 0 and not mail.outbox
    with time_machine.travel(recorded.resolved_at + QUESTION_SWEEP_AFTER + timedelta(seconds=1), tick=False):
        assert tasks.transfer_questions_send_due() == 1
        assert len(mail.outbox) == 1 and "Which row?" in mail.outbox[0].body
        assert tasks.transfer_questions_send_due() == 0
        assert transfer_question_send(case_pk=case.pk) == ""  # a late duplicate of the task sends nothing
    sent = TransferCase.objects.get(pk=case.pk)
    sent_at, sent_to = transfer_question_sent(case_pk=case.pk)
    assert sent_at is not None and sent_to == mail.outbox[0].to[0]
    with time_machine.travel(sent.resolved_at + timedelta(days=2), tick=False):
        assert tasks.transfer_questions_send_due() == 0
    assert len(mail.outbox) == 1


def test_a_question_sent_after_the_commit_is_never_sent_again_by_the_sweep(
    order, case, django_capture_on_commit_callbacks
):
    import time_machine

    from orders.transfers import tasks

    _ask(staff("ops", "ask_seller"), case, django_capture_on_commit_callbacks, lost=False)
    assert len(mail.outbox) == 1
    resolved_at = TransferCase.objects.get(pk=case.pk).resolved_at
    with time_machine.travel(resolved_at + timedelta(hours=1), tick=False):
        assert tasks.transfer_questions_send_due() == 0
    assert len(mail.outbox) == 1


def test_a_question_the_mail_server_refused_is_released_for_the_retry(
    order, case, django_capture_on_commit_callbacks, monkeypatch
):
    import smtplib

    from config.core.models import MailOnce
    from orders.transfers.staff import mail as staff_mail
    from orders.transfers.staff.services import QUESTION_MAIL, transfer_question_send

    _ask(staff("ops", "ask_seller"), case, django_capture_on_commit_callbacks, lost=True)

    def refused(**kwargs):
        raise smtplib.SMTPServerDisconnected("gone")

    monkeypatch.setattr(staff_mail, "send_transfer_question", refused)
    with pytest.raises(smtplib.SMTPServerDisconnected):
        transfer_question_send(case_pk=case.pk)
    released = MailOnce.objects.get(purpose=QUESTION_MAIL, key=str(case.pk))
    assert released.claimed_at is None and released.sent_at is None
    monkeypatch.undo()
    assert transfer_question_send(case_pk=case.pk) and len(mail.outbox) == 1
