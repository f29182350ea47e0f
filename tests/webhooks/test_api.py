"""``/v1/webhook_endpoints`` through HTTP: shapes, validation, limits, rotation, ping, deliveries, resend."""

import base64

import pytest
from standardwebhooks import Webhook

from orders.webhooks.models import WebhookDelivery, WebhookEndpoint
from tests.conftest import assert_error
from tests.orders.conftest import narrow_token_client

from .conftest import order_notification

pytestmark = pytest.mark.django_db
BASE = "/v1/webhook_endpoints"


def create(client, url, **body):
    return client.post(BASE, {"url": url, "event_types": ["*"], **body}, format="json")


def test_create_returns_the_endpoint_and_its_secret_once(auth_client, receiver):
    response = create(auth_client, receiver.url(), description="Order sync")
    assert response.status_code == 201, response.content
    data = response.json()["data"]
    assert set(data) == {
        "endpoint_id",
        "url",
        "event_types",
        "description",
        "status",
        "disabled_reason",
        "created_at",
        "livemode",
        "secret",
    }
    assert data["endpoint_id"].startswith("whe_")
    assert (data["url"], data["event_types"], data["description"]) == (receiver.url(), ["*"], "Order sync")
    assert (data["status"], data["disabled_reason"], data["livemode"]) == ("enabled", None, True)
    assert data["created_at"].endswith("Z")
    assert data["secret"].startswith("whsec_")
    assert len(base64.b64decode(data["secret"].removeprefix("whsec_"))) == 32
    # Never again: not in the read, not in the list, and not stored in clear.
    detail = auth_client.get(f"{BASE}/{data['endpoint_id']}").json()["data"]
    assert "secret" not in detail
    assert "secret" not in auth_client.get(BASE).json()["data"]["results"][0]
    stored = WebhookEndpoint.objects.get(endpoint_id=data["endpoint_id"])
    assert data["secret"] not in stored.secret_encrypted
    assert data["secret"].removeprefix("whsec_") not in stored.secret_encrypted


@pytest.mark.parametrize(
    ("body", "field", "issue"),
    [
        ({"event_types": ["order.paid"]}, "event_types.0", "invalid_choice"),
        ({"event_types": []}, "event_types", "required"),
        ({"event_types": ["*", "order.created"]}, "event_types", "invalid"),
        ({"url": "ftp://hooks.example.com/x"}, "url", "invalid"),
        ({"url": "not a url"}, "url", "invalid"),
        ({"url": "http://user:pw@127.0.0.1/x"}, "url", "invalid"),
        ({"url": "https://no-such-host.invalid/hook"}, "url", "unresolvable"),
        ({"description": "x" * 256}, "description", "too_long"),
    ],
)
def test_create_rejects_bad_fields(auth_client, receiver, body, field, issue):
    payload = {"url": receiver.url(), "event_types": ["*"], **body}
    error = assert_error(auth_client.post(BASE, payload, format="json"), 400, "VALIDATION_ERROR")
    assert (error["details"]["field"], error["details"]["issue"]) == (field, issue)
    assert not WebhookEndpoint.objects.exists()


def test_create_requires_url_and_event_types(auth_client):
    error = assert_error(auth_client.post(BASE, {}, format="json"), 400, "VALIDATION_ERROR")
    assert {(e["field"], e["issue"]) for e in error["details"]["errors"]} == {
        ("url", "required"),
        ("event_types", "required"),
    }


@pytest.mark.parametrize(
    "url",
    [
        "https://127.0.0.1/hook",
        "https://10.1.2.3/hook",
        "https://192.168.0.10/hook",
        "https://169.254.169.254/latest/meta-data",
        "https://[::1]/hook",
        "https://[::ffff:10.0.0.1]/hook",
        "https://[fe80::1]/hook",
        "https://0.0.0.0/hook",
        "https://224.0.0.1/hook",
        "https://localhost/hook",
        "https://[64:ff9b::a00:1]/hook",  # NAT64 of 10.0.0.1
        "https://[64:ff9b::808:808]/hook",  # NAT64 of a public address: still the operator's translator
        "https://[64:ff9b:1::a9fe:a9fe]/hook",  # local-use NAT64 of 169.254.169.254
    ],
)
def test_production_refuses_private_targets_at_registration(settings, auth_client, url):
    settings.WEBHOOK_ALLOW_PRIVATE_TARGETS = False
    settings.WEBHOOK_ALLOW_HTTP = False
    error = assert_error(create(auth_client, url), 400, "VALIDATION_ERROR")
    assert error["details"] == {"field": "url", "issue": "not_allowed"}


