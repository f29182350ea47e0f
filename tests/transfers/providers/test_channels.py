"""Each provider's inbound webhook, posted exactly as the provider posts it, stores the signed bytes unchanged
(DKIM verifies over the stored row, sha256 the same as the SMTP channel's); a payload without the raw message
is stored without raw bytes; refused basic auth is 401 and a channel not enabled is 404."""

import base64
import hashlib
import json

import pytest
from django.test import Client

from orders.transfers.intake.selectors import raw_read
from orders.transfers.intake.services import message_receive
from orders.transfers.models import InboundMessage

from .conftest import BUCKET, PREFIX
from .signed import (
    basic_auth,
    mailgun_form,
    multipart,
    postmark_json,
    ses_received,
    sns_envelope,
    transfer_mail,
)

pytestmark = pytest.mark.django_db(transaction=True)

SES_URL = "/inbound/amazon_ses/inbound/"
MAILGUN_MIME_URL = "/inbound/mailgun/inbound_mime/"
MAILGUN_PARSED_URL = "/inbound/mailgun/inbound/"
POSTMARK_URL = "/inbound/postmark/inbound/"


def _stored_as_signed(row: InboundMessage, signed: bytes, dkim_signer) -> None:
    stored = raw_read(row)
    assert stored == signed
    assert dkim_signer.verifies(stored)
    assert row.sha256 == hashlib.sha256(signed).hexdigest()
    assert row.size == len(signed)


def _post_ses(client, ses_message, **auth):
    body, headers = sns_envelope(ses_message)
    return client.post(SES_URL, data=body, content_type="text/plain; charset=UTF-8", **headers, **auth)


def test_ses_s3_action_stores_the_object_byte_for_byte(inbound_settings, order, dkim_signer, s3):
    signed = dkim_signer.sign(transfer_mail(order.transfer_address))
    # SES writes its own headers on top of the object (not covered by the signature).
    obj = (
        b"Return-Path: <bounces@tickets.example>\r\nX-SES-Spam-Verdict: PASS\r\nX-SES-Virus-Verdict: PASS\r\n"
    )
    obj += signed
    key = PREFIX + "0a1b2c3d4e5f"
    s3.put_object(Bucket=BUCKET, Key=key, Body=obj)
    action = {
        "type": "S3",
        "topicArn": "arn:aws:sns:us-east-1:123456789012:ses-inbound",
        "bucketName": BUCKET,
        "objectKey": key,
    }

    response = _post_ses(Client(), ses_received(obj, [order.transfer_address], action=action), **basic_auth())

    assert response.status_code == 200, response.content
    row = InboundMessage.objects.get(recipient=order.transfer_address)
    _stored_as_signed(row, obj, dkim_signer)
    assert row.channel == "amazon_ses" and row.peer == "Amazon SES" and row.order_id == order.pk
    assert row.mail_from == "bounces@tickets.example"
    provider = row.verdicts["provider"]
    assert provider["s3_bucket"] == BUCKET and provider["s3_key"] == key
    assert provider["spam"] is False and provider["virus"] is False
    assert (provider["spf"], provider["dkim"], provider["dmarc"]) == ("pass", "pass", "pass")


@pytest.mark.parametrize("encoding", ["UTF8", "BASE64"])
def test_ses_sns_action_stores_the_content_byte_for_byte(inbound_settings, order, dkim_signer, encoding):
    signed = dkim_signer.sign(transfer_mail(order.transfer_address))
    action = {
        "type": "SNS",
        "topicArn": "arn:aws:sns:us-east-1:123456789012:ses-inbound",
        "encoding": encoding,
    }
    ses_message = ses_received(signed, [order.transfer_address], action=action, verdict="FAIL")

    response = _post_ses(Client(), ses_message, **basic_auth())

    assert response.status_code == 200, response.content
    row = InboundMessage.objects.get(recipient=order.transfer_address)
    _stored_as_signed(row, signed, dkim_signer)
    # SES's spam flag is recorded (processing opens a case on it).
    assert row.verdicts["provider"]["spam"] is True


def test_the_same_message_over_smtp_and_a_provider_is_one_row(inbound_settings, order, dkim_signer):
    signed = dkim_signer.sign(transfer_mail(order.transfer_address))
    [smtp] = message_receive(signed, recipients=[order.transfer_address], channel="smtp", peer="127.0.0.1")
    action = {"type": "SNS", "encoding": "BASE64"}

    response = _post_ses(
        Client(), ses_received(signed, [order.transfer_address], action=action), **basic_auth()
    )

    assert response.status_code == 200
    # Same bytes, same sha256: the provider's delivery finds the SMTP channel's row and changes nothing.
    assert list(InboundMessage.objects.values_list("pk", "sha256")) == [
        (smtp.message.pk, smtp.message.sha256)
    ]


