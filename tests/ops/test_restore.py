"""The restore drill of docs/operations/backup-and-restore.md, with its commands: a database holding partners,
orders (a pdf one with its ticket file), transfer messages and a staff user is dumped in PostgreSQL's custom
format and its media copied; both are restored into a fresh database and a fresh media folder, and the service
started on them works: the partner's credentials give a token, the order answers, staff download the ticket
file, the transfer message's raw mail reads back."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess

import pytest
from django.contrib.auth import get_user_model
from django.core.files.storage import default_storage
from django.db import connection
from rest_framework.test import APIClient

from orders.models import Order
from orders.transfers.intake.services import message_receive
from orders.transfers.models import InboundMessage
from partners.models import Partner
from tests.conftest import make_partner
from tests.faults.live import BIN, ROOT, Processes, bearer_auth, database_url_of_tests, http, production_env
from tests.orders.conftest import order_form, pdf_upload
from tests.orders.factories import make_order, order_row
from tests.quotes.factories import QuoteFactory

from .conftest import scratch_database

pytestmark = pytest.mark.django_db(transaction=True)

PDF = b"%PDF-1.4\n% restore drill\n1 0 obj<<>>endobj\ntrailer<<>>\n%%EOF\n"


def shell(command: str, env: dict[str, str]) -> str:
    """A command of the page, run as written by a shell."""
    done = subprocess.run(  # noqa: S603
        ["/bin/bash", "-c", command], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, f"{command}\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}"
    return done.stdout


@pytest.fixture
def media(tmp_path, settings):
    """The service's files on disk, in a folder of this test's own."""
    folder = tmp_path / "media"
    folder.mkdir()
    settings.STORAGES = {
        **settings.STORAGES,
        "default": {
            "BACKEND": "django.core.files.storage.FileSystemStorage",
            "OPTIONS": {"location": str(folder), "base_url": None},
        },
    }
    return folder


def test_a_dump_and_the_media_restored_into_a_fresh_database_serve_every_order_file_and_credential(
    tmp_path, media
):
    # --- what the backup holds -------------------------------------------------------------------------------
    creds = make_partner(name="Restored Resale", email="ops@restored.example")
    api = APIClient()
    token = api.post(
        "/v1/auth/token",
        {
            "client_id": creds.client_id,
            "client_secret": creds.client_secret,
            "grant_type": "client_credentials",
        },
        format="json",
    ).json()["data"]["access_token"]
    api.credentials(HTTP_AUTHORIZATION=f"Bearer {token}")
    quote = QuoteFactory(partner=creds.partner, row=order_row(available_quantity=10), quantity=2)
    placed = api.post(
        "/v1/orders",
        order_form(quote, delivery_type="pdf", file=pdf_upload(PDF), is_ready_to_deliver="true"),
        format="multipart",
    )
    assert placed.status_code == 201, placed.content
    pdf_order = Order.objects.get(order_id=placed.json()["data"]["order_id"])
    assert pdf_order.has_ticket_file
    waiting = make_order(creds.partner, status="awaiting_transfer")
    raw = (
        f"From: Sandbox Tickets <transfers@sandbox.invalid>\r\nTo: {waiting.transfer_address}\r\n"
        "Subject: You've been sent 2 tickets\r\n\r\nTickets: 2\r\n"
    ).encode()
    message_receive(raw, recipients=[waiting.transfer_address], channel="smtp", peer="127.0.0.1")
    message = InboundMessage.objects.get(recipient=waiting.transfer_address)
    assert message.raw.name and default_storage.exists(message.raw.name)
    staff = get_user_model().objects.create_superuser("restorer", "restorer@buyback.example", "x" * 20)
    counts = {
        "orders": Order.objects.count(),
        "partners": Partner.objects.count(),
        "messages": InboundMessage.objects.count(),
    }

    # --- the backup, as the page writes it --------------------------------------------------------------------
    backup = tmp_path / "backup"
    backup.mkdir()
    env = {**os.environ, "DATABASE_URL": database_url_of_tests(), "MEDIA_ROOT": str(media)}
    shell(
        "pg_dump --format=custom --no-owner --no-privileges "
        f'--file={backup}/partner-$(date -u +%Y%m%dT%H%MZ).dump "$DATABASE_URL"',
        env,
    )
    (dump,) = backup.glob("partner-*.dump")
    shell(f'rsync -a "$MEDIA_ROOT"/ {backup}/partner-media/', env)

    # --- the restore, into a fresh database and a fresh media folder ----------------------------------------
    with scratch_database("restored") as restored_url:
        name = restored_url.rsplit("/", 1)[1]
        restored_media = tmp_path / "restored-media"
        restored_media.mkdir()
        env = {
            **os.environ,
            "PGHOST": "127.0.0.1",
            "PGPORT": str(connection.settings_dict["PORT"] or 5432),
            "PGUSER": "postgres",
            "DATABASE_URL": restored_url,
            "MEDIA_ROOT": str(restored_media),
        }
        # The scratch database is the page's `createdb partner_restored`.
        shell(f"pg_restore --no-owner --no-privileges --exit-on-error --jobs=4 --dbname={name} {dump}", env)
        shell(f"{BIN}/python manage.py migrate --check", {**env, "DJANGO_ENV": "development"})
        shell(f'rsync -a {backup}/partner-media/ "$MEDIA_ROOT"/', env)

        # --- the service on the restored database and files ---------------------------------------------------
        service = production_env(
            DATABASE_URL=restored_url, MEDIA_ROOT=str(restored_media), ADMIN_REQUIRE_2FA="False"
        )
        processes = Processes(tmp_path)
        try:
            url = processes.web(service)
            auth = bearer_auth(url, creds)
            for order in (pdf_order, waiting):
                answer = http("GET", url + f"/v1/orders/{order.order_id}", headers=auth)
                assert answer.status == 200, answer.body
                assert answer.body["data"]["order_id"] == order.order_id
        finally:
            processes.stop_all()

        # Staff download the ticket file through the admin, and the raw mail reads back, from the restored
        # folder (the service's own code, in a process of the restored deployment).
        probe = f"""
import django, hashlib, json
django.setup()
from django.contrib.auth import get_user_model
from django.core.files.storage import default_storage
from django.db import connection
from django.test import Client
from orders.models import Order
from orders.transfers.models import InboundMessage
from partners.models import Partner
client = Client()
client.force_login(get_user_model().objects.get(pk={staff.pk}))
pdf = client.get("/admin/orders/order/{pdf_order.pk}/ticket.pdf", secure=True)
message = InboundMessage.objects.get(pk={message.pk})
with default_storage.open(message.raw.name, "rb") as handle:
    raw = handle.read()
print(json.dumps({{
    "status": pdf.status_code,
    "pdf": hashlib.sha256(b"".join(pdf.streaming_content)).hexdigest(),
    "raw": hashlib.sha256(raw).hexdigest(),
    "counts": {{"orders": Order.objects.count(), "partners": Partner.objects.count(),
               "messages": InboundMessage.objects.count()}},
}}))
"""
        probed = subprocess.run(  # noqa: S603
            [str(BIN / "python"), "-c", probe],
            cwd=ROOT,
            env={**service, "ALLOWED_HOSTS": "testserver", "DJANGO_SETTINGS_MODULE": "config.settings"},
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert probed.returncode == 0, probed.stderr[-3000:]
        found = json.loads(probed.stdout.strip().splitlines()[-1])
    assert found["status"] == 200
    assert found["pdf"] == hashlib.sha256(PDF).hexdigest()
    assert found["raw"] == message.sha256 == hashlib.sha256(raw).hexdigest()
    assert found["counts"] == counts
