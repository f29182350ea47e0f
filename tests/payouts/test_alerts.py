"""E-mail alerts to the partner's contact address: a declined charge, a failed payout, a failed refund.

Each is sent once per failure, after the failure commits, with a link to the portal page that fixes it.
"""

import logging
import smtplib
import threading
from datetime import timedelta

import pytest
import time_machine
from django.core import mail
from django.db import connection
from django.utils import timezone

from orders.models import Order
from payouts import tasks
from payouts.lifecycle.confirmation import order_confirm
from payouts.models import Charge, Payout
from payouts.services.alerts import (
    CHARGE_DECLINED,
    PAYOUT_FAILED,
    REFUND_FAILED,
    payment_alert_forget,
    payment_alert_send,
    payment_alert_sent_at,
)
from payouts.services.methods import payment_methods_create_sandbox
from payouts.services.progression import payout_retry, payouts_progress
from tests.conftest import make_partner
from tests.orders.factories import make_order

from .test_refunds import DECLINED_CARD, REFUND_FAILS_CARD, cancel_order, charged_order, run_task

BASE = "https://partners.buyback.example"
# A sandbox bank account whose payouts fail once the platform processes them.
FAILING_ACCOUNT = "000111111116"


@pytest.fixture(autouse=True)
def _public_base_url(settings):
    settings.PUBLIC_BASE_URL = BASE


def alerts(subject_start: str) -> list:
    return [m for m in mail.outbox if m.subject.startswith(subject_start)]


def html_of(message) -> str:
    return message.alternatives[0][0]


def declined_order(*, email: str = "ops@declined.example") -> Order:
    creds = make_partner(name="Declined Co", payment_methods=False, email=email)
    payment_methods_create_sandbox(partner=creds.partner, card_number=DECLINED_CARD)
    return make_order(creds.partner)


# --- a declined card charge -------------------------------------------------------------------------------------
@pytest.mark.django_db
def test_declined_charge_emails_the_contact_once_with_a_link_to_update_the_card(
    django_capture_on_commit_callbacks,
):
    order = declined_order()
    with django_capture_on_commit_callbacks(execute=True):
        order_confirm(order_pk=order.pk)
    charge = Charge.objects.get(order=order)
    assert charge.status == "failed" and payment_alert_sent_at(kind=CHARGE_DECLINED, pk=charge.pk) is not None

    [alert] = alerts("Card charge declined")
    assert alert.to == ["ops@declined.example"]
    assert alert.subject == f"Card charge declined for order {order.order_id}: update your card"
    link = f"{BASE}/portal/settings/payment-methods#credit-card"
    assert link in alert.body and f'href="{link}"' in html_of(alert)
    assert "Your card was declined." in alert.body
    assert "Visa ••••0002" in alert.body

    # The task delivered again (a redelivery, a retry): the stamp is claimed, nothing more is sent.
    assert run_task(tasks.payment_alert_send, CHARGE_DECLINED, charge.pk) is False
    assert len(alerts("Card charge declined")) == 1
    # A second confirmation of the same order finds the charge final and alerts nothing either.
    with django_capture_on_commit_callbacks(execute=True):
        order_confirm(order_pk=order.pk)
    assert len(alerts("Card charge declined")) == 1


@pytest.mark.django_db
def test_no_alert_without_a_contact_email_only_a_log_line(django_capture_on_commit_callbacks, caplog):
    order = declined_order(email="")
    caplog.set_level(logging.WARNING, logger="payouts.services.alerts")
    with django_capture_on_commit_callbacks(execute=True):
        order_confirm(order_pk=order.pk)
    assert alerts("Card charge declined") == []
    assert payment_alert_sent_at(kind=CHARGE_DECLINED, pk=Charge.objects.get(order=order).pk) is None
    [record] = [r for r in caplog.records if r.getMessage().startswith("payment alert not sent")]
    assert record.alert == CHARGE_DECLINED and record.order_id == order.order_id


@pytest.mark.django_db
def test_a_mail_server_error_leaves_the_alert_unclaimed_for_the_retry(
    django_capture_on_commit_callbacks, monkeypatch
):
    order = declined_order()
    from django.core.mail.backends.locmem import EmailBackend

    original = EmailBackend.send_messages
    calls = []

    def flaky(self, messages):
        calls.append(len(messages))
        if len(calls) == 1:
            raise smtplib.SMTPServerDisconnected("connection lost")
        return original(self, messages)

    monkeypatch.setattr(EmailBackend, "send_messages", flaky)
    with django_capture_on_commit_callbacks(execute=False):
        order_confirm(order_pk=order.pk)
    charge = Charge.objects.get(order=order)
    with pytest.raises(smtplib.SMTPServerDisconnected):
        payment_alert_send(kind=CHARGE_DECLINED, pk=charge.pk)
    charge.refresh_from_db()
    assert (
        payment_alert_sent_at(kind=CHARGE_DECLINED, pk=charge.pk) is None
    )  # the claim rolled back with the failed hand-over
    assert payment_alert_send(kind=CHARGE_DECLINED, pk=charge.pk) is True
    assert payment_alert_send(kind=CHARGE_DECLINED, pk=charge.pk) is False
    assert len(alerts("Card charge declined")) == 1


