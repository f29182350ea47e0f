"""Sign-in, sign-out, password reset, invitations and the create_portal_user command."""

import json
import re
from io import StringIO

import pytest
from django.contrib.auth import get_user_model
from django.core import mail
from django.core.management import CommandError, call_command
from django.test import Client

from partners.models import PortalUser
from tests.conftest import login_with_password, make_partner
from tests.portal.fixtures import PASSWORD

pytestmark = pytest.mark.django_db


def test_anonymous_visitors_are_sent_to_sign_in(client):
    for path in (
        "/portal/",
        "/portal/orders",
        "/portal/payouts",
        "/portal/settings/payment-methods",
        "/portal/settings/api-credentials",
    ):
        response = client.get(path)
        assert response.status_code == 302
        assert response["Location"] == f"/portal/login?next={path}"


def test_sign_in_with_email_and_password(portal):
    client = Client()
    response = client.post("/portal/login", {"username": "Alice@Acme.example", "password": PASSWORD})
    assert response.status_code == 302
    assert response["Location"] == "/portal/"
    assert "Acme Tickets" in client.get("/portal/").content.decode()


def test_wrong_password_is_refused(portal):
    response = Client().post("/portal/login", {"username": "alice@acme.example", "password": "nope"})
    assert response.status_code == 200
    assert "The e-mail address or the password is not correct." in response.content.decode()


def test_repeated_failures_lock_the_address_for_a_while(portal):
    client = Client()
    for _ in range(10):
        client.post("/portal/login", {"username": "alice@acme.example", "password": "wrong"})
    response = client.post("/portal/login", {"username": "alice@acme.example", "password": PASSWORD})
    assert "Too many failed sign-ins" in response.content.decode()
    assert "_auth_user_id" not in client.session


def test_user_without_a_partner_cannot_sign_in_or_use_the_portal(db):
    get_user_model().objects.create_user(
        "staff@service.example", "staff@service.example", PASSWORD, is_staff=True
    )
    client = Client()
    response = client.post("/portal/login", {"username": "staff@service.example", "password": PASSWORD})
    assert "no access to the partner portal" in response.content.decode()
    login_with_password(
        client, username="staff@service.example", password=PASSWORD
    )  # e.g. signed in through the admin
    response = client.get("/portal/")
    assert response.status_code == 403
    assert "No partner portal access" in response.content.decode()


def test_sign_out_needs_post(portal):
    assert portal.client.get("/portal/logout").status_code == 405
    response = portal.client.post("/portal/logout")
    assert response.status_code == 302
    assert portal.client.get("/portal/").status_code == 302


def _link(message) -> str:
    return re.search(r"https?://\S+", message.body).group(0)


def test_password_reset_mails_a_working_link(portal):
    client = Client()
    response = client.post("/portal/password-reset", {"email": "alice@acme.example"})
    assert response["Location"] == "/portal/password-reset/sent"
    assert len(mail.outbox) == 1
    assert mail.outbox[0].to == ["alice@acme.example"]
    link = _link(mail.outbox[0])
    form = client.get(link, follow=True)
    assert "Choose a new password" in form.content.decode()
    done = client.post(
        form.redirect_chain[-1][0],
        {"new_password1": "a fresh pass 9931", "new_password2": "a fresh pass 9931"},
    )
    assert done["Location"] == "/portal/reset/done"
    assert login_with_password(Client(), username="alice@acme.example", password="a fresh pass 9931")


def test_password_reset_for_unknown_or_non_portal_address_sends_nothing(portal):
    get_user_model().objects.create_user("staff@service.example", "staff@service.example", PASSWORD)
    for email in ("nobody@acme.example", "staff@service.example"):
        response = Client().post("/portal/password-reset", {"email": email})
        assert response.status_code == 302  # same answer: no way to probe for accounts
    assert mail.outbox == []


def test_create_portal_user_with_password_prints_json(db):
    partner = make_partner(payment_methods=False).partner
    out = StringIO()
    call_command(
        "create_portal_user",
        partner.public_id,
        "Carol@Acme.example",
        "--password",
        PASSWORD,
        "--json",
        stdout=out,
    )
    result = json.loads(out.getvalue())
    assert set(result) == {"user_id", "email", "partner_id"}
    assert result["email"] == "carol@acme.example"
    assert result["partner_id"] == partner.public_id
    assert PortalUser.objects.get(user_id=result["user_id"]).partner == partner
    assert mail.outbox == []
    assert login_with_password(Client(), username="carol@acme.example", password=PASSWORD)


def test_create_portal_user_without_password_mails_a_set_password_link(
    db, django_capture_on_commit_callbacks, settings
):
    settings.PUBLIC_BASE_URL = "http://testserver"
    partner = make_partner(payment_methods=False).partner
    out = StringIO()
    with django_capture_on_commit_callbacks(execute=True):
        call_command("create_portal_user", partner.public_id, "dave@acme.example", "--json", stdout=out)
    user_id = json.loads(out.getvalue())["user_id"]
    assert not get_user_model().objects.get(pk=user_id).has_usable_password()
    assert len(mail.outbox) == 1
    message = mail.outbox[0]
    assert message.to == ["dave@acme.example"]
    assert partner.name in message.subject
    link = _link(message)
    assert "/portal/welcome/" in link

    client = Client()
    form = client.get(link, follow=True)
    assert "Welcome to the partner portal" in form.content.decode()
    done = client.post(
        form.redirect_chain[-1][0], {"new_password1": "first pass 7710", "new_password2": "first pass 7710"}
    )
    assert done["Location"] == "/portal/"
    assert partner.name in client.get("/portal/").content.decode()  # signed in right away
    assert "expired" in Client().get(link, follow=True).content.decode()  # the link works once


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["ptn_unknown", "x@y.example"], "No partner"),
        (["{partner}", "alice@acme.example"], "already exists"),
        (["{partner}", "new@acme.example", "--password", "123"], "Password refused"),
    ],
)
def test_create_portal_user_errors(portal, args, message):
    args = [a.replace("{partner}", portal.partner.public_id) for a in args]
    with pytest.raises(CommandError, match=message):
        call_command("create_portal_user", *args, "--json", stdout=StringIO())


def test_failures_from_elsewhere_never_lock_a_user_out(portal):
    # Someone who knows the e-mail address guesses from many addresses (each below the per-address limit)…
    for n in range(12):
        guesser = Client(REMOTE_ADDR=f"203.0.113.{n + 1}")
        guesser.post("/portal/login", {"username": "alice@acme.example", "password": "wrong"})
    # …and from one address until it is refused there.
    guesser = Client(REMOTE_ADDR="203.0.113.200")
    for _ in range(12):
        guesser.post("/portal/login", {"username": "alice@acme.example", "password": "wrong"})
    refused = guesser.post("/portal/login", {"username": "alice@acme.example", "password": PASSWORD})
    assert "_auth_user_id" not in guesser.session
    assert refused.status_code != 302
    # The user, from their own address, still signs in.
    own = Client(REMOTE_ADDR="198.51.100.7")
    response = own.post("/portal/login", {"username": "alice@acme.example", "password": PASSWORD})
    assert response.status_code == 302, response.content[:300]
    assert response["Location"] == "/portal/"
