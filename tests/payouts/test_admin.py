"""Staff admin: partners with their portal users and masked payment methods, charges, payouts and retries."""

from datetime import timedelta

import pytest
import time_machine
from django.contrib.auth import get_user_model
from django.core import mail
from django.test import Client
from django.utils import timezone

from partners.models import PortalUser
from payouts.models import Payout
from payouts.services import charge_for_order, payment_methods_create_sandbox, payouts_progress
from tests.conftest import make_partner

from .factories import make_order

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
    charge_for_order(order=ok_order)
    charge_for_order(order=declined)
    body = staff.get("/admin/payouts/charge/", {"status__exact": "failed"}).content.decode()
    assert declined.order_id in body and ok_order.order_id not in body
    assert "Your card was declined." in body


@pytest.fixture
def failed_payout(db):
    creds = make_partner(payment_methods=False)
    payment_methods_create_sandbox(partner=creds.partner, account_number="000111111113")
    order = make_order(creds.partner, status="ticket_received")
    payouts_progress()
    with time_machine.travel(timezone.now() + timedelta(hours=1)):
        payouts_progress()
    payout = Payout.objects.get(order=order)
    assert payout.status == "failed"
    return creds, payout


def test_failed_payouts_are_visible_and_retried_by_action(staff, failed_payout):
    creds, payout = failed_payout
    body = staff.get("/admin/payouts/payout/", {"attention": "failed"}).content.decode()
    assert payout.order.order_id in body
    assert "account is closed" in body
    payment_methods_create_sandbox(partner=creds.partner)  # the partner fixed the account
    response = staff.post(
        "/admin/payouts/payout/",
        {"action": "retry_action", "_selected_action": [payout.pk]},
        follow=True,
    )
    assert "1 payout(s) will be retried" in response.content.decode()
    payout.refresh_from_db()
    # The retry runs the progression on commit: the new attempt is already at the platform.
    assert payout.attempt == 2
    assert payout.status in ("pending", "in_process")


def test_retry_button_on_a_failed_payout(staff, failed_payout):
    _, payout = failed_payout
    page = staff.get(f"/admin/payouts/payout/{payout.pk}/change/").content.decode()
    assert "Retry payout" in page
    assert staff.get(f"/admin/payouts/payout/{payout.pk}/retry/").status_code == 302
    payout.refresh_from_db()
    assert payout.status == "failed"  # a GET changes nothing
    staff.post(f"/admin/payouts/payout/{payout.pk}/retry/")
    payout.refresh_from_db()
    assert payout.attempt == 2
    again = staff.post(f"/admin/payouts/payout/{payout.pk}/retry/", follow=True)
    assert "Only a failed payout can be retried." in again.content.decode()


def test_admin_pages_render(staff, failed_payout):
    for path in (
        "/admin/payouts/payout/",
        f"/admin/payouts/payout/{failed_payout[1].pk}/change/",
        "/admin/payouts/charge/",
        "/admin/payouts/sandboxaccount/",
        "/admin/payouts/sandboxcard/",
        "/admin/payouts/sandboxcharge/",
        "/admin/payouts/sandboxpayout/",
    ):
        assert staff.get(path).status_code == 200, path
