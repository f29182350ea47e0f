"""Confirmation in the background: charge once, mail the seller once, move to awaiting_transfer (or cancel)."""

import pytest
from django.core import mail

from catalog.models import Row
from config.core.backoff import task_retry_seconds
from orders.models import Order
from payouts import tasks
from payouts.errors import PlatformUnavailable
from payouts.lifecycle.confirmation import order_confirm
from payouts.models import Charge
from payouts.services.methods import payment_methods_create_sandbox
from tests.conftest import issue_token, make_partner
from tests.orders.factories import confirmation_mail, confirmation_mail_set, order_row
from tests.quotes.factories import QuoteFactory

from .conftest import order_form, pdf_upload, post_order

pytestmark = pytest.mark.django_db


def create_and_confirm(client, form, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True) as callbacks:
        response = post_order(client, form)
    assert response.status_code == 201, response.content
    # The order.created notification was handed to its subscribers after commit (the confirmation among
    # them, which in turn wrote and handed over the order.status_changed notification).
    assert len(callbacks) >= 1
    return Order.objects.get(order_id=response.json()["data"]["order_id"])


def test_confirmation_charges_the_card_moves_the_order_and_mails_the_seller(
    auth_client, quote, django_capture_on_commit_callbacks
):
    form = order_form(quote, seller_email="seller@example.org", seller_name="Sam Seller")
    order = create_and_confirm(auth_client, form, django_capture_on_commit_callbacks)

    assert order.status == Order.Status.AWAITING_TRANSFER
    charge = Charge.objects.get(order=order)
    assert charge.status == "succeeded" and charge.amount == order.total_price
    assert [(h.from_status, h.to_status) for h in order.status_history.all()] == [
        ("", "accepted"),
        ("accepted", "awaiting_transfer"),
    ]
    assert len(mail.outbox) == 1
    message = mail.outbox[0]
    assert message.to == ["seller@example.org"]
    assert order.order_id in message.subject
    event = quote.event
    local = event.local_starts_at
    for text in (message.body, message.alternatives[0][0]):
        assert "Sam Seller" in text
        assert event.name in text
        assert event.venue.name in text and event.venue.city in text
        assert local.strftime("%B") in text and str(local.day) in text and str(local.year) in text
        assert local.strftime("%-I:%M") in text  # local wall-clock time, not UTC
        assert event.timezone in text
        assert quote.section_name_display in text
        assert quote.row_name_display in text
        assert "Quantity" in text and str(quote.quantity) in text
        assert "Transfer" in text and "ticketmaster" in text  # mobile-transfer instructions
        assert order.in_hand_date.strftime("%B %-d, %Y") in text
        assert order.transfer_address in text
        assert order.order_id in text
    assert message.alternatives[0][1] == "text/html"
    sent = confirmation_mail(order)
    assert sent.recipient == "seller@example.org"
    assert sent.sent_at is not None


@pytest.mark.parametrize(
    "delivery_type,phrase",
    [("mobile_qr", "QR code"), ("pdf", "PDF tickets were sent with the order")],
)
def test_confirmation_gives_instructions_for_the_delivery_type(
    auth_client, quote, django_capture_on_commit_callbacks, delivery_type, phrase
):
    form = order_form(quote, delivery_type=delivery_type, is_ready_to_deliver="true", in_hand_date=None)
    if delivery_type == "pdf":
        form["file"] = pdf_upload()
    create_and_confirm(auth_client, form, django_capture_on_commit_callbacks)
    body = mail.outbox[0].body
    assert phrase in body
    assert "Deliver by" not in body and "deliver them now" in body


def test_confirmation_goes_to_the_quote_seller_when_no_seller_email(
    auth_client, quote, django_capture_on_commit_callbacks
):
    create_and_confirm(auth_client, order_form(quote), django_capture_on_commit_callbacks)
    assert mail.outbox[0].to == ["jane.doe@example.com"]  # the quote's user_metadata.email
    assert "Jane" in mail.outbox[0].body


def test_confirmation_falls_back_to_the_partner_contact_email(
    auth_client, partner, row, django_capture_on_commit_callbacks
):
    quote = QuoteFactory(partner=partner, row=row, user_metadata={})
    create_and_confirm(auth_client, order_form(quote), django_capture_on_commit_callbacks)
    assert mail.outbox[0].to == [partner.contact_email]


