"""Rotating SECRET_KEY (the old key moved to SECRET_KEY_FALLBACKS) keeps everything sealed or signed under it
working: stored webhook signing secrets still sign, stored idempotent answers still replay, list cursors
still read. Without the old key among the fallbacks, they do not."""

import pytest
from django.core.signing import BadSignature
from standardwebhooks import Webhook

from orders.webhooks.models import WebhookEndpoint
from orders.webhooks.signing_secrets import secret_decrypt
from tests.conftest import assert_error
from tests.idempotency.conftest import assert_replay_of, keyed

pytestmark = pytest.mark.django_db
BASE = "/v1/webhook_endpoints"
OLD_KEY = "the-service-key-before-the-rotation-0123456789abcdef"
NEW_KEY = "the-service-key-after-the-rotation-fedcba9876543210"


def _create(client, url, key: str):
    response = client.post(BASE, {"url": url, "event_types": ["*"]}, format="json", **keyed(key))
    assert response.status_code == 201, response.content
    return response


@pytest.fixture
def before_rotation(settings, auth_client, receiver):
    """Two endpoints made under the old key, a replayable creation, and a list cursor signed with it."""
    settings.SECRET_KEY = OLD_KEY
    settings.SECRET_KEY_FALLBACKS = []
    first = _create(auth_client, receiver.url(), "first")
    _create(auth_client, receiver.url("/second"), "second")
    page = auth_client.get(BASE, {"limit": 1}).json()["data"]
    assert page["has_more"] is True
    return first, page["next_cursor"]


def test_after_rotation_old_secrets_still_sign_and_old_answers_still_replay(
    settings, auth_client, receiver, before_rotation, django_capture_on_commit_callbacks
):
    first, cursor = before_rotation
    created = first.json()["data"]
    settings.SECRET_KEY, settings.SECRET_KEY_FALLBACKS = NEW_KEY, [OLD_KEY]

    # The partner's receiver still verifies deliveries with the secret it was given before the rotation.
    with django_capture_on_commit_callbacks(execute=True):
        ping = auth_client.post(f"{BASE}/{created['endpoint_id']}/ping")
    assert ping.status_code == 202, ping.content
    [request] = receiver.requests
    assert Webhook(created["secret"]).verify(request.body, request.headers)["type"] == "webhook.ping"
    # The stored answer replays, secret included; the cursor reads the next page.
    replay = auth_client.post(
        BASE, {"url": receiver.url(), "event_types": ["*"]}, format="json", **keyed("first")
    )
    assert_replay_of(first, replay)
    next_page = auth_client.get(BASE, {"limit": 1, "cursor": cursor})
    assert next_page.status_code == 200, next_page.content
    assert len(next_page.json()["data"]["results"]) == 1
    # A new endpoint is sealed under the new key alone.
    third = _create(auth_client, receiver.url("/third"), "third").json()["data"]
    settings.SECRET_KEY_FALLBACKS = []
    assert (
        secret_decrypt(WebhookEndpoint.objects.get(endpoint_id=third["endpoint_id"]).secret_encrypted)
        == (third["secret"])
    )


def test_without_the_old_key_among_the_fallbacks_nothing_sealed_under_it_opens(
    settings, auth_client, receiver, before_rotation
):
    first, cursor = before_rotation
    endpoint = WebhookEndpoint.objects.get(endpoint_id=first.json()["data"]["endpoint_id"])
    settings.SECRET_KEY, settings.SECRET_KEY_FALLBACKS = NEW_KEY, []
    with pytest.raises(ValueError):
        secret_decrypt(endpoint.secret_encrypted)
    error = assert_error(auth_client.get(BASE, {"limit": 1, "cursor": cursor}), 400, "VALIDATION_ERROR")
    assert error["details"]["field"] == "cursor"
    replay = auth_client.post(
        BASE, {"url": receiver.url(), "event_types": ["*"]}, format="json", **keyed("first")
    )
    assert replay.status_code == 500
    assert first.json()["data"]["secret"].encode() not in replay.content


def test_django_signatures_made_with_the_old_key_still_verify(settings):
    from django.core import signing

    settings.SECRET_KEY, settings.SECRET_KEY_FALLBACKS = OLD_KEY, []
    signed = signing.dumps({"session": "of a portal user"})
    settings.SECRET_KEY, settings.SECRET_KEY_FALLBACKS = NEW_KEY, [OLD_KEY]
    assert signing.loads(signed) == {"session": "of a portal user"}
    settings.SECRET_KEY_FALLBACKS = []
    with pytest.raises(BadSignature):
        signing.loads(signed)