def test_mailgun_raw_mime_route(inbound_settings, order, dkim_signer):
    # Past Django's form limit (DATA_UPLOAD_MAX_MEMORY_SIZE, 1 MB), as a message with attachments is.
    filler = b"X-Padding: " + b"a" * 76 + b"\r\n"
    signed = dkim_signer.sign(filler * 16000 + transfer_mail(order.transfer_address))
    assert len(signed) > inbound_settings.DATA_UPLOAD_MAX_MEMORY_SIZE
    body, content_type = multipart(mailgun_form(signed, order.transfer_address))

    response = Client().post(MAILGUN_MIME_URL, data=body, content_type=content_type, **basic_auth())

    assert response.status_code == 200, response.content
    row = InboundMessage.objects.get(recipient=order.transfer_address)
    _stored_as_signed(row, signed, dkim_signer)
    assert row.channel == "mailgun" and row.peer == "Mailgun" and row.mail_from == "bounces@tickets.example"


def test_mailgun_wrong_signature_is_refused(inbound_settings, order, dkim_signer):
    signed = dkim_signer.sign(transfer_mail(order.transfer_address))
    body, content_type = multipart(mailgun_form(signed, order.transfer_address, key="not-the-key"))

    response = Client().post(MAILGUN_MIME_URL, data=body, content_type=content_type, **basic_auth())

    assert response.status_code == 401
    assert not InboundMessage.objects.exists()


def test_mailgun_parsed_route_has_no_raw_message(inbound_settings, order):
    body, content_type = multipart(mailgun_form(None, order.transfer_address))

    response = Client().post(MAILGUN_PARSED_URL, data=body, content_type=content_type, **basic_auth())

    assert response.status_code == 200, response.content
    row = InboundMessage.objects.get(recipient=order.transfer_address)
    assert row.raw.name == "" and raw_read(row) is None and row.size == 0
    assert row.verdicts["provider"]["message_id"]


def test_postmark_raw_email(inbound_settings, order, dkim_signer):
    signed = dkim_signer.sign(transfer_mail(order.transfer_address))

    response = Client().post(
        POSTMARK_URL,
        data=postmark_json(signed, order.transfer_address, spam="Yes"),
        content_type="application/json",
        **basic_auth(),
    )

    assert response.status_code == 200, response.content
    row = InboundMessage.objects.get(recipient=order.transfer_address)
    _stored_as_signed(row, signed, dkim_signer)
    provider = row.verdicts["provider"]
    assert (row.channel, row.peer, row.mail_from) == ("postmark", "Postmark", "bounces@tickets.example")
    assert provider["spam"] is True and provider["spam_score"] == -0.1 and provider["spf"] == "pass"


def test_postmark_without_raw_email_is_stored_without_raw(inbound_settings, order, dkim_signer):
    signed = dkim_signer.sign(transfer_mail(order.transfer_address))
    client = Client()
    for _ in range(2):
        payload = postmark_json(signed, order.transfer_address, include_raw=False)
        assert (
            client.post(
                POSTMARK_URL, data=payload, content_type="application/json", **basic_auth()
            ).status_code
            == 200
        )

    # Two different deliveries (each its own Postmark MessageID): two rows, neither with raw bytes.
    rows = InboundMessage.objects.filter(recipient=order.transfer_address)
    assert rows.count() == 2 and {r.raw.name for r in rows} == {""}


@pytest.mark.parametrize("auth", [{}, basic_auth("anymail:wrong")])
@pytest.mark.parametrize("url", [SES_URL, MAILGUN_MIME_URL, POSTMARK_URL])
def test_refused_basic_auth_is_401(inbound_settings, order, dkim_signer, url, auth):
    signed = dkim_signer.sign(transfer_mail(order.transfer_address))
    client = Client()
    if url == SES_URL:
        action = {"type": "SNS", "encoding": "BASE64"}
        response = _post_ses(client, ses_received(signed, [order.transfer_address], action=action), **auth)
    elif url == MAILGUN_MIME_URL:
        body, content_type = multipart(mailgun_form(signed, order.transfer_address))
        response = client.post(url, data=body, content_type=content_type, **auth)
    else:
        response = client.post(
            url, data=postmark_json(signed, order.transfer_address), content_type="application/json", **auth
        )

    assert response.status_code == 401
    assert not InboundMessage.objects.exists()


@pytest.mark.parametrize("url", [SES_URL, MAILGUN_MIME_URL, MAILGUN_PARSED_URL, POSTMARK_URL])
def test_a_channel_not_enabled_is_not_accepted(inbound_settings, order, dkim_signer, url):
    inbound_settings.INBOUND_CHANNELS = ("smtp",)
    signed = dkim_signer.sign(transfer_mail(order.transfer_address))

    response = Client().post(
        url,
        data=postmark_json(signed, order.transfer_address),
        content_type="application/json",
        **basic_auth(),
    )

    assert response.status_code == 404
    assert not InboundMessage.objects.exists()


