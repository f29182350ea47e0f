"""Signed delivery to a real receiver: Standard Webhooks headers and body, retries, 410, redirects, timeouts."""

from datetime import timedelta

import pytest
import time_machine
from django.core import mail
from django.utils import timezone
from standardwebhooks import Webhook, WebhookVerificationError

from orders.webhooks import sending, services
from orders.webhooks.models import WebhookAttempt, WebhookDelivery, WebhookEndpoint

from .conftest import Reply, order_notification, register

pytestmark = pytest.mark.django_db


def deliver(notification, capture):
    with capture(execute=True):
        return services.notification_fan_out(notification)


def test_delivery_is_signed_per_standard_webhooks_and_verifies(
    partner, receiver, django_capture_on_commit_callbacks
):
    endpoint, secret = register(partner, receiver.url())
    notification = order_notification(partner)

    deliver(notification, django_capture_on_commit_callbacks)

    [request] = receiver.requests
    assert request.path == "/hook"
    assert request.headers["content-type"] == "application/json"
    assert request.headers["webhook-id"] == notification.notification_id
    assert request.headers["webhook-signature"].startswith("v1,")
    assert " " not in request.headers["webhook-signature"]
    payload = Webhook(secret).verify(request.body, request.headers)
    assert list(payload) == ["id", "type", "timestamp", "created_at", "livemode", "data"]
    assert payload["id"] == notification.notification_id
    assert payload["timestamp"] == notification.payload["created_at"]
    assert payload["timestamp"].endswith("Z")
    assert payload["data"] == notification.payload["data"]
    assert payload["data"]["order"]["order_id"] == notification.order.order_id
    delivery = WebhookDelivery.objects.get(endpoint=endpoint)
    assert delivery.state == "succeeded" and delivery.next_attempt_at is None
    [attempt] = delivery.attempts.all()
    assert (attempt.number, attempt.status, attempt.response_status) == (1, "succeeded", 200)
    assert attempt.request_body == request.body.decode()
    assert attempt.response_body_excerpt == '{"ok":true}'


def test_a_wrong_secret_does_not_verify(partner, receiver, django_capture_on_commit_callbacks):
    register(partner, receiver.url())
    deliver(order_notification(partner), django_capture_on_commit_callbacks)
    other_secret = services.secret_generate()
    with pytest.raises(WebhookVerificationError):
        Webhook(other_secret).verify(receiver.requests[0].body, receiver.requests[0].headers)


def test_rotation_signs_with_both_secrets_until_the_previous_one_expires(
    partner, receiver, django_capture_on_commit_callbacks
):
    endpoint, old_secret = register(partner, receiver.url())
    new_secret = services.endpoint_rotate_secret(endpoint=endpoint, expire_previous_in_seconds=3600)
    assert new_secret != old_secret

    deliver(order_notification(partner), django_capture_on_commit_callbacks)
    during = receiver.requests[-1]
    assert len(during.headers["webhook-signature"].split(" ")) == 2
    Webhook(new_secret).verify(during.body, during.headers)
    Webhook(old_secret).verify(during.body, during.headers)

    with time_machine.travel(timezone.now() + timedelta(hours=1, seconds=1)):
        deliver(order_notification(partner), django_capture_on_commit_callbacks)
        after = receiver.requests[-1]
        assert len(after.headers["webhook-signature"].split(" ")) == 1
        Webhook(new_secret).verify(after.body, after.headers)
        with pytest.raises(WebhookVerificationError):
            Webhook(old_secret).verify(after.body, after.headers)


def test_rotation_with_no_grace_drops_the_old_secret_at_once(
    partner, receiver, django_capture_on_commit_callbacks
):
    endpoint, old_secret = register(partner, receiver.url())
    services.endpoint_rotate_secret(endpoint=endpoint, expire_previous_in_seconds=0)
    deliver(order_notification(partner), django_capture_on_commit_callbacks)
    with pytest.raises(WebhookVerificationError):
        Webhook(old_secret).verify(receiver.requests[0].body, receiver.requests[0].headers)


