"""The S3 path of ticket PDFs, against a real S3-compatible server (moto in server mode) on a free port."""

import socket

import boto3
import pytest
import requests
from django.contrib.auth import get_user_model
from django.test import Client

from orders.models import Order

from .conftest import order_form, post_order
from .wsgi import write_multipart, wsgi_post

pytestmark = pytest.mark.django_db

BUCKET = "partner-tickets-test"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture
def s3_server():
    from moto.server import ThreadedMotoServer

    port = _free_port()
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    url = f"http://127.0.0.1:{port}"
    # moto keeps its buckets in the process, across servers: start every test from an empty S3.
    requests.post(f"{url}/moto-api/reset", timeout=5)
    try:
        yield url
    finally:
        requests.post(f"{url}/moto-api/reset", timeout=5)
        server.stop()


@pytest.fixture
def s3(settings, s3_server, monkeypatch):
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    client = boto3.client(
        "s3",
        endpoint_url=s3_server,
        aws_access_key_id="testing",
        aws_secret_access_key="testing",
        region_name="us-east-1",
    )
    client.create_bucket(Bucket=BUCKET)
    settings.AWS_STORAGE_BUCKET_NAME = BUCKET
    settings.STORAGES = {
        **settings.STORAGES,
        "default": {
            "BACKEND": "storages.backends.s3.S3Storage",
            "OPTIONS": {
                "bucket_name": BUCKET,
                "endpoint_url": s3_server,
                "access_key": "testing",
                "secret_key": "testing",
                "region_name": "us-east-1",
                "default_acl": "private",
                "querystring_auth": True,
                "file_overwrite": False,
            },
        },
    }
    return client


def test_ticket_pdf_goes_to_s3_under_a_private_unguessable_key(auth_client, quote, s3, tmp_path, settings):
    body = tmp_path / "body"
    size = 9 * 1024 * 1024  # above boto's multipart threshold: the upload streams in parts
    write_multipart(body, list(order_form(quote, delivery_type="pdf").items()), file_size=size)

    response = wsgi_post("/v1/orders", body, token=auth_client.token)

    assert response.status_code == 201, response.content[:300]
    order = Order.objects.get()
    key = order.ticket_file.name
    assert key.startswith("tickets/") and key.endswith(f"/{order.order_id}.pdf")
    assert len(key.split("/")[1]) >= 32
    stored = s3.get_object(Bucket=BUCKET, Key=key)
    assert stored["ContentLength"] == size
    assert stored["Body"].read(5) == b"%PDF-"
    acl = s3.get_object_acl(Bucket=BUCKET, Key=key)
    assert not any(grant["Grantee"].get("URI", "").endswith("AllUsers") for grant in acl["Grants"]), acl[
        "Grants"
    ]
    # Nothing was written to the local media directory.
    assert not (tmp_path / "media").exists() or not any((tmp_path / "media").rglob("*.pdf"))


def test_refused_order_leaves_nothing_in_the_bucket(auth_client, quote, s3):
    from catalog.models import Row

    from .conftest import pdf_upload

    Row.objects.filter(pk=quote.row_id).update(available_quantity=0)
    response = post_order(auth_client, order_form(quote, delivery_type="pdf", file=pdf_upload()))
    assert response.status_code == 422
    assert s3.list_objects_v2(Bucket=BUCKET).get("KeyCount", 0) == 0


def test_staff_download_streams_the_pdf_from_s3(auth_client, quote, s3):
    from .conftest import PDF_BYTES, pdf_upload

    assert (
        post_order(auth_client, order_form(quote, delivery_type="pdf", file=pdf_upload())).status_code == 201
    )
    order = Order.objects.get()
    staff = get_user_model().objects.create_superuser("root", "root@example.com", "pw-long-enough-123")
    client = Client()
    client.force_login(staff)
    response = client.get(f"/admin/orders/order/{order.pk}/ticket.pdf")
    assert response.status_code == 200
    assert response["Content-Type"] == "application/pdf"
    assert b"".join(response.streaming_content) == PDF_BYTES
