"""A transfer e-mail that arrives through a provider gets the same decision as over SMTP: the sandbox
platform's mail, signed with the sandbox key, decided by ``orders.transfers.pipeline.process.message_process`` with
the service's own authentication; a provider payload without the raw message opens ``unverifiable``."""

import pytest
from django.test import Client

from orders.models import Order
from orders.transfers.intake.services import message_receive
from orders.transfers.models import InboundMessage, TransferCase
from orders.transfers.pipeline import process
from orders.transfers.testing import simulator as sandbox
from tests.transfers.pipeline import conftest as pipeline
from tests.transfers.pipeline import mail

from .conftest import BUCKET, PREFIX
from .signed import basic_auth, mailgun_form, multipart, postmark_json, ses_received, sns_envelope

S, TS = Order.Status, Order.TransferState
pytestmark = pytest.mark.django_db(transaction=True)


def deliver(channel: str, raw: bytes, order, request) -> InboundMessage:
    to = order.transfer_address
    client = Client()
    if channel == "smtp":
        message_receive(raw, recipients=[to], channel="smtp", peer="127.0.0.1")
    elif channel == "amazon_ses_sns":
        body, headers = sns_envelope(ses_received(raw, [to], action={"type": "SNS", "encoding": "BASE64"}))
        response = client.post(
            "/inbound/amazon_ses/inbound/", data=body, content_type="text/plain", **headers, **basic_auth()
        )
        assert response.status_code == 200
    elif channel == "amazon_ses_s3":
        s3 = request.getfixturevalue("s3")
        key = PREFIX + to
        s3.put_object(Bucket=BUCKET, Key=key, Body=raw)
        action = {"type": "S3", "bucketName": BUCKET, "objectKey": key}
        body, headers = sns_envelope(ses_received(raw, [to], action=action))
        response = client.post(
            "/inbound/amazon_ses/inbound/", data=body, content_type="text/plain", **headers, **basic_auth()
        )
        assert response.status_code == 200
    elif channel == "mailgun":
        body, content_type = multipart(mailgun_form(raw, to))
        response = client.post(
            "/inbound/mailgun/inbound_mime/", data=body, content_type=content_type, **basic_auth()
        )
        assert response.status_code == 200
    elif channel == "postmark":
        response = client.post(
            "/inbound/postmark/inbound/",
            data=postmark_json(raw, to),
            content_type="application/json",
            **basic_auth(),
        )
        assert response.status_code == 200
    return InboundMessage.objects.get(recipient=to)


def decision(channel: str, variant: str, partner, request) -> tuple:
    order = pipeline.transfer_order(partner, quantity=2)
    row = "B" if variant == "wrong_row" else None
    raw = sandbox.sandbox_sign(mail.compose(order, "transfer_offer", seats=[1, 2], row=row))
    message = deliver(channel, raw, order, request)
    outcome = process.message_process(message_pk=message.pk)
    message.refresh_from_db()
    order.refresh_from_db()
    return outcome, message.authentic, order.status, order.transfer.state, order.transfer.quantity_detected


@pytest.mark.parametrize("variant, expected", [("match", "matched"), ("wrong_row", "case")])
@pytest.mark.parametrize("channel", ["amazon_ses_sns", "amazon_ses_s3", "mailgun", "postmark"])
def test_a_provider_gives_the_same_decision_as_smtp(
    inbound_settings, partner, request, channel, variant, expected
):
    over_smtp = decision("smtp", variant, partner, request)
    over_provider = decision(channel, variant, partner, request)

    assert over_provider == over_smtp
    assert over_provider[:2] == (expected, True)
    if variant == "match":
        assert over_provider[2:4] == (S.TICKET_RECEIVED, TS.DETECTED)
    else:
        assert over_provider[2:4] == (S.AWAITING_TRANSFER, TS.MISMATCH)


@pytest.mark.parametrize("channel", ["mailgun_parsed", "postmark_without_raw"])
def test_a_payload_without_the_raw_message_opens_unverifiable(inbound_settings, partner, channel):
    order = pipeline.transfer_order(partner, quantity=2)
    raw = sandbox.sandbox_sign(mail.compose(order, "transfer_offer", seats=[1, 2]))
    client = Client()
    if channel == "mailgun_parsed":
        body, content_type = multipart(mailgun_form(None, order.transfer_address))
        response = client.post(
            "/inbound/mailgun/inbound/", data=body, content_type=content_type, **basic_auth()
        )
    else:
        payload = postmark_json(raw, order.transfer_address, include_raw=False)
        response = client.post(
            "/inbound/postmark/inbound/", data=payload, content_type="application/json", **basic_auth()
        )
    assert response.status_code == 200
    message = InboundMessage.objects.get(recipient=order.transfer_address)

    assert process.message_process(message_pk=message.pk) == "case"
    order.refresh_from_db()
    assert (order.status, order.transfer.state) == (S.AWAITING_TRANSFER, TS.NONE)
    case = TransferCase.objects.get(order=order)
    assert case.kind == TransferCase.Kind.UNVERIFIABLE and case.state == TransferCase.State.OPEN


@pytest.mark.parametrize("channel", ["amazon_ses_virus", "postmark_spam"])
def test_a_provider_flag_opens_a_case_instead_of_moving_the_order(inbound_settings, partner, channel):
    order = pipeline.transfer_order(partner, quantity=2)
    raw = sandbox.sandbox_sign(mail.compose(order, "transfer_offer", seats=[1, 2]))
    to = order.transfer_address
    if channel == "amazon_ses_virus":
        action = {"type": "SNS", "encoding": "BASE64"}
        body, headers = sns_envelope(ses_received(raw, [to], action=action, virus="FAIL"))
        response = Client().post(
            "/inbound/amazon_ses/inbound/", data=body, content_type="text/plain", **headers, **basic_auth()
        )
    else:
        response = Client().post(
            "/inbound/postmark/inbound/",
            data=postmark_json(raw, to, spam="Yes"),
            content_type="application/json",
            **basic_auth(),
        )
    assert response.status_code == 200
    message = InboundMessage.objects.get(recipient=to)

    assert process.message_process(message_pk=message.pk) == "case"
    order.refresh_from_db()
    assert order.status == S.AWAITING_TRANSFER
    assert TransferCase.objects.get(order=order).kind == TransferCase.Kind.UNVERIFIED