def test_the_signal_from_a_provider_not_enabled_is_ignored(inbound_settings, order, dkim_signer):
    """anymail's own view (were its URLs mounted) still sends the signal: the receiver ignores it."""
    from anymail.webhooks.postmark import PostmarkInboundWebhookView
    from django.test import RequestFactory

    inbound_settings.INBOUND_CHANNELS = ("smtp", "mailgun")
    signed = dkim_signer.sign(transfer_mail(order.transfer_address))
    request = RequestFactory().post(
        "/",
        data=postmark_json(signed, order.transfer_address),
        content_type="application/json",
        **basic_auth(),
    )

    assert PostmarkInboundWebhookView.as_view()(request).status_code == 200
    assert not InboundMessage.objects.exists()


def test_a_message_over_the_limit_is_413(inbound_settings, order, dkim_signer):
    inbound_settings.INBOUND_MAX_BYTES = 1000
    signed = dkim_signer.sign(transfer_mail(order.transfer_address))
    assert len(signed) > 1000 and len(postmark_json(signed, order.transfer_address)) < 4000
    response = Client().post(
        POSTMARK_URL,
        data=postmark_json(signed, order.transfer_address),
        content_type="application/json",
        **basic_auth(),
    )
    assert response.status_code == 413
    assert not InboundMessage.objects.exists()


@pytest.mark.parametrize("version", ["1", "2"])
def test_ses_sns_signature_versions_verify(inbound_settings, order, dkim_signer, version):
    signed = dkim_signer.sign(transfer_mail(order.transfer_address))
    action = {"type": "SNS", "encoding": "BASE64"}
    body, headers = sns_envelope(
        ses_received(signed, [order.transfer_address], action=action), version=version
    )
    response = Client().post(SES_URL, data=body, content_type="text/plain", **headers, **basic_auth())
    assert response.status_code == 200
    assert InboundMessage.objects.filter(recipient=order.transfer_address).count() == 1


def _other_message(body):
    ses = json.loads(body["Message"])
    ses["receipt"]["recipients"] = ["ord-attacker@" + ses["receipt"]["recipients"][0].split("@")[1]]
    return {**body, "Message": json.dumps(ses)}


@pytest.mark.parametrize(
    "tamper, topics",
    [
        (_other_message, ()),  # the signed content changed
        (lambda b: {**b, "Signature": base64.b64encode(b"x" * 256).decode()}, ()),
        (lambda b: {**b, "SigningCertURL": "https://sns.us-east-1.attacker.example/cert.pem"}, ()),
        (lambda b: {**b, "SignatureVersion": "3"}, ()),
        (None, ("arn:aws:sns:us-east-1:123456789012:another-topic",)),  # a topic not listed
    ],
)
def test_ses_notifications_not_signed_by_sns_are_refused(
    inbound_settings, order, dkim_signer, tamper, topics
):
    inbound_settings.INBOUND_SES_TOPIC_ARNS = topics
    signed = dkim_signer.sign(transfer_mail(order.transfer_address))
    action = {"type": "SNS", "encoding": "BASE64"}
    body, headers = sns_envelope(ses_received(signed, [order.transfer_address], action=action), tamper=tamper)

    response = Client().post(SES_URL, data=body, content_type="text/plain", **headers, **basic_auth())

    assert response.status_code == 401
    assert not InboundMessage.objects.exists()


def test_anymail_own_ses_view_still_stores_the_object_bytes(inbound_settings, order, dkim_signer, s3):
    """Were anymail's own SES URL mounted (it keeps no bytes), the receiver reads the S3 object itself."""
    from anymail.webhooks.amazon_ses import AmazonSESInboundWebhookView
    from django.test import RequestFactory

    signed = dkim_signer.sign(transfer_mail(order.transfer_address))
    s3.put_object(Bucket=BUCKET, Key=PREFIX + "own", Body=signed)
    action = {"type": "S3", "bucketName": BUCKET, "objectKey": PREFIX + "own"}
    body, headers = sns_envelope(ses_received(signed, [order.transfer_address], action=action))
    request = RequestFactory().post("/", data=body, content_type="text/plain", **headers, **basic_auth())

    assert AmazonSESInboundWebhookView.as_view()(request).status_code == 200
    _stored_as_signed(InboundMessage.objects.get(recipient=order.transfer_address), signed, dkim_signer)


def test_mail_for_no_order_taking_mail_is_dropped(inbound_settings, order, dkim_signer, settings):
    stranger = f"ord-nobody@{settings.ORDER_TRANSFER_ADDRESS_DOMAIN}"
    signed = dkim_signer.sign(transfer_mail(stranger))
    response = Client().post(
        POSTMARK_URL, data=postmark_json(signed, stranger), content_type="application/json", **basic_auth()
    )
    assert response.status_code == 200
    assert not InboundMessage.objects.exists()