def test_retry_after_a_500_keeps_the_webhook_id_and_signs_afresh(
    partner, receiver, django_capture_on_commit_callbacks
):
    endpoint, secret = register(partner, receiver.url())
    receiver.reply(Reply(status=500, body=b"boom"))
    notification = order_notification(partner)
    start = timezone.now()

    deliver(notification, django_capture_on_commit_callbacks)

    delivery = WebhookDelivery.objects.get(endpoint=endpoint)
    assert delivery.state == "retrying"
    first = delivery.attempts.get()
    assert (first.status, first.response_status, first.error) == ("retrying", 500, "http_error: HTTP 500")
    assert first.response_body_excerpt == "boom"
    # 5 s, plus at most 20 % jitter, counted from the attempt's end (the answer took a few ms).
    delay = (delivery.next_attempt_at - first.attempted_at).total_seconds()
    assert 5 <= delay <= 6 + first.duration_ms / 1000 + 0.05
    assert first.next_attempt_at == delivery.next_attempt_at
    assert len(receiver.requests) == 1  # the early message found nothing due

    with time_machine.travel(start + timedelta(seconds=70)):
        with django_capture_on_commit_callbacks(execute=True):
            services.deliveries_send_due()
        assert len(receiver.requests) == 2
        second = receiver.requests[1]
        assert (
            second.headers["webhook-id"]
            == receiver.requests[0].headers["webhook-id"]
            == notification.notification_id
        )
        assert (
            int(second.headers["webhook-timestamp"])
            >= int(receiver.requests[0].headers["webhook-timestamp"]) + 5
        )
        assert second.headers["webhook-signature"] != receiver.requests[0].headers["webhook-signature"]
        Webhook(secret).verify(second.body, second.headers)
    delivery.refresh_from_db()
    assert delivery.state == "succeeded"
    assert list(delivery.attempts.order_by("number").values_list("number", "status")) == [
        (1, "retrying"),
        (2, "succeeded"),
    ]


def test_410_disables_the_endpoint_at_once(partner, receiver, django_capture_on_commit_callbacks):
    endpoint, _ = register(partner, receiver.url())
    receiver.reply(Reply(status=410))
    deliver(order_notification(partner), django_capture_on_commit_callbacks)

    endpoint.refresh_from_db()
    assert (endpoint.status, endpoint.disabled_reason) == ("disabled", "endpoint_gone")
    delivery = WebhookDelivery.objects.get(endpoint=endpoint)
    assert delivery.state == "failed" and delivery.next_attempt_at is None
    # Later notifications are not sent to it.
    assert services.notification_fan_out(order_notification(partner)) == []
    assert len(receiver.requests) == 1


def test_a_redirect_is_a_failure_and_is_not_followed(partner, receiver, django_capture_on_commit_callbacks):
    register(partner, receiver.url("/hook"))
    receiver.reply(Reply(status=302, headers={"Location": receiver.url("/elsewhere")}))
    deliver(order_notification(partner), django_capture_on_commit_callbacks)

    assert [r.path for r in receiver.requests] == ["/hook"]
    attempt = WebhookAttempt.objects.get()
    assert attempt.status == "retrying"
    assert attempt.response_status == 302
    assert attempt.error.startswith("redirect_not_followed: HTTP 302")


def test_a_timeout_is_a_failure(settings, partner, receiver, django_capture_on_commit_callbacks):
    settings.WEBHOOK_TIMEOUT_SECONDS = 0.5
    register(partner, receiver.url())
    receiver.reply(Reply(status=200, delay=2))
    deliver(order_notification(partner), django_capture_on_commit_callbacks)

    attempt = WebhookAttempt.objects.get()
    assert attempt.status == "retrying"
    assert attempt.response_status is None
    assert attempt.error.startswith("timeout")
    assert 400 <= attempt.duration_ms < 1900


def test_retry_after_on_429_is_honoured_when_longer(partner, receiver, django_capture_on_commit_callbacks):
    register(partner, receiver.url())
    receiver.reply(Reply(status=429, headers={"Retry-After": "120"}))
    deliver(order_notification(partner), django_capture_on_commit_callbacks)
    attempt = WebhookAttempt.objects.get()
    assert 120 <= (attempt.next_attempt_at - attempt.attempted_at).total_seconds() <= 121


def test_retry_schedule_then_the_delivery_fails():
    """After attempt n: 5 s, 5 min, 30 min, 2 h, 5 h, 10 h, 14 h, 20 h, 24 h, each with at most 20 % jitter."""
    expected = [5, 300, 1800, 7200, 18000, 36000, 50400, 72000, 86400]
    assert list(sending.RETRY_DELAYS_SECONDS) == expected
    assert sending.MAX_ATTEMPTS == 10
    for n, base in enumerate(expected, start=1):
        for _ in range(20):
            assert base <= sending.retry_delay_seconds(attempt_number=n) <= base * 1.2


