"""The dashboard's readiness summary: every state that needs the partner shows its callout with what to do and
a link, and "ready" shows only when nothing needs doing."""

import re
from datetime import timedelta

import pytest
import time_machine
from django.utils import timezone

from partners.models import Partner
from payouts.lifecycle.confirmation import order_confirm
from payouts.models import Charge, Payout
from payouts.services.methods import payment_methods_create_sandbox
from payouts.services.progression import payouts_progress
from tests.orders.factories import make_order
from tests.payouts.test_alerts import FAILING_ACCOUNT
from tests.payouts.test_refunds import DECLINED_CARD, REFUND_FAILS_CARD, cancel_order, charged_order
from tests.portal.fixtures import portal_login

READY = "Your account is ready to sell."
CODES = ["suspended", "payout_method", "credit_card", "charge_declined", "refund_failed", "payout_failed"]


def dashboard(login) -> str:
    response = login.client.get("/portal/")
    assert response.status_code == 200
    return response.content.decode()


def shown(body: str) -> list[str]:
    """The readiness callouts on the page, in order."""
    return [code for code in re.findall(r'data-testid="readiness-([a-z_]+)"', body) if code in CODES]


def badge(body: str) -> str:
    return re.search(r'data-testid="readiness-status">([^<]+)<', body).group(1)


def callout(body: str, code: str) -> str:
    return re.search(
        rf'<div class="callout \w+" data-testid="readiness-{code}">(.*?)</div>', body, re.S
    ).group(1)


def bare_login(name: str):
    return portal_login(name=name, email=f"user@{name.split()[0].lower()}.example", payment_methods=False)


@pytest.mark.django_db
def test_all_good_says_ready_and_shows_no_callout(ready_portal, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        charged_order(ready_portal.partner)
    body = dashboard(ready_portal)
    assert shown(body) == []
    assert READY in body and badge(body) == "Ready"


@pytest.mark.django_db
def test_suspended_partner_is_told_the_api_refuses_it_never_ready(ready_portal):
    Partner.objects.filter(pk=ready_portal.partner.pk).update(status=Partner.Status.SUSPENDED)
    body = dashboard(ready_portal)
    assert shown(body) == ["suspended"]
    assert READY not in body and badge(body) == "Suspended"
    text = callout(body, "suspended")
    assert "ACCOUNT_SUSPENDED" in text and 'href="mailto:no-reply@buyback.example"' in text


@pytest.mark.django_db
def test_missing_payment_methods_show_a_callout_each_with_a_link(portal):
    body = dashboard(portal)
    assert shown(body) == ["payout_method", "credit_card"]
    assert READY not in body and badge(body) == "2 steps left"
    assert 'href="/portal/settings/payment-methods"' in callout(body, "payout_method")
    assert 'href="/portal/settings/payment-methods#credit-card"' in callout(body, "credit_card")
    assert "PAYOUT_METHOD_NOT_CONFIGURED" in callout(body, "credit_card")


@pytest.mark.django_db
def test_suspended_and_missing_methods_show_together_suspension_first(portal):
    Partner.objects.filter(pk=portal.partner.pk).update(status=Partner.Status.SUSPENDED)
    body = dashboard(portal)
    assert shown(body) == ["suspended", "payout_method", "credit_card"]
    assert READY not in body and badge(body) == "Suspended"


@pytest.mark.django_db
def test_declined_latest_charge_asks_to_update_the_card_until_it_is_replaced(
    django_capture_on_commit_callbacks,
):
    login = bare_login("Declined Resale")
    payment_methods_create_sandbox(partner=login.partner, card_number=DECLINED_CARD)
    order = make_order(login.partner)
    with django_capture_on_commit_callbacks(execute=True):
        order_confirm(order_pk=order.pk)
    assert Charge.objects.get(order=order).status == "failed"
    body = dashboard(login)
    assert shown(body) == ["charge_declined"]
    assert READY not in body and badge(body) == "1 step left"
    text = callout(body, "charge_declined")
    assert "Your card was declined." in text
    assert 'href="/portal/settings/payment-methods#credit-card">Update card</a>' in text

    # A new card is the fix: the decline was on the old one.
    with time_machine.travel(timezone.now() + timedelta(seconds=5)):
        payment_methods_create_sandbox(partner=login.partner)
    body = dashboard(login)
    assert shown(body) == [] and READY in body


@pytest.mark.django_db
def test_failed_refund_shows_what_happens_next_never_ready(django_capture_on_commit_callbacks):
    login = bare_login("Refund Resale")
    payment_methods_create_sandbox(partner=login.partner, card_number=REFUND_FAILS_CARD)
    with django_capture_on_commit_callbacks(execute=True):
        order = charged_order(login.partner)
    with django_capture_on_commit_callbacks(execute=True):
        cancel_order(order)
    assert Charge.objects.get(order=order).refund_status == "failed"
    body = dashboard(login)
    assert shown(body) == ["refund_failed"]
    assert READY not in body and badge(body) == "1 step left"
    text = callout(body, "refund_failed")
    assert "1 refund to your card failed." in text and "contact support" in text
    assert 'href="/portal/orders?status=canceled"' in text


@pytest.mark.django_db
def test_failed_payout_points_to_the_failed_payouts_never_ready(django_capture_on_commit_callbacks):
    login = bare_login("Payout Resale")
    payment_methods_create_sandbox(partner=login.partner, account_number=FAILING_ACCOUNT)
    order = make_order(login.partner, status="ticket_received")
    with time_machine.travel(timezone.now(), tick=False) as clock:
        with django_capture_on_commit_callbacks(execute=True):
            payouts_progress()
        clock.shift(timedelta(minutes=10))
        with django_capture_on_commit_callbacks(execute=True):
            payouts_progress()
    assert Payout.objects.get(order=order).status == "failed"
    body = dashboard(login)
    assert shown(body) == ["payout_failed"]
    assert READY not in body and badge(body) == "1 step left"
    text = callout(body, "payout_failed")
    assert "1 payout failed." in text and 'href="/portal/payouts?status=failed"' in text


@pytest.mark.django_db
def test_the_summary_costs_five_queries_whatever_the_history(ready_portal, django_assert_num_queries):
    from payouts.selectors.readiness import readiness_for_dashboard

    for _ in range(3):
        make_order(ready_portal.partner, status="paid")
    with django_assert_num_queries(5):
        readiness = readiness_for_dashboard(partner=ready_portal.partner)
    assert readiness.ready