def test_declined_card_cancels_the_order_with_the_reason_and_gives_the_quantity_back(
    db, row, django_capture_on_commit_callbacks
):
    from rest_framework.test import APIClient

    creds = make_partner(name="Declines Inc", payment_methods=False, email="ops@declines.example")
    payment_methods_create_sandbox(partner=creds.partner, card_number="4000000000000002")
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {issue_token(client, creds)}")
    quote = QuoteFactory(partner=creds.partner, row=row, quantity=3)

    order = create_and_confirm(client, order_form(quote), django_capture_on_commit_callbacks)

    assert order.status == Order.Status.CANCELED
    last = order.status_history.order_by("-at", "-id").first()
    assert (last.from_status, last.to_status, last.actor) == ("accepted", "canceled", "system:payment")
    assert "declined" in last.reason.lower()
    # No confirmation to the seller; only the partner's alert that its card was declined.
    assert [(m.to, m.subject) for m in mail.outbox] == [
        (["ops@declines.example"], f"Card charge declined for order {order.order_id}: update your card")
    ]
    assert Row.objects.get(pk=row.pk).available_quantity == 10
    detail = client.get(f"/v1/orders/{order.order_id}").json()["data"]
    assert detail["status"] == "canceled"
    assert "declined" in detail["status_history"][-1]["reason"].lower()


def test_a_duplicate_delivery_charges_once_and_mails_once(auth_client, quote):
    order = Order.objects.get(order_id=post_order(auth_client, order_form(quote)).json()["data"]["order_id"])
    tasks.order_confirm.apply(args=[order.pk])
    tasks.order_confirm.apply(args=[order.pk])
    order_confirm(order_pk=order.pk)
    assert Charge.objects.filter(order=order).count() == 1
    assert len(mail.outbox) == 1
    order.refresh_from_db()
    assert order.status == Order.Status.AWAITING_TRANSFER
    assert order.status_history.filter(to_status="awaiting_transfer").count() == 1


def test_platform_outage_is_retried_and_charges_once(auth_client, quote, monkeypatch):
    from payouts.platform.sandbox.backend import SandboxPlatform

    order = Order.objects.get(order_id=post_order(auth_client, order_form(quote)).json()["data"]["order_id"])
    real_charge = SandboxPlatform.charge_cards
    calls = []

    def flaky(self, requests):
        calls.extend(request.idempotency_key for request in requests)
        if len(calls) < 3:
            return [PlatformUnavailable() for _ in requests]
        return real_charge(self, requests)

    monkeypatch.setattr(SandboxPlatform, "charge_cards", flaky)
    countdowns = []
    real_retry = tasks.order_confirm.retry

    def recording_retry(*args, **kwargs):
        countdowns.append(kwargs.get("countdown"))
        return real_retry(*args, **kwargs)

    monkeypatch.setattr(tasks.order_confirm, "retry", recording_retry)

    tasks.order_confirm.apply(args=[order.pk])

    assert calls == [order.order_id] * 3  # same idempotency key on every attempt
    assert len(countdowns) == 2 and countdowns[0] >= 10 and countdowns[1] >= 20
    order.refresh_from_db()
    assert order.status == Order.Status.AWAITING_TRANSFER
    assert Charge.objects.get(order=order).status == "succeeded"
    assert len(mail.outbox) == 1


def test_mail_server_unreachable_is_retried_without_charging_again(auth_client, quote, monkeypatch):
    from django.core.mail.backends.locmem import EmailBackend

    order = Order.objects.get(order_id=post_order(auth_client, order_form(quote)).json()["data"]["order_id"])
    real_open = EmailBackend.open
    attempts = []

    def refused_once(self):
        attempts.append(1)
        if len(attempts) == 1:
            raise ConnectionRefusedError("mail server down")
        return real_open(self)

    monkeypatch.setattr(EmailBackend, "open", refused_once)
    tasks.order_confirm.apply(args=[order.pk])
    assert len(attempts) == 2
    assert len(mail.outbox) == 1
    assert (
        mail.outbox[0].extra_headers["Message-ID"]
        == f"<confirmation.{order.order_id}@transfers.buyback.example>"
    )
    assert Charge.objects.filter(order=order).count() == 1
    sent = confirmation_mail(order)
    assert sent.sent_at is not None and not sent.unconfirmed


