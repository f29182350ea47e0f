"""Staff admin: partners with their portal users and masked payment methods, charges, payouts and retries."""

from datetime import timedelta

import pytest
import time_machine
from django.contrib.admin.models import LogEntry
from django.contrib.auth import get_user_model
from django.core import mail
from django.test import Client
from django.utils import timezone

from partners.models import PortalUser
from payouts.models import Charge, Payout
from payouts.services.methods import payment_methods_create_sandbox
from payouts.services.progression import payouts_progress
from tests.confirming import post_confirmed
from tests.conftest import make_partner
from tests.orders.factories import make_order
from tests.payouts.charging import charge_order

pytestmark = pytest.mark.django_db


@pytest.fixture
def staff(db) -> Client:
    user = get_user_model().objects.create_superuser("ops", "ops@service.example", "admin pass 5511")
    client = Client()
    client.force_login(user)
    return client


def test_partner_page_shows_portal_users_and_masked_methods(staff, partner):
    from partners.portal_services import portal_user_invite

    portal_user_invite(partner=partner, email="alice@acme.example", password="long enough pass 1")
    body = staff.get(f"/admin/partners/partner/{partner.pk}/change/").content.decode()
    assert "alice@acme.example" in body
    assert "Sandbox Test Bank ••••6789" in body
    assert "Visa ••••4242" in body
    assert "Invite portal user" in body


def test_staff_invite_sends_a_set_password_link(staff, partner, django_capture_on_commit_callbacks):
    url = f"/admin/partners/partner/{partner.pk}/invite-portal-user/"
    assert staff.get(url).status_code == 200
    with django_capture_on_commit_callbacks(execute=True):
        response = staff.post(url, {"email": "New.Person@Acme.example"})
    assert response.status_code == 302
    assert PortalUser.objects.get(partner=partner).user.email == "new.person@acme.example"
    assert len(mail.outbox) == 1 and "/portal/welcome/" in mail.outbox[0].body
    again = staff.post(url, {"email": "new.person@acme.example"})
    assert "already exists" in again.content.decode()
    assert "valid e-mail" in staff.post(url, {"email": "not-an-email"}).content.decode()


def test_payment_method_admin_pages_are_masked_and_read_only(staff, partner):
    body = staff.get("/admin/payouts/payoutaccount/").content.decode()
    assert "Sandbox Test Bank ••••6789" in body
    assert staff.get("/admin/payouts/payoutaccount/add/").status_code == 403
    assert "Visa ••••4242" in staff.get("/admin/payouts/creditcard/").content.decode()


def test_charges_list_filters_by_state(staff, db):
    good = make_partner(name="Good Co", email="g@good.example")
    bad = make_partner(name="Bad Co", email="b@bad.example", payment_methods=False)
    payment_methods_create_sandbox(partner=bad.partner, card_number="4000000000000002")
    ok_order, declined = make_order(good.partner), make_order(bad.partner)
    charge_order(order=ok_order)
    charge_order(order=declined)
    body = staff.get("/admin/payouts/charge/", {"status__exact": "failed"}).content.decode()
    assert declined.order_id in body and ok_order.order_id not in body
    assert "Your card was declined." in body


@pytest.fixture
def failed_payout(db):
    return make_failed_payout()


def make_failed_payout():
    """A partner whose payout account is closed, and the payout of its order that failed for it."""
    creds = make_partner(payment_methods=False)
    payment_methods_create_sandbox(partner=creds.partner, account_number="000111111113")
    order = make_order(creds.partner, status="ticket_received")
    payouts_progress()
    with time_machine.travel(timezone.now() + timedelta(hours=1)):
        payouts_progress()
    payout = Payout.objects.get(order=order)
    assert payout.status == "failed"
    return creds, payout


def _last_log(payout) -> str:
    return LogEntry.objects.filter(object_id=str(payout.pk)).order_by("-id").first().get_change_message()


