import socket

import boto3
import pytest
import requests

from tests.orders.factories import make_order

from .signed import MAILGUN_KEY, WEBHOOK_SECRET, signer

BUCKET = "ses-inbound-test"
PREFIX = "inbound/"


@pytest.fixture
def inbound_settings(settings):
    settings.INBOUND_CHANNELS = ("smtp", "amazon_ses", "mailgun", "postmark")
    settings.ANYMAIL = {
        "WEBHOOK_SECRET": [WEBHOOK_SECRET],
        "MAILGUN_WEBHOOK_SIGNING_KEY": MAILGUN_KEY,
        "AMAZON_SES_CLIENT_PARAMS": {"region_name": "us-east-1"},
    }
    return settings


@pytest.fixture
def order(partner):
    return make_order(partner, status="awaiting_transfer")


@pytest.fixture(scope="module")
def dkim_signer():
    return signer()


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture
def s3(inbound_settings, monkeypatch):
    """A real S3 API (moto in server mode) with SES's inbound bucket; anymail and the sweeper reach it through
    AMAZON_SES_CLIENT_PARAMS' endpoint."""
    from moto.server import ThreadedMotoServer

    port = _free_port()
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    url = f"http://127.0.0.1:{port}"
    requests.post(f"{url}/moto-api/reset", timeout=5)
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    inbound_settings.ANYMAIL = {
        **inbound_settings.ANYMAIL,
        "AMAZON_SES_CLIENT_PARAMS": {"region_name": "us-east-1", "endpoint_url": url},
    }
    inbound_settings.INBOUND_SES_BUCKET = BUCKET
    inbound_settings.INBOUND_SES_PREFIX = PREFIX
    client = boto3.client("s3", endpoint_url=url, region_name="us-east-1")
    client.create_bucket(Bucket=BUCKET)
    try:
        yield client
    finally:
        client.close()
        requests.post(f"{url}/moto-api/reset", timeout=5)
        server.stop()