@pytest.mark.django_db
def test_the_alert_waits_for_the_failure_to_commit(django_capture_on_commit_callbacks):
    order = declined_order()
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        order_confirm(order_pk=order.pk)
    # Published only on commit: nothing was sent while the failure's transaction was open.
    assert alerts("Card charge declined") == []
    assert len(callbacks) >= 1


@pytest.mark.django_db(transaction=True)
def test_two_workers_sending_the_same_alert_send_it_once(db):
    order = declined_order()
    order_confirm(order_pk=order.pk)  # transaction=True: the alert ran on commit already
    charge = Charge.objects.get(order=order)
    assert len(alerts("Card charge declined")) == 1
    # Pretend the first send never happened and let four workers race for the claim.
    payment_alert_forget(kind=CHARGE_DECLINED, pk=charge.pk)
    mail.outbox.clear()
    barrier = threading.Barrier(4)
    outcomes, errors = [], []

    def worker() -> None:
        try:
            barrier.wait()
            outcomes.append(payment_alert_send(kind=CHARGE_DECLINED, pk=charge.pk))
        except Exception as exc:  # pragma: no cover - reported below
            errors.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=worker) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors
    assert sorted(outcomes) == [False, False, False, True]
    assert len(alerts("Card charge declined")) == 1


# --- a failed payout --------------------------------------------------------------------------------------------
@pytest.mark.django_db
def test_failed_payout_emails_once_and_a_failed_staff_retry_is_a_new_alert(
    django_capture_on_commit_callbacks,
):
    creds = make_partner(name="Payout Co", payment_methods=False, email="money@payout.example")
    payment_methods_create_sandbox(partner=creds.partner, account_number=FAILING_ACCOUNT)
    order = make_order(creds.partner, status="ticket_received")
    with time_machine.travel(timezone.now(), tick=False) as clock:
        with django_capture_on_commit_callbacks(execute=True):
            payouts_progress()
        clock.shift(timedelta(minutes=10))
        with django_capture_on_commit_callbacks(execute=True):
            payouts_progress()
        payout = Payout.objects.get(order=order)
        assert (
            payout.status == "failed" and payment_alert_sent_at(kind=PAYOUT_FAILED, pk=payout.pk) is not None
        )

        [alert] = alerts("Payout failed")
        assert alert.to == ["money@payout.example"]
        assert alert.subject == f"Payout failed for order {order.order_id}: check your payout account"
        link = f"{BASE}/portal/settings/payment-methods"
        assert link in alert.body and f'href="{link}"' in html_of(alert)
        assert f"{BASE}/portal/payouts?status=failed" in alert.body
        assert payout.failure_reason in alert.body

        assert run_task(tasks.payment_alert_send, PAYOUT_FAILED, payout.pk) is False
        assert len(alerts("Payout failed")) == 1

        # Staff retry to the same failing account: the second failure is a new event with its own alert.
        assert payout_retry(payout=payout, actor="staff:ops") is True
        with django_capture_on_commit_callbacks(execute=True):
            payouts_progress()
        clock.shift(timedelta(minutes=10))
        with django_capture_on_commit_callbacks(execute=True):
            payouts_progress()
    payout.refresh_from_db()
    assert (payout.status, payout.attempt) == ("failed", 2)
    assert len(alerts("Payout failed")) == 2


# --- a failed refund --------------------------------------------------------------------------------------------
@pytest.mark.django_db
def test_failed_refund_emails_once_with_a_link_to_the_order(django_capture_on_commit_callbacks):
    creds = make_partner(name="Refund Co", payment_methods=False, email="billing@refund.example")
    payment_methods_create_sandbox(partner=creds.partner, card_number=REFUND_FAILS_CARD)
    with django_capture_on_commit_callbacks(execute=True):
        order = charged_order(creds.partner)
    with django_capture_on_commit_callbacks(execute=True):
        cancel_order(order)
    charge = Charge.objects.get(order=order)
    assert (
        charge.refund_status == "failed"
        and payment_alert_sent_at(kind=REFUND_FAILED, pk=charge.pk) is not None
    )

    [alert] = alerts("Refund failed")
    assert alert.to == ["billing@refund.example"]
    assert alert.subject == f"Refund failed for order {order.order_id}: our team is on it"
    link = f"{BASE}/portal/orders/{order.order_id}"
    assert link in alert.body and f'href="{link}"' in html_of(alert)
    assert "card account is closed" in alert.body

    assert run_task(tasks.payment_alert_send, REFUND_FAILED, charge.pk) is False
    assert run_task(tasks.refund_for_order, order.pk) == "failed"  # a settled refund is left alone
    assert len(alerts("Refund failed")) == 1
    # The charge itself succeeded: no decline alert for it.
    assert alerts("Card charge declined") == []
