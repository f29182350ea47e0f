"""The SES bucket sweep: an S3 object whose SNS notification never arrived is stored anyway (once), and an
object already stored through the webhook, or too young or too old, is left alone. S3 is moto's server."""

from datetime import timedelta
from email.utils import format_datetime

import environ
import pytest
from django.core.exceptions import ImproperlyConfigured
from django.test import Client
from django.utils import timezone

from config.settings_parts.beat import inbound_beat_schedule
from config.settings_parts.inbound import anymail_settings
from orders.transfers.intake.providers import ses_sweep
from orders.transfers.intake.selectors import raw_read
from orders.transfers.models import InboundMessage
from orders.transfers.tasks import ses_sweep as ses_sweep_task

from .conftest import BUCKET, PREFIX
from .signed import basic_auth, ses_received, sns_envelope, transfer_mail

pytestmark = pytest.mark.django_db(transaction=True)


def ses_headers(recipient: str) -> bytes:
    """What SES writes on top of the object: its own Received header names the envelope recipient."""
    return (
        b"Return-Path: <bounces@tickets.example>\r\n"
        b"Received: from mail.tickets.example (mail.tickets.example [192.0.2.1])\r\n"
        b" by inbound-smtp.us-east-1.amazonaws.com with SMTP id 0abc\r\n"
        b" for " + recipient.encode() + b";\r\n " + format_datetime(timezone.now()).encode() + b"\r\n"
        b"Received-SPF: pass (spfCheck: domain of tickets.example designates 192.0.2.1 as permitted sender)\r\n"
        b"X-SES-Spam-Verdict: PASS\r\n"
        b"X-SES-Virus-Verdict: FAIL\r\n"
    )


def _later():
    """The sweep's clock: past the grace SNS is given to deliver the notification."""
    return timezone.now() + timedelta(minutes=10)


def test_an_object_without_its_notification_is_stored_once(order, dkim_signer, s3):
    obj = ses_headers(order.transfer_address) + dkim_signer.sign(transfer_mail(order.transfer_address))
    s3.put_object(Bucket=BUCKET, Key=PREFIX + "lost", Body=obj)
    s3.put_object(Bucket=BUCKET, Key="elsewhere/other", Body=obj + b"\r\n")  # outside the prefix

    assert ses_sweep(now=_later()) == 1

    row = InboundMessage.objects.get()
    assert raw_read(row) == obj and dkim_signer.verifies(raw_read(row))
    assert (row.channel, row.recipient, row.order_id) == ("amazon_ses", order.transfer_address, order.pk)
    assert row.mail_from == "bounces@tickets.example"
    provider = row.verdicts["provider"]
    assert provider["swept"] is True and provider["s3_key"] == PREFIX + "lost"
    assert provider["virus"] is True and provider["spam"] is False and provider["spf"] == "pass"
    # Again, and again with the marker gone: the recorded key finds the row.
    assert ses_sweep(now=_later()) == 0
    from django.core.cache import cache

    cache.clear()
    assert ses_sweep(now=_later()) == 0
    assert InboundMessage.objects.count() == 1


def test_an_object_stored_through_the_webhook_is_not_stored_again(order, dkim_signer, s3):
    obj = ses_headers(order.transfer_address) + dkim_signer.sign(transfer_mail(order.transfer_address))
    s3.put_object(Bucket=BUCKET, Key=PREFIX + "notified", Body=obj)
    action = {"type": "S3", "bucketName": BUCKET, "objectKey": PREFIX + "notified"}
    body, headers = sns_envelope(ses_received(obj, [order.transfer_address], action=action))
    response = Client().post(
        "/inbound/amazon_ses/inbound/", data=body, content_type="text/plain", **headers, **basic_auth()
    )
    assert response.status_code == 200

    assert ses_sweep(now=_later()) == 0
    assert InboundMessage.objects.count() == 1


