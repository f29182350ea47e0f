"""The providers' doors under attack (docs/operations/receiving-mail.md "Receiving mail"): credentials checked before a byte of
the body is read, SNS certificates only from ``sns.<region>.amazonaws.com`` and a bounded cache of them, one
body limit in nginx, the service and the docs, and the SES bucket sweep surviving a huge object and taking
its recipients from SES's receipt only."""

from __future__ import annotations

import re
import socket
import threading
import time
from datetime import timedelta
from email.utils import format_datetime
from pathlib import Path

import pytest
from django.test import Client
from django.utils import timezone

from orders.transfers.intake import sns
from orders.transfers.intake.providers import ses_sweep, webhook_body_limit
from orders.transfers.models import InboundMessage
from tests.orders.factories import make_order

from .conftest import BUCKET, PREFIX
from .signed import SNS_CERT_URL, basic_auth, ses_received, sns_envelope, sns_key, transfer_mail

pytestmark = pytest.mark.django_db(transaction=True)

ROOT = Path(__file__).resolve().parents[3]
SES_URL = "/inbound/amazon_ses/inbound/"


@pytest.fixture
def http_service():
    """The service's WSGI application on a threaded HTTP server of 127.0.0.1: (host, port)."""
    from socketserver import ThreadingMixIn
    from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server

    from django.core.wsgi import get_wsgi_application

    class Server(ThreadingMixIn, WSGIServer):
        daemon_threads = True

    class Quiet(WSGIRequestHandler):
        def log_message(self, *args):
            pass

    server = make_server("127.0.0.1", 0, get_wsgi_application(), server_class=Server, handler_class=Quiet)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server.server_address
    server.shutdown()
    server.server_close()


@pytest.mark.parametrize("path", [SES_URL, "/inbound/mailgun/inbound_mime/", "/inbound/postmark/inbound/"])
def test_a_webhook_without_credentials_is_401_before_its_body_is_read(inbound_settings, http_service, path):
    """The request announces 40 MiB and sends none of it: the 401 comes at once, from the headers alone."""
    host, port = http_service
    with socket.create_connection((host, port), timeout=10) as sock:
        sock.sendall(
            f"POST {path} HTTP/1.1\r\nHost: {host}\r\nAuthorization: Basic d3Jvbmc6d3Jvbmc=\r\n"
            f"Content-Type: application/json\r\nContent-Length: {webhook_body_limit()}\r\n\r\n".encode()
        )
        started = time.monotonic()
        sock.settimeout(5)
        head = sock.recv(1024)
        waited = time.monotonic() - started
    assert head.split(b" ")[1] == b"401", head[:100]
    assert waited < 5
    assert not InboundMessage.objects.exists()


@pytest.mark.parametrize(
    "url",
    [
        "https://sns.s3-us-west-2.amazonaws.com/cert.pem",  # an S3 bucket named "sns", legacy endpoint
        "https://sns.us-east-1.amazonaws.com.cn/cert.pem",
        "https://sns.us-east-1.amazonaws.com:8443/cert.pem",
        "https://x@sns.us-east-1.amazonaws.com/cert.pem",
        "https://sns.us-east-1.amazonaws.com/cert.pem?x=1",
        "http://sns.us-east-1.amazonaws.com/cert.pem",
    ],
)
def test_a_signing_certificate_anywhere_but_sns_region_amazonaws_com_is_refused(inbound_settings, order, url):
    from tests.transfers.providers.signed import signer

    dkim_signer = signer()
    sns_key()
    # Were the address taken, the notification would verify: the certificate at it is SNS's test key's.
    sns.certificate_trust(url, sns.certificate(SNS_CERT_URL))
    signed = dkim_signer.sign(transfer_mail(order.transfer_address))
    action = {"type": "SNS", "encoding": "BASE64"}
    body, headers = sns_envelope(
        ses_received(signed, [order.transfer_address], action=action),
        tamper=lambda b: {**b, "SigningCertURL": url},
    )
    response = Client().post(SES_URL, data=body, content_type="text/plain", **headers, **basic_auth())
    assert response.status_code == 401
    assert not InboundMessage.objects.exists()


def test_the_signing_certificate_cache_is_bounded():
    sns_key()
    cert = sns.certificate(SNS_CERT_URL)
    try:
        for n in range(sns.CERT_CACHE_SIZE * 3):
            url = f"https://sns.us-east-{n}.amazonaws.com/SimpleNotificationService-{n}.pem"
            sns.certificate_trust(url, cert)
        assert len(sns._certificates) == sns.CERT_CACHE_SIZE
    finally:
        sns.certificate_trust(SNS_CERT_URL, cert)  # the other tests' SNS key (never fetched)