def test_production_refuses_plain_http(settings, auth_client, receiver):
    settings.WEBHOOK_ALLOW_HTTP = False
    error = assert_error(create(auth_client, receiver.url()), 400, "VALIDATION_ERROR")
    assert error["details"] == {"field": "url", "issue": "not_allowed"}


def test_at_most_ten_endpoints_per_partner_and_mode(auth_client, other_auth_client, receiver):
    for i in range(10):
        assert create(auth_client, receiver.url(f"/{i}")).status_code == 201
    error = assert_error(create(auth_client, receiver.url("/11")), 400, "VALIDATION_ERROR")
    assert error["details"]["field"] == "url"
    assert error["details"]["issue"] == "too_many_endpoints"
    assert error["details"]["max_endpoints"] == 10
    # Another partner's count is its own.
    assert create(other_auth_client, receiver.url("/other")).status_code == 201


def test_list_is_newest_first_with_cursor_pagination(auth_client, receiver):
    ids = [create(auth_client, receiver.url(f"/{i}")).json()["data"]["endpoint_id"] for i in range(3)]
    first = auth_client.get(BASE, {"limit": 2}).json()["data"]
    assert [e["endpoint_id"] for e in first["results"]] == ids[::-1][:2]
    assert first["has_more"] is True
    second = auth_client.get(BASE, {"limit": 2, "cursor": first["next_cursor"]}).json()["data"]
    assert [e["endpoint_id"] for e in second["results"]] == [ids[0]]
    assert (second["has_more"], second["next_cursor"]) == (False, None)
    error = assert_error(auth_client.get(BASE, {"cursor": "nope"}), 400, "VALIDATION_ERROR")
    assert error["details"]["field"] == "cursor"


def test_patch_changes_only_the_fields_sent(auth_client, receiver):
    endpoint_id = create(auth_client, receiver.url(), description="a").json()["data"]["endpoint_id"]
    response = auth_client.patch(
        f"{BASE}/{endpoint_id}", {"event_types": ["order.created"], "status": "disabled"}, format="json"
    )
    assert response.status_code == 200, response.content
    data = response.json()["data"]
    assert (data["event_types"], data["description"], data["url"]) == (["order.created"], "a", receiver.url())
    assert (data["status"], data["disabled_reason"]) == ("disabled", "disabled_by_partner")
    data = auth_client.patch(f"{BASE}/{endpoint_id}", {"status": "enabled"}, format="json").json()["data"]
    assert (data["status"], data["disabled_reason"]) == ("enabled", None)


def test_patch_checks_a_new_url_like_registration(settings, auth_client, receiver):
    endpoint_id = create(auth_client, receiver.url()).json()["data"]["endpoint_id"]
    settings.WEBHOOK_ALLOW_PRIVATE_TARGETS = False
    error = assert_error(
        auth_client.patch(f"{BASE}/{endpoint_id}", {"url": "https://10.0.0.8/x"}, format="json"),
        400,
        "VALIDATION_ERROR",
    )
    assert error["details"] == {"field": "url", "issue": "not_allowed"}
    assert WebhookEndpoint.objects.get(endpoint_id=endpoint_id).url == receiver.url()
    error = assert_error(
        auth_client.patch(f"{BASE}/{endpoint_id}", {"status": "paused"}, format="json"),
        400,
        "VALIDATION_ERROR",
    )
    assert error["details"] == {"field": "status", "issue": "invalid_choice"}


def test_delete_answers_200_with_deleted_true(auth_client, receiver):
    endpoint_id = create(auth_client, receiver.url()).json()["data"]["endpoint_id"]
    response = auth_client.delete(f"{BASE}/{endpoint_id}")
    assert response.status_code == 200
    assert response.json()["data"] == {"endpoint_id": endpoint_id, "deleted": True}
    assert_error(auth_client.get(f"{BASE}/{endpoint_id}"), 404, "WEBHOOK_ENDPOINT_NOT_FOUND")