def test_the_same_bytes_under_another_key_are_found_by_sha256(order, dkim_signer, s3):
    obj = ses_headers(order.transfer_address) + dkim_signer.sign(transfer_mail(order.transfer_address))
    action = {"type": "SNS", "encoding": "BASE64"}
    body, headers = sns_envelope(ses_received(obj, [order.transfer_address], action=action))
    assert (
        Client()
        .post("/inbound/amazon_ses/inbound/", data=body, content_type="text/plain", **headers, **basic_auth())
        .status_code
        == 200
    )
    s3.put_object(Bucket=BUCKET, Key=PREFIX + "copy", Body=obj)

    assert ses_sweep(now=_later()) == 0
    assert InboundMessage.objects.count() == 1


def test_young_and_old_objects_are_left_alone(order, dkim_signer, s3):
    s3.put_object(
        Bucket=BUCKET,
        Key=PREFIX + "young",
        Body=ses_headers(order.transfer_address) + dkim_signer.sign(transfer_mail(order.transfer_address)),
    )

    assert ses_sweep(now=timezone.now()) == 0  # its notification may still be on its way
    assert ses_sweep(now=timezone.now() + timedelta(days=3)) == 0  # past the sweep's window
    assert not InboundMessage.objects.exists()
    assert ses_sweep(now=_later()) == 1


def test_the_sweep_does_nothing_unless_amazon_ses_is_enabled(order, dkim_signer, s3, inbound_settings):
    s3.put_object(
        Bucket=BUCKET, Key=PREFIX + "m", Body=dkim_signer.sign(transfer_mail(order.transfer_address))
    )
    inbound_settings.INBOUND_CHANNELS = ("smtp", "postmark")
    assert ses_sweep_task() == 0
    inbound_settings.INBOUND_CHANNELS = ("smtp", "amazon_ses")
    inbound_settings.INBOUND_SES_BUCKET = ""
    assert ses_sweep_task() == 0
    assert not InboundMessage.objects.exists()


def test_the_beat_runs_the_sweep_only_for_an_enabled_bucket():
    assert inbound_beat_schedule(channels=("smtp",), ses_bucket="b") == {}
    assert inbound_beat_schedule(channels=("smtp", "amazon_ses"), ses_bucket="") == {}
    entry = inbound_beat_schedule(channels=("amazon_ses",), ses_bucket="b")["transfers-ses-sweep"]
    assert entry["task"] == "orders.transfers.tasks.ses_sweep"


@pytest.mark.parametrize(
    "environment, error",
    [
        ({"DJANGO_ENV": "production"}, None),
        ({"DJANGO_ENV": "production", "INBOUND_CHANNELS": "smtp,postmark"}, "INBOUND_WEBHOOK_SECRET"),
        (
            {"DJANGO_ENV": "production", "INBOUND_CHANNELS": "mailgun", "INBOUND_WEBHOOK_SECRET": "a:b"},
            "MAILGUN_WEBHOOK_SIGNING_KEY",
        ),
        ({"DJANGO_ENV": "development", "INBOUND_CHANNELS": "postmark"}, None),
        (
            {"DJANGO_ENV": "production", "INBOUND_CHANNELS": "amazon_ses", "INBOUND_WEBHOOK_SECRET": "a:b"},
            None,
        ),
    ],
)
def test_production_requires_the_webhook_secret_for_a_provider_channel(monkeypatch, environment, error):
    for name in ("INBOUND_CHANNELS", "INBOUND_WEBHOOK_SECRET", "MAILGUN_WEBHOOK_SIGNING_KEY"):
        monkeypatch.delenv(name, raising=False)
    for name, value in environment.items():
        monkeypatch.setenv(name, value)
    env = environ.Env()
    channels = tuple(env.list("INBOUND_CHANNELS", default=["smtp"]))
    if error:
        with pytest.raises(ImproperlyConfigured, match=error):
            anymail_settings(env, channels)
    else:
        assert anymail_settings(env, channels)["WEBHOOK_SECRET"] == env.list(
            "INBOUND_WEBHOOK_SECRET", default=[]
        )