def test_mail_server_refusing_the_message_is_retried_and_sent_once(auth_client, quote, monkeypatch):
    import smtplib

    from orders import seller_mail

    order = Order.objects.get(order_id=post_order(auth_client, order_form(quote)).json()["data"]["order_id"])
    real_send = seller_mail.send_order_confirmation
    attempts = []

    def refused_once(**kwargs):
        attempts.append(1)
        if len(attempts) == 1:
            raise smtplib.SMTPDataError(451, b"try again later")  # not accepted: nothing was delivered
        return real_send(**kwargs)

    monkeypatch.setattr(seller_mail, "send_order_confirmation", refused_once)
    tasks.order_confirm.apply(args=[order.pk])
    assert len(attempts) == 2
    assert len(mail.outbox) == 1
    assert Charge.objects.filter(order=order).count() == 1


def test_a_message_lost_after_the_hand_over_is_never_sent_twice(auth_client, quote, monkeypatch):
    """The connection drops during the transfer: the seller may have the e-mail. No retry, no sweep sends
    it again; past the claim lease it is recorded as sent-unconfirmed and the sweeper stops."""
    import smtplib
    from datetime import timedelta

    import time_machine
    from django.conf import settings
    from django.utils import timezone

    from orders import seller_mail
    from payouts.lifecycle.confirmation import orders_requeue_unconfirmed
    from payouts.lifecycle.seller_email import EMAIL_HANDOVER_LEASE

    order = Order.objects.get(order_id=post_order(auth_client, order_form(quote)).json()["data"]["order_id"])
    attempts = []

    def dropped(**kwargs):
        attempts.append(1)
        raise smtplib.SMTPServerDisconnected("connection reset during DATA")

    monkeypatch.setattr(seller_mail, "send_order_confirmation", dropped)
    tasks.order_confirm.apply(args=[order.pk])  # retried by the task: the retries do not send again
    order_confirm(order_pk=order.pk)
    assert attempts == [1]
    sent = confirmation_mail(order)
    assert sent.handed_over_at is not None and sent.sent_at is None

    later = timezone.now() + timedelta(seconds=settings.ORDER_CONFIRMATION_STALE_SECONDS + 60)
    assert later - sent.handed_over_at > EMAIL_HANDOVER_LEASE
    with time_machine.travel(later, tick=False):
        assert orders_requeue_unconfirmed() == [order.pk]  # the stalled confirmation runs again ...
        assert attempts == [1]  # ... and does not send
        assert orders_requeue_unconfirmed() == []
    sent = confirmation_mail(order)
    assert sent.unconfirmed is True
    assert sent.sent_at == sent.handed_over_at
    assert mail.outbox == [] and Charge.objects.filter(order=order).count() == 1


def test_backoff_grows_and_is_capped():
    assert 10 <= task_retry_seconds(0) <= 12
    assert 20 <= task_retry_seconds(1) <= 25
    assert 600 <= task_retry_seconds(12) <= 750


def test_confirmation_of_an_order_canceled_before_it_ran_does_nothing(auth_client, quote):
    data = post_order(auth_client, order_form(quote)).json()["data"]
    assert auth_client.post(f"/v1/orders/{data['order_id']}/cancel").status_code == 200
    order = Order.objects.get(order_id=data["order_id"])
    tasks.order_confirm.apply(args=[order.pk])
    order.refresh_from_db()
    assert order.status == Order.Status.CANCELED
    assert not Charge.objects.filter(order=order).exists()
    assert mail.outbox == []


def test_cancel_after_confirmation_tells_the_seller(auth_client, quote, django_capture_on_commit_callbacks):
    order = create_and_confirm(auth_client, order_form(quote), django_capture_on_commit_callbacks)
    assert len(mail.outbox) == 1
    with django_capture_on_commit_callbacks(execute=True):
        assert auth_client.post(f"/v1/orders/{order.order_id}/cancel").status_code == 200
    assert len(mail.outbox) == 2
    notice = mail.outbox[1]
    assert notice.to == ["jane.doe@example.com"]
    assert "canceled" in notice.subject and order.order_id in notice.body


def test_order_without_any_recipient_is_confirmed_without_mail(db, django_capture_on_commit_callbacks):
    from rest_framework.test import APIClient

    creds = make_partner(name="Silent Co", email="")
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {issue_token(client, creds)}")
    quote = QuoteFactory(partner=creds.partner, row=order_row(), user_metadata={})
    order = create_and_confirm(client, order_form(quote), django_capture_on_commit_callbacks)
    assert order.status == Order.Status.AWAITING_TRANSFER
    assert mail.outbox == []
    sent = confirmation_mail(order)
    assert sent.sent_at is not None and sent.recipient == ""


