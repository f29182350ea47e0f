"""Settings → Webhooks in the portal: every POST redirects, a secret is shown once, deliveries are visible."""

import pytest
from standardwebhooks import Webhook

from orders.webhooks.models import WebhookDelivery, WebhookEndpoint
from orders.webhooks.signing_secrets import secret_decrypt
from tests.portal.fixtures import portal_login

from .conftest import Reply, order_notification, register

pytestmark = pytest.mark.django_db
LIST = "/portal/settings/webhooks/"


@pytest.fixture
def acme():
    return portal_login(name="Acme Tickets", email="alice@acme.example", payment_methods=True)


@pytest.fixture
def other():
    return portal_login(name="Other Resale Co", email="bob@other.example", payment_methods=True)


def add(client, url, types=("*",), description=""):
    return client.post(LIST + "add", {"url": url, "event_types": list(types), "description": description})


def test_add_redirects_to_the_secret_which_is_shown_once(acme, receiver):
    response = add(acme.client, receiver.url(), description="Order sync")
    endpoint = WebhookEndpoint.objects.get(partner=acme.partner)
    assert response.status_code == 302
    assert response["Location"] == f"{LIST}{endpoint.endpoint_id}/secret"
    page = acme.client.get(response["Location"])
    assert page.status_code == 200
    assert page["Cache-Control"] == "no-store"
    html = page.content.decode()
    secret = html.split('data-testid="webhook-secret">', 1)[1].split("<", 1)[0]
    assert secret.startswith("whsec_")
    assert secret_decrypt(endpoint.secret_encrypted) == secret
    reload = acme.client.get(response["Location"])
    assert secret not in reload.content.decode()
    assert 'data-testid="secret-already-shown"' in reload.content.decode()
    assert WebhookEndpoint.objects.filter(partner=acme.partner).count() == 1


def test_a_refused_url_comes_back_with_its_error_after_a_redirect(settings, acme):
    settings.WEBHOOK_ALLOW_PRIVATE_TARGETS = False
    response = add(acme.client, "https://10.0.0.5/hook")
    assert response.status_code == 302 and response["Location"] == LIST
    page = acme.client.get(LIST).content.decode()
    assert "non-public address" in page
    assert "https://10.0.0.5/hook" in page
    assert not WebhookEndpoint.objects.exists()
    # A reload does not repeat the error.
    assert "non-public address" not in acme.client.get(LIST).content.decode()


def test_list_shows_only_the_own_partners_endpoints(acme, other, receiver):
    mine, _ = register(acme.partner, receiver.url("/mine"))
    theirs, _ = register(other.partner, receiver.url("/theirs"))
    page = acme.client.get(LIST).content.decode()
    assert mine.endpoint_id in page and theirs.endpoint_id not in page
    for suffix in ["", "/secret"]:
        assert acme.client.get(f"{LIST}{theirs.endpoint_id}{suffix}").status_code == 404
    for action in ["status", "rotate", "ping", "resend", "delete"]:
        assert (
            acme.client.post(f"{LIST}{theirs.endpoint_id}/{action}", {"status": "disabled"}).status_code
            == 404
        )
    theirs.refresh_from_db()
    assert theirs.status == "enabled"
    assert not WebhookDelivery.objects.exists()


def test_disable_enable_ping_rotate_resend_and_delete_each_redirect(
    acme, receiver, django_capture_on_commit_callbacks
):
    endpoint, secret = register(acme.partner, receiver.url())
    detail = f"{LIST}{endpoint.endpoint_id}"

    response = acme.client.post(f"{detail}/status", {"status": "disabled"})
    assert (response.status_code, response["Location"]) == (302, detail)
    endpoint.refresh_from_db()
    assert endpoint.status == "disabled"
    acme.client.post(f"{detail}/status", {"status": "enabled"})
    endpoint.refresh_from_db()
    assert endpoint.status == "enabled"

    with django_capture_on_commit_callbacks(execute=True):
        response = acme.client.post(f"{detail}/ping")
    assert (response.status_code, response["Location"]) == (302, detail)
    [request] = receiver.requests
    assert Webhook(secret).verify(request.body, request.headers)["type"] == "webhook.ping"
    # The page after the redirect, and its reload, send nothing more.
    acme.client.get(detail)
    acme.client.get(detail)
    assert len(receiver.requests) == 1

    response = acme.client.post(f"{detail}/rotate", {"expire_previous_in_seconds": "3600"})
    assert response["Location"] == f"{detail}/secret"
    html = acme.client.get(response["Location"]).content.decode()
    new_secret = html.split('data-testid="webhook-secret">', 1)[1].split("<", 1)[0]
    assert new_secret.startswith("whsec_") and new_secret != secret

    notification = order_notification(acme.partner)
    with django_capture_on_commit_callbacks(execute=True):
        response = acme.client.post(f"{detail}/resend", {"notification_id": notification.notification_id})
    assert response["Location"] == detail
    assert receiver.requests[-1].headers["webhook-id"] == notification.notification_id
    Webhook(new_secret).verify(receiver.requests[-1].body, receiver.requests[-1].headers)
    Webhook(secret).verify(receiver.requests[-1].body, receiver.requests[-1].headers)

    response = acme.client.post(f"{detail}/resend", {"notification_id": "ntf_nope"})
    assert response["Location"] == detail
    assert "No notification with this notification_id" in acme.client.get(detail).content.decode()

    response = acme.client.post(f"{detail}/delete")
    assert (response.status_code, response["Location"]) == (302, LIST)
    assert not WebhookEndpoint.objects.exists()


def test_detail_shows_each_attempt_with_request_response_and_timing(
    acme, receiver, django_capture_on_commit_callbacks
):
    endpoint, _ = register(acme.partner, receiver.url())
    receiver.reply(Reply(status=500, body=b"upstream exploded"))
    notification = order_notification(acme.partner)
    with django_capture_on_commit_callbacks(execute=True):
        from orders.webhooks import services

        services.notification_fan_out(notification)
    html = acme.client.get(f"{LIST}{endpoint.endpoint_id}").content.decode()
    assert notification.notification_id in html
    assert "HTTP 500" in html and "upstream exploded" in html
    assert notification.order.order_id in html  # the request body
    assert " ms<" in html


def test_gets_and_posts_need_a_signed_in_partner_user(client):
    response = client.get(LIST)
    assert response.status_code == 302 and "/portal/login" in response["Location"]
    assert client.post(LIST + "add", {"url": "https://x.example"}).status_code == 302
    assert not WebhookEndpoint.objects.exists()