def test_failed_payouts_are_visible_and_retried_by_action_after_confirmation(staff, failed_payout):
    creds, payout = failed_payout
    body = staff.get("/admin/payouts/payout/", {"attention": "failed"}).content.decode()
    assert payout.order.order_id in body
    assert "account is closed" in body
    payment_methods_create_sandbox(partner=creds.partner)  # the partner fixed the account
    selection = {"action": "retry_action", "_selected_action": [payout.pk]}

    confirm = staff.post("/admin/payouts/payout/", selection).content.decode()
    assert 'data-testid="confirm-retry"' in confirm and payout.order.order_id in confirm
    assert "attempt number goes up by one" in confirm
    without_reason = post_confirmed(
        staff, "/admin/payouts/payout/", {**selection, "confirmed": "yes", "reason": " "}
    )
    assert "Give a reason" in without_reason.content.decode()
    payout.refresh_from_db()
    assert (payout.attempt, payout.status) == (1, "failed")  # nothing happened yet

    response = post_confirmed(
        staff,
        "/admin/payouts/payout/",
        {**selection, "confirmed": "yes", "reason": "Partner fixed the account"},
        follow=True,
    )
    assert "1 payout(s) will be retried" in response.content.decode()
    payout.refresh_from_db()
    # The retry runs the progression on commit: the new attempt is already at the platform.
    assert payout.attempt == 2
    assert payout.status in ("pending", "in_process")
    assert _last_log(payout) == "Retry requested: Partner fixed the account"


def test_retry_button_on_a_failed_payout_asks_for_confirmation(staff, failed_payout):
    _, payout = failed_payout
    url = f"/admin/payouts/payout/{payout.pk}/retry/"
    page = staff.get(f"/admin/payouts/payout/{payout.pk}/change/").content.decode()
    assert "Retry payout" in page and url in page
    assert staff.get(url).status_code == 302
    confirm = staff.post(url).content.decode()
    assert 'data-testid="confirm-retry"' in confirm and f'action="{url}"' in confirm
    payout.refresh_from_db()
    assert payout.status == "failed"  # a GET or an unconfirmed POST changes nothing
    post_confirmed(staff, url, {"confirmed": "yes", "reason": "Bank confirmed the account"})
    payout.refresh_from_db()
    assert payout.attempt == 2
    assert _last_log(payout) == "Retry requested: Bank confirmed the account"
    again = post_confirmed(staff, url, {"confirmed": "yes", "reason": "again"}, follow=True)
    assert "Only a failed payout can be retried." in again.content.decode()


def test_a_payouts_row_opens_its_read_only_record(staff, failed_payout):
    _, payout = failed_payout
    record = f"/admin/payouts/payout/{payout.pk}/change/"
    listing = staff.get("/admin/payouts/payout/").content.decode()
    assert f'<a href="{record}">{payout.order.order_id}</a>' in listing.replace("?_changelist_filters=", "")
    page = staff.get(record)
    assert page.status_code == 200
    content = page.content.decode()
    assert f'href="/admin/orders/order/{payout.order.pk}/change/"' in content
    assert 'name="_save"' not in content  # read-only


def test_a_charges_row_opens_its_read_only_record(staff, partner):
    order = make_order(partner)
    charge_order(order=order)
    charge = Charge.objects.get(order=order)
    record = f"/admin/payouts/charge/{charge.pk}/change/"
    listing = staff.get("/admin/payouts/charge/").content.decode()
    assert f'<a href="{record}">{order.order_id}</a>' in listing
    content = staff.get(record).content.decode()
    assert "Visa ••••4242" in content or "4242" in content
    assert f'href="/admin/orders/order/{order.pk}/change/"' in content
    assert 'name="_save"' not in content


def test_order_page_shows_its_charge_and_payout(staff, failed_payout):
    _, payout = failed_payout
    order = payout.order
    charge_order(order=order)
    charge = Charge.objects.get(order=order)
    content = staff.get(f"/admin/orders/order/{order.pk}/change/").content.decode()
    assert f'href="/admin/payouts/charge/{charge.pk}/change/"' in content
    assert f'href="/admin/payouts/payout/{payout.pk}/change/"' in content
    assert "••••" + charge.card_last4 in content
    assert "account is closed" in content  # the payout's failure
    assert str(payout.amount) in content and str(charge.amount) in content
    for notification in order.notifications.all():
        assert notification.notification_id in content