def test_another_partners_endpoint_is_not_found(auth_client, other_auth_client, receiver):
    endpoint_id = create(auth_client, receiver.url()).json()["data"]["endpoint_id"]
    for method, suffix, body in [
        ("get", "", None),
        ("patch", "", {"status": "disabled"}),
        ("delete", "", None),
        ("post", "/rotate_secret", {}),
        ("post", "/ping", None),
        ("get", "/deliveries", None),
        ("post", "/resend", {"notification_id": "ntf_x"}),
    ]:
        response = getattr(other_auth_client, method)(f"{BASE}/{endpoint_id}{suffix}", body, format="json")
        error = assert_error(response, 404, "WEBHOOK_ENDPOINT_NOT_FOUND")
        assert error["details"] == {"endpoint_id": endpoint_id}
    assert other_auth_client.get(BASE).json()["data"]["results"] == []
    assert WebhookEndpoint.objects.get(endpoint_id=endpoint_id).status == "enabled"


def test_an_endpoint_of_the_other_mode_is_not_found(auth_client, partner, receiver):
    from orders.webhooks import services

    test_endpoint, _ = services.endpoint_create(
        partner_pk=partner.pk, livemode=False, url=receiver.url(), event_types=["*"]
    )
    assert_error(auth_client.get(f"{BASE}/{test_endpoint.endpoint_id}"), 404, "WEBHOOK_ENDPOINT_NOT_FOUND")
    assert auth_client.get(BASE).json()["data"]["results"] == []


def test_rotate_secret_returns_a_new_secret(auth_client, receiver):
    created = create(auth_client, receiver.url()).json()["data"]
    response = auth_client.post(f"{BASE}/{created['endpoint_id']}/rotate_secret", {}, format="json")
    assert response.status_code == 200
    data = response.json()["data"]
    assert data["secret"].startswith("whsec_") and data["secret"] != created["secret"]
    endpoint = WebhookEndpoint.objects.get(endpoint_id=created["endpoint_id"])
    delta = (endpoint.previous_secret_expires_at - endpoint.updated_at).total_seconds()
    assert 86399 <= delta <= 86401  # default grace: 24 hours


@pytest.mark.parametrize("value", [-1, 86401, "soon"])
def test_rotate_secret_validates_the_grace(auth_client, receiver, value):
    endpoint_id = create(auth_client, receiver.url()).json()["data"]["endpoint_id"]
    response = auth_client.post(
        f"{BASE}/{endpoint_id}/rotate_secret", {"expire_previous_in_seconds": value}, format="json"
    )
    error = assert_error(response, 400, "VALIDATION_ERROR")
    assert error["details"]["field"] == "expire_previous_in_seconds"


def test_ping_delivers_a_webhook_ping_whatever_the_event_types(
    auth_client, receiver, django_capture_on_commit_callbacks
):
    created = create(auth_client, receiver.url()).json()["data"]
    endpoint_id = created["endpoint_id"]
    auth_client.patch(f"{BASE}/{endpoint_id}", {"event_types": ["order.created"]}, format="json")
    with django_capture_on_commit_callbacks(execute=True):
        response = auth_client.post(f"{BASE}/{endpoint_id}/ping")
    assert response.status_code == 202
    data = response.json()["data"]
    assert data["notification_id"].startswith("ntf_") and data["delivery_id"].startswith("whd_")
    [request] = receiver.requests
    payload = Webhook(created["secret"]).verify(request.body, request.headers)
    assert payload["type"] == "webhook.ping"
    assert payload["id"] == request.headers["webhook-id"] == data["notification_id"]
    assert payload["data"] == {"endpoint_id": endpoint_id}
    assert payload["livemode"] is True

    rows = auth_client.get(f"{BASE}/{endpoint_id}/deliveries").json()["data"]
    assert rows["has_more"] is False
    [row] = rows["results"]
    assert set(row) == {
        "delivery_id",
        "notification_id",
        "type",
        "attempt",
        "status",
        "response_status",
        "error",
        "duration_ms",
        "attempted_at",
        "next_attempt_at",
    }
    assert row["delivery_id"] == data["delivery_id"] and row["notification_id"] == data["notification_id"]
    assert (row["type"], row["attempt"], row["status"], row["response_status"]) == (
        "webhook.ping",
        1,
        "succeeded",
        200,
    )
    assert row["error"] is None and row["next_attempt_at"] is None
    assert row["attempted_at"].endswith("Z") and isinstance(row["duration_ms"], int)