def test_ten_failed_attempts_fail_the_delivery(partner, receiver, django_capture_on_commit_callbacks):
    endpoint, _ = register(partner, receiver.url())
    receiver.default = Reply(status=500)
    at = timezone.now()
    with time_machine.travel(at, tick=False) as clock:
        deliver(order_notification(partner), django_capture_on_commit_callbacks)
        for _ in range(9):
            delivery = WebhookDelivery.objects.get(endpoint=endpoint)
            clock.move_to(delivery.next_attempt_at + timedelta(seconds=61))
            endpoint.failing_since = timezone.now()  # keep the 3-day rule out of this test
            endpoint.save(update_fields=["failing_since"])
            with django_capture_on_commit_callbacks(execute=True):
                services.deliveries_send_due()
    delivery = WebhookDelivery.objects.get(endpoint=endpoint)
    assert len(receiver.requests) == 10
    assert delivery.state == "failed" and delivery.next_attempt_at is None
    statuses = list(delivery.attempts.order_by("number").values_list("status", flat=True))
    assert statuses == ["retrying"] * 9 + ["failed"]
    assert {r.headers["webhook-id"] for r in receiver.requests} == {delivery.notification.notification_id}


def test_three_days_of_failures_disable_the_endpoint_and_email_the_partner(
    partner, receiver, django_capture_on_commit_callbacks
):
    endpoint, _ = register(partner, receiver.url())
    receiver.default = Reply(status=503)
    start = timezone.now()
    with time_machine.travel(start, tick=False) as clock:
        deliver(order_notification(partner), django_capture_on_commit_callbacks)
        endpoint.refresh_from_db()
        assert endpoint.failing_since == start
        clock.move_to(start + timedelta(days=2, hours=23))
        deliver(order_notification(partner), django_capture_on_commit_callbacks)
        endpoint.refresh_from_db()
        assert endpoint.status == "enabled"
        assert mail.outbox == []
        clock.move_to(start + timedelta(days=3, minutes=1))
        deliver(order_notification(partner), django_capture_on_commit_callbacks)

    endpoint.refresh_from_db()
    assert (endpoint.status, endpoint.disabled_reason) == ("disabled", "failing_for_3_days")
    [message] = mail.outbox
    assert message.to == [partner.contact_email]
    assert endpoint.endpoint_id in message.body and endpoint.url in message.body
    assert "No successful delivery for 3 days" in message.body
    # The earlier deliveries, still retrying, end without another request when their attempt comes due.
    sent = len(receiver.requests)
    assert WebhookDelivery.objects.filter(endpoint=endpoint, state="retrying").count() == 2
    with (
        time_machine.travel(start + timedelta(days=4)),
        django_capture_on_commit_callbacks(execute=True),
    ):
        services.deliveries_send_due()
    assert len(receiver.requests) == sent
    assert set(WebhookDelivery.objects.filter(endpoint=endpoint).values_list("state", flat=True)) == {
        "failed"
    }
    assert len(mail.outbox) == 1


def test_a_success_resets_the_three_day_clock(partner, receiver, django_capture_on_commit_callbacks):
    endpoint, _ = register(partner, receiver.url())
    start = timezone.now()
    with time_machine.travel(start, tick=False) as clock:
        receiver.reply(Reply(status=500))
        deliver(order_notification(partner), django_capture_on_commit_callbacks)
        clock.move_to(start + timedelta(days=2))
        deliver(order_notification(partner), django_capture_on_commit_callbacks)  # 200
        endpoint.refresh_from_db()
        assert endpoint.failing_since is None
        clock.move_to(start + timedelta(days=3, hours=1))
        receiver.reply(Reply(status=500))
        deliver(order_notification(partner), django_capture_on_commit_callbacks)
    endpoint.refresh_from_db()
    assert endpoint.status == "enabled"
    assert mail.outbox == []


def test_fan_out_is_idempotent(partner, receiver, django_capture_on_commit_callbacks):
    endpoint, _ = register(partner, receiver.url())
    notification = order_notification(partner)
    first = deliver(notification, django_capture_on_commit_callbacks)
    second = deliver(notification, django_capture_on_commit_callbacks)
    assert len(first) == 1 and second == []
    assert WebhookDelivery.objects.filter(notification=notification, endpoint=endpoint).count() == 1
    assert len(receiver.requests) == 1