def test_admin_pages_render(staff, failed_payout):
    for path in (
        "/admin/payouts/payout/",
        f"/admin/payouts/payout/{failed_payout[1].pk}/change/",
        "/admin/payouts/charge/",
        "/admin/sandbox/sandboxaccount/",
        "/admin/sandbox/sandboxcard/",
        "/admin/sandbox/sandboxcharge/",
        "/admin/sandbox/sandboxpayout/",
    ):
        assert staff.get(path).status_code == 200, path


def _order_log(order) -> str:
    return (
        LogEntry.objects.filter(content_type__model="order", object_id=str(order.pk))
        .order_by("-id")
        .first()
        .get_change_message()
    )


def test_order_page_retries_a_failed_payout_after_confirmation_and_returns_to_the_order(staff, failed_payout):
    creds, payout = failed_payout
    order = payout.order
    page_url, retry_url = (
        f"/admin/orders/order/{order.pk}/change/",
        f"/admin/orders/order/{order.pk}/retry-payout/",
    )
    page = staff.get(page_url).content.decode()
    assert "Retry payout" in page and f'action="{retry_url}"' in page
    assert "Retry refund" not in page and "Cancel order" not in page  # neither applies to this order
    payment_methods_create_sandbox(partner=creds.partner)  # the partner fixed the account

    confirm = staff.post(retry_url).content.decode()
    assert 'data-testid="confirm-retry"' in confirm and f'action="{retry_url}"' in confirm
    assert "attempt number goes up by one" in confirm and f'href="{page_url}"' in confirm
    payout.refresh_from_db()
    assert payout.status == "failed"

    done = post_confirmed(staff, retry_url, {"confirmed": "yes", "reason": "Account fixed"})
    assert done.status_code == 302 and done["Location"] == page_url
    payout.refresh_from_db()
    assert payout.attempt == 2
    assert _last_log(payout) == "Retry requested: Account fixed"
    assert _order_log(order) == "Retry requested: Account fixed"
    again = post_confirmed(staff, retry_url, {"confirmed": "yes", "reason": "again"}, follow=True)
    assert "Only a failed payout can be retried." in again.content.decode()
    payout.refresh_from_db()
    assert payout.attempt == 2


def test_order_page_retries_a_failed_refund_after_confirmation(staff, django_capture_on_commit_callbacks):
    from payouts.lifecycle.confirmation import order_confirm
    from tests.payouts.test_refunds import REFUND_FAILS_CARD, cancel_order

    creds = make_partner(payment_methods=False)
    payment_methods_create_sandbox(partner=creds.partner, card_number=REFUND_FAILS_CARD)
    order = make_order(creds.partner)
    order_confirm(order_pk=order.pk)
    with django_capture_on_commit_callbacks(execute=True):
        cancel_order(order)
    charge = Charge.objects.get(order=order)
    assert (charge.refund_status, charge.refund_attempt) == ("failed", 1)
    page_url, retry_url = (
        f"/admin/orders/order/{order.pk}/change/",
        f"/admin/orders/order/{order.pk}/retry-refund/",
    )
    page = staff.get(page_url).content.decode()
    assert "Retry refund" in page and f'action="{retry_url}"' in page and "Retry payout" not in page

    confirm = staff.post(retry_url).content.decode()
    assert 'data-testid="confirm-retry"' in confirm and "new refund attempt" in confirm
    with django_capture_on_commit_callbacks(execute=True):
        done = post_confirmed(staff, retry_url, {"confirmed": "yes", "reason": "Card reissued"})
    assert done["Location"] == page_url
    charge.refresh_from_db()
    assert charge.refund_attempt == 2  # a new attempt (this card keeps refusing refunds)
    assert _order_log(order) == "Refund retry requested: Card reissued"