def _with_unreleased_claim(order: Order, *, age_seconds: float) -> None:
    """The order as a sender left it that claimed the e-mail, never handed it over and could not release it."""
    from datetime import timedelta

    from django.utils import timezone

    confirmation_mail_set(
        order,
        sent_at=None,
        handed_over_at=None,
        claimed_at=timezone.now() - timedelta(seconds=age_seconds),
    )
    mail.outbox.clear()


def test_a_claim_left_behind_is_taken_over_after_its_90_second_lease(
    auth_client, quote, django_capture_on_commit_callbacks
):
    from payouts.lifecycle.seller_email import EMAIL_CLAIM_LEASE, confirmation_emails_send

    order = create_and_confirm(auth_client, order_form(quote), django_capture_on_commit_callbacks)
    assert order.status == Order.Status.AWAITING_TRANSFER and len(mail.outbox) == 1
    assert EMAIL_CLAIM_LEASE.total_seconds() == 90
    _with_unreleased_claim(order, age_seconds=60)
    assert confirmation_emails_send(order_pks=[order.pk]).sent == []  # still the other sender's
    assert mail.outbox == []
    _with_unreleased_claim(order, age_seconds=91)
    assert confirmation_emails_send(order_pks=[order.pk]).sent == [str(order.pk)]
    assert len(mail.outbox) == 1
    sent = confirmation_mail(order)
    assert sent.sent_at is not None and not sent.unconfirmed


def test_a_slow_sender_whose_claim_was_taken_over_sends_nothing(
    auth_client, quote, monkeypatch, django_capture_on_commit_callbacks
):
    """The lease is short: a sender still opening its mail connection when its claim expires finds the claim
    taken at its hand-over and stops, so the seller gets the one message the new claimant sends."""
    from datetime import timedelta

    from django.core.mail.backends.locmem import EmailBackend
    from django.utils import timezone

    from payouts.lifecycle.seller_email import confirmation_emails_send

    order = create_and_confirm(auth_client, order_form(quote), django_capture_on_commit_callbacks)
    assert order.status == Order.Status.AWAITING_TRANSFER
    _with_unreleased_claim(order, age_seconds=0)
    confirmation_mail_set(order, claimed_at=None)
    real_open = EmailBackend.open

    def slow_open(self):
        # Meanwhile another sender took the e-mail over (the first claim expired while this one waited).
        confirmation_mail_set(order, claimed_at=timezone.now() + timedelta(seconds=1))
        return real_open(self)

    monkeypatch.setattr(EmailBackend, "open", slow_open)
    assert confirmation_emails_send(order_pks=[order.pk]).sent == []
    assert mail.outbox == []
    sent = confirmation_mail(order)
    assert sent.handed_over_at is None and sent.sent_at is None


def test_a_sent_message_is_recorded_through_an_outage_longer_than_a_claim_may_wait(monkeypatch):
    """The claim gives up after 30 s of lost connections; the hand-over and the sending, which already
    happened, are recorded through an outage of up to 3 minutes."""
    from types import SimpleNamespace

    from django.db import OperationalError

    from config.core import mail_once as steps
    from payouts.lifecycle.seller_email import EMAIL_HANDOVER_LEASE

    clock = [0.0]
    monkeypatch.setattr(steps.time, "monotonic", lambda: clock[0])
    monkeypatch.setattr(steps.time, "sleep", lambda seconds: clock.__setitem__(0, clock[0] + seconds))
    # Outside a transaction, as a worker runs it (the test itself runs inside one).
    monkeypatch.setattr(steps, "connection", SimpleNamespace(in_atomic_block=False, close=lambda: None))

    def failing_for(seconds: float):
        def statement() -> bool:
            if clock[0] < seconds:
                clock[0] += 1.0  # each try takes a second before its connection is reset
                raise OperationalError("server closed the connection unexpectedly")
            return True

        return statement

    with pytest.raises(OperationalError):
        steps.with_db_retry(failing_for(60), done=lambda: False)
    clock[0] = 0.0
    assert steps.with_db_retry(failing_for(120), done=lambda: False, seconds=steps.RECORD_RETRY_SECONDS)
    assert EMAIL_HANDOVER_LEASE.total_seconds() > steps.RECORD_RETRY_SECONDS