def test_fan_out_goes_to_the_subscribed_enabled_endpoints_of_the_partner_and_mode(
    partner, other_partner_creds, receiver, django_capture_on_commit_callbacks
):
    created_only, _ = register(partner, receiver.url("/created"), event_types=["order.created"])
    changes_only, _ = register(partner, receiver.url("/changes"), event_types=["order.status_changed"])
    disabled, _ = register(partner, receiver.url("/disabled"))
    services.endpoint_update(endpoint=disabled, status="disabled")
    register(partner, receiver.url("/test-mode"), livemode=False)
    register(other_partner_creds.partner, receiver.url("/other-partner"))

    deliver(order_notification(partner, type_="order.status_changed"), django_capture_on_commit_callbacks)

    assert [r.path for r in receiver.requests] == ["/changes"]
    assert not WebhookDelivery.objects.filter(endpoint=created_only).exists()


def test_a_lost_message_is_sent_by_the_sweep(
    partner, receiver, monkeypatch, django_capture_on_commit_callbacks
):
    endpoint, _ = register(partner, receiver.url())
    monkeypatch.setattr(services, "delivery_enqueue", lambda **kwargs: False)  # the broker is down
    deliver(order_notification(partner), django_capture_on_commit_callbacks)
    assert receiver.requests == []
    monkeypatch.undo()
    # Just due: left to its own message for a minute, so a busy queue does not fill up with copies.
    assert services.deliveries_send_due() == []
    with (
        time_machine.travel(timezone.now() + timedelta(seconds=61)),
        django_capture_on_commit_callbacks(execute=True),
    ):
        assert len(services.deliveries_send_due()) == 1
    assert len(receiver.requests) == 1
    assert WebhookDelivery.objects.get(endpoint=endpoint).state == "succeeded"


def test_long_retries_get_no_countdown_message_and_are_left_to_the_sweep(monkeypatch):
    published = []
    monkeypatch.setattr(
        services, "_enqueue", lambda name, pk, countdown=None: published.append(countdown) or True
    )
    assert services.delivery_enqueue(delivery_pk=1, countdown=300) is True
    assert services.delivery_enqueue(delivery_pk=1, countdown=7200) is False
    assert published == [300]


def test_an_attempt_left_pending_by_a_dead_worker_is_recorded_and_retried(partner, receiver):
    endpoint, _ = register(partner, receiver.url())
    notification = order_notification(partner)
    [delivery] = services.notification_fan_out(notification)  # no commit hook ran: nothing sent yet
    claim = sending._claim(delivery_pk=delivery.pk)  # the worker claimed it, then died
    assert claim is not None and claim.attempt.status == "pending"
    assert sending.delivery_attempt(delivery_pk=delivery.pk) is None  # still leased
    with time_machine.travel(timezone.now() + timedelta(seconds=sending.lease_seconds() + 1)):
        attempt = sending.delivery_attempt(delivery_pk=delivery.pk)
    assert attempt.number == 2 and attempt.status == "succeeded"
    first = WebhookAttempt.objects.get(delivery=delivery, number=1)
    assert first.status == "failed" and first.error.startswith("worker_lost")


def test_deliveries_of_a_disabled_endpoint_are_not_sent(
    partner, receiver, django_capture_on_commit_callbacks
):
    endpoint, _ = register(partner, receiver.url())
    [delivery] = services.notification_fan_out(order_notification(partner))
    services.endpoint_update(endpoint=endpoint, status="disabled")
    assert sending.delivery_attempt(delivery_pk=delivery.pk) is None
    delivery.refresh_from_db()
    assert delivery.state == "failed" and delivery.last_error.startswith("endpoint_disabled")
    assert receiver.requests == []
    assert WebhookEndpoint.objects.get(pk=endpoint.pk).disabled_reason == "disabled_by_partner"


def test_a_secret_that_no_longer_decrypts_fails_the_attempt_without_sending(
    settings, partner, receiver, django_capture_on_commit_callbacks
):
    register(partner, receiver.url())
    settings.SECRET_KEY = "another-service-key-0123456789-0123456789-0123456789"
    deliver(order_notification(partner), django_capture_on_commit_callbacks)
    assert receiver.requests == []
    attempt = WebhookAttempt.objects.get()
    assert attempt.status == "retrying" and attempt.error.startswith("secret_unreadable")


def test_secrets_survive_a_service_key_rotation_through_the_fallbacks(
    settings, partner, receiver, django_capture_on_commit_callbacks
):
    _, secret = register(partner, receiver.url())
    settings.SECRET_KEY_FALLBACKS = [settings.SECRET_KEY]
    settings.SECRET_KEY = "the-new-service-key-0123456789-0123456789-0123456789"
    deliver(order_notification(partner), django_capture_on_commit_callbacks)
    Webhook(secret).verify(receiver.requests[0].body, receiver.requests[0].headers)