def test_nginx_the_service_and_the_docs_bound_the_webhook_body_with_one_number():
    template = (ROOT / "config/deploy/nginx/nginx.conf.template").read_text()
    location = template[template.index("location /inbound/") :]
    size = re.search(r"client_max_body_size (\d+)m;", location[: location.index("}")]).group(1)
    assert int(size) * 1024 * 1024 == webhook_body_limit()
    docs = (ROOT / "docs/operations/receiving-mail.md").read_text()
    receiving = docs[docs.index("### Receiving mail") : docs.index("### Processing")]
    assert f"{size} MiB" in receiving and f"{webhook_body_limit():,}" in receiving
    assert "11 MB" not in docs[docs.index("### Provider channels") :].split("###")[1]


def _ses_object(order_address: str, *, to: str, received_for: str | None) -> bytes:
    from .signed import signer

    received = (
        f"Received: from mail.tickets.example (mail.tickets.example [192.0.2.1])\r\n"
        f" by inbound-smtp.us-east-1.amazonaws.com with SMTP id 0abc\r\n"
        f" for {received_for};\r\n {format_datetime(timezone.now())}\r\n"
    ).encode()
    head = b"Return-Path: <bounces@tickets.example>\r\n" + (received if received_for else b"")
    return (
        head + b"X-SES-Spam-Verdict: PASS\r\nX-SES-Virus-Verdict: PASS\r\n" + signer().sign(transfer_mail(to))
    )


def test_the_sweep_refuses_a_huge_object_and_goes_on(inbound_settings, order, s3, settings):
    ok = _ses_object(order.transfer_address, to=order.transfer_address, received_for=order.transfer_address)
    settings.INBOUND_MAX_BYTES = len(ok) + 10
    s3.put_object(Bucket=BUCKET, Key=PREFIX + "a-huge", Body=ok + b"x" * 1000)
    s3.put_object(Bucket=BUCKET, Key=PREFIX + "b-fine", Body=ok)
    later = timezone.now() + timedelta(minutes=10)

    assert ses_sweep(now=later) == 1
    assert InboundMessage.objects.get().verdicts["provider"]["s3_key"] == PREFIX + "b-fine"
    assert ses_sweep(now=later) == 0  # the refused key is recorded, not fetched again


def test_the_sweep_takes_recipients_from_ses_receipt_never_from_the_senders_to(
    inbound_settings, order, partner, s3
):
    other = make_order(partner, status="awaiting_transfer")
    # The seller addressed the mail to the order in the To; SES received it for the other address.
    s3.put_object(
        Bucket=BUCKET,
        Key=PREFIX + "for-other",
        Body=_ses_object(
            order.transfer_address, to=order.transfer_address, received_for=other.transfer_address
        ),
    )
    # No SES Received header at all: a To alone names no recipient.
    s3.put_object(
        Bucket=BUCKET,
        Key=PREFIX + "no-receipt",
        Body=_ses_object(order.transfer_address, to=order.transfer_address, received_for=None),
    )
    assert ses_sweep(now=timezone.now() + timedelta(minutes=10)) == 1
    row = InboundMessage.objects.get()
    assert row.recipient == other.transfer_address and row.order_id == other.pk


@pytest.mark.parametrize("line_break", [b"\r", b"\n"], ids=["bare CR", "bare LF"])
def test_a_smuggled_to_posted_by_a_provider_opens_unverifiable_and_moves_nothing(
    inbound_settings, partner, line_break
):
    """A provider cannot refuse at DATA: the genuine signed mail of another order, with an unsigned line on
    top hiding a To of this order behind a bare CR (or LF), is posted over HTTP and nothing is read from it."""
    from orders.transfers.models import TransferCase
    from orders.transfers.pipeline import process
    from orders.transfers.testing import simulator as sandbox
    from tests.transfers.pipeline import conftest as pipeline
    from tests.transfers.pipeline import mail

    from .signed import postmark_json

    order, other = pipeline.transfer_order(partner), pipeline.transfer_order(partner)
    genuine = sandbox.sandbox_sign(mail.compose(other, "transfer_offer", seats=[1, 2]))
    smuggled = b"X-Note: x" + line_break + b"To: " + order.transfer_address.encode() + b"\r\n" + genuine
    response = Client().post(
        "/inbound/postmark/inbound/",
        data=postmark_json(smuggled, order.transfer_address),
        content_type="application/json",
        **basic_auth(),
    )
    assert response.status_code == 200
    message = InboundMessage.objects.get(recipient=order.transfer_address)
    assert process.message_process(message_pk=message.pk) == "case"
    case = TransferCase.objects.get(order=order)
    assert case.kind == "unverifiable" and case.defers_expiry is False
    order.refresh_from_db()
    assert (order.status, order.transfer.state) == ("awaiting_transfer", "none")