def test_deliveries_lists_one_row_per_attempt_newest_first(
    auth_client, partner, receiver, django_capture_on_commit_callbacks
):
    from .conftest import Reply

    endpoint_id = create(auth_client, receiver.url()).json()["data"]["endpoint_id"]
    receiver.reply(Reply(status=500))
    with django_capture_on_commit_callbacks(execute=True):
        auth_client.post(f"{BASE}/{endpoint_id}/ping")
    delivery = WebhookDelivery.objects.get()
    from datetime import timedelta

    import time_machine

    from orders.webhooks import services

    with (
        time_machine.travel(delivery.next_attempt_at + timedelta(seconds=61)),
        django_capture_on_commit_callbacks(execute=True),
    ):
        services.deliveries_send_due()
    rows = auth_client.get(f"{BASE}/{endpoint_id}/deliveries").json()["data"]["results"]
    assert [(r["attempt"], r["status"], r["response_status"]) for r in rows] == [
        (2, "succeeded", 200),
        (1, "retrying", 500),
    ]
    assert rows[1]["error"] == "http_error: HTTP 500" and rows[1]["next_attempt_at"].endswith("Z")
    assert rows[0]["delivery_id"] == rows[1]["delivery_id"] == delivery.delivery_id
    page = auth_client.get(f"{BASE}/{endpoint_id}/deliveries", {"limit": 1}).json()["data"]
    assert page["has_more"] is True
    rest = auth_client.get(f"{BASE}/{endpoint_id}/deliveries", {"limit": 1, "cursor": page["next_cursor"]})
    assert [r["attempt"] for r in rest.json()["data"]["results"]] == [1]


def test_resend_delivers_the_notification_again(
    auth_client, partner, receiver, django_capture_on_commit_callbacks
):
    endpoint_id = create(auth_client, receiver.url()).json()["data"]["endpoint_id"]
    notification = order_notification(partner)
    with django_capture_on_commit_callbacks(execute=True):
        response = auth_client.post(
            f"{BASE}/{endpoint_id}/resend", {"notification_id": notification.notification_id}, format="json"
        )
        again = auth_client.post(
            f"{BASE}/{endpoint_id}/resend", {"notification_id": notification.notification_id}, format="json"
        )
    assert response.status_code == again.status_code == 202
    assert response.json()["data"]["notification_id"] == notification.notification_id
    assert response.json()["data"]["delivery_id"] != again.json()["data"]["delivery_id"]
    assert [r.headers["webhook-id"] for r in receiver.requests] == [notification.notification_id] * 2


def test_resend_of_an_unknown_or_foreign_notification_is_not_found(
    auth_client, other_partner_creds, partner, receiver
):
    endpoint_id = create(auth_client, receiver.url()).json()["data"]["endpoint_id"]
    foreign = order_notification(other_partner_creds.partner)
    other_mode = order_notification(partner, livemode=False)
    for notification_id in ["ntf_unknown", foreign.notification_id, other_mode.notification_id]:
        response = auth_client.post(
            f"{BASE}/{endpoint_id}/resend", {"notification_id": notification_id}, format="json"
        )
        error = assert_error(response, 404, "NOTIFICATION_NOT_FOUND")
        assert error["details"] == {"notification_id": notification_id}
    assert not WebhookDelivery.objects.exists()
    error = assert_error(
        auth_client.post(f"{BASE}/{endpoint_id}/resend", {}, format="json"), 400, "VALIDATION_ERROR"
    )
    assert error["details"] == {"field": "notification_id", "issue": "required"}


def test_every_endpoint_needs_the_webhooks_scope(partner, receiver):
    client = narrow_token_client(partner, "events:read quotes:write orders:write")
    for method, path in [
        ("get", BASE),
        ("post", BASE),
        ("get", f"{BASE}/whe_x"),
        ("post", f"{BASE}/whe_x/ping"),
    ]:
        error = assert_error(getattr(client, method)(path, {}, format="json"), 403, "FORBIDDEN")
        assert error["details"] == {"required_scope": "webhooks:write"}


def test_tokens_are_granted_the_webhooks_scope(api_client, partner_creds):
    response = api_client.post(
        "/v1/auth/token",
        {
            "client_id": partner_creds.client_id,
            "client_secret": partner_creds.client_secret,
            "grant_type": "client_credentials",
        },
        format="json",
    )
    assert response.json()["data"]["scope"].split(" ") == [
        "events:read",
        "quotes:write",
        "orders:write",
        "webhooks:write",
    ]


def test_without_a_token_is_401(api_client):
    assert_error(api_client.get(BASE), 401, "UNAUTHORIZED")
