"""The receivers of docs/partners/notifications-and-webhooks.md "Verifying a delivery", as printed there (each
language's Standard Webhooks library and the plain-crypto version beside it): the Node.js ones run with Debian's
node and the standardwebhooks package the project installs (docs/partners/samples/node), the Python ones in this
process. A real delivery of the service verifies, also during a secret rotation, and a tampered, re-timed or
unsigned copy of it is refused."""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from orders.webhooks.models import WebhookDelivery
from tests.faults.live import free_port, wait_for

ROOT = Path(__file__).resolve().parents[2]
GUIDE = ROOT / "docs/partners/notifications-and-webhooks.md"
NODE_MODULES = ROOT / "docs" / "partners" / "samples" / "node" / "node_modules"

pytestmark = pytest.mark.django_db


def node_samples() -> list[str]:
    section = GUIDE.read_text().split("\n## Verifying a delivery\n", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"^```js\n(.*?)^```$", section, flags=re.S | re.M)


def test_the_guide_shows_a_library_and_a_plain_crypto_receiver():
    library, plain = node_samples()
    assert 'require("standardwebhooks")' in library
    assert "standardwebhooks" not in plain and "crypto.timingSafeEqual" in plain


@contextlib.contextmanager
def node_receiver(tmp_path: Path, source: str, secret: str) -> Iterator[tuple[str, list[str]]]:
    """The sample in a node process on a free port; yields its URL and the lines it printed so far."""
    node = shutil.which("node") or shutil.which("nodejs")
    assert node, "Debian's nodejs is installed by `make install`"
    assert (NODE_MODULES / "standardwebhooks").is_dir(), "`make install` installs docs/partners/samples/node"
    script = tmp_path / "receiver.js"
    script.write_text(source)
    port = free_port()
    env = {**os.environ, "WEBHOOK_SECRET": secret, "PORT": str(port), "NODE_PATH": str(NODE_MODULES)}
    output = tmp_path / "receiver.out"
    with output.open("w") as out:
        process = subprocess.Popen([node, str(script)], env=env, stdout=out, stderr=subprocess.STDOUT)
    try:
        url = f"http://127.0.0.1:{port}/hooks/buyback"
        assert wait_for(lambda: process.poll() is not None or _listening(port), timeout=30), (
            output.read_text()
        )
        assert process.poll() is None, output.read_text()
        yield url, output
    finally:
        process.terminate()
        process.wait(timeout=10)


def _listening(port: int) -> bool:
    import socket

    with socket.socket() as s:
        return s.connect_ex(("127.0.0.1", port)) == 0


def post(url: str, headers: dict[str, str], body: bytes) -> int:
    request = urllib.request.Request(url, data=body, method="POST", headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status
    except urllib.error.HTTPError as refused:
        return refused.code


def ping(auth_client, endpoint_id: str, capture) -> str:
    with capture(execute=True):
        response = auth_client.post(f"/v1/webhook_endpoints/{endpoint_id}/ping")
    assert response.status_code == 202, response.content
    return response.json()["data"]["delivery_id"]


@pytest.mark.parametrize("sample", ["library", "plain crypto"])
def test_the_node_receiver_verifies_a_real_delivery_and_refuses_a_tampered_one(
    sample, tmp_path, auth_client, receiver, django_capture_on_commit_callbacks
):
    source = dict(zip(["library", "plain crypto"], node_samples(), strict=True))[sample]
    created = auth_client.post(
        "/v1/webhook_endpoints", {"url": receiver.url(), "event_types": ["*"]}, format="json"
    ).json()["data"]
    endpoint_id, secret = created["endpoint_id"], created["secret"]
    # A real delivery, as the service sent it (to a recorder first, to keep its exact bytes for the copies).
    ping(auth_client, endpoint_id, django_capture_on_commit_callbacks)
    [delivered] = receiver.requests
    headers = {
        name: delivered.headers[name] for name in ("webhook-id", "webhook-timestamp", "webhook-signature")
    }
    headers["content-type"] = "application/json"

    with node_receiver(tmp_path, source, secret) as (url, output):
        assert post(url, headers, delivered.body) == 204
        tampered = delivered.body.replace(b'"webhook.ping"', b'"order.created"')
        assert tampered != delivered.body
        assert post(url, headers, tampered) == 400
        assert (
            post(url, {**headers, "webhook-timestamp": str(int(time.time()) - 6 * 60)}, delivered.body) == 400
        )
        assert post(url, {**headers, "webhook-signature": "v1,"}, delivered.body) == 400
        assert (
            post(url, {k: v for k, v in headers.items() if k != "webhook-signature"}, delivered.body) == 400
        )

        # During a rotation a delivery carries two signatures; the receiver still holding the old secret takes it.
        rotated = auth_client.post(
            f"/v1/webhook_endpoints/{endpoint_id}/rotate_secret",
            {"expire_previous_in_seconds": 3600},
            format="json",
        )
        assert rotated.status_code == 200 and rotated.json()["data"]["secret"] != secret
        ping(auth_client, endpoint_id, django_capture_on_commit_callbacks)
        during_rotation = receiver.requests[1]
        assert len(during_rotation.headers["webhook-signature"].split(" ")) == 2
        assert (
            post(url, {**during_rotation.headers, "content-type": "application/json"}, during_rotation.body)
            == 204
        )

        # Straight from the service to the receiver: the delivery succeeds on the receiver's 204.
        moved = auth_client.patch(f"/v1/webhook_endpoints/{endpoint_id}", {"url": url}, format="json")
        assert moved.status_code == 200, moved.content
        delivery = WebhookDelivery.objects.get(
            delivery_id=ping(auth_client, endpoint_id, django_capture_on_commit_callbacks)
        )
        [attempt] = delivery.attempts.all()
        assert (delivery.state, attempt.response_status) == ("succeeded", 204)
        printed = output.read_text().splitlines()
    ping_id = delivered.headers["webhook-id"]
    assert printed[0] == f"verified {ping_id} webhook.ping", printed
    assert printed[1] == f"verified {during_rotation.headers['webhook-id']} webhook.ping", printed
    assert printed[2].startswith("verified ntf_") and printed[2].endswith(" webhook.ping"), printed
    assert len(printed) == 3, printed


def python_samples() -> list[str]:
    section = GUIDE.read_text().split("\n## Verifying a delivery\n", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"^```python\n(.*?)^```$", section, flags=re.S | re.M)


def test_the_python_receivers_verify_a_real_delivery_and_refuse_a_tampered_one(
    auth_client, receiver, django_capture_on_commit_callbacks
):
    library, plain = python_samples()
    created = auth_client.post(
        "/v1/webhook_endpoints", {"url": receiver.url(), "event_types": ["*"]}, format="json"
    ).json()["data"]
    ping(auth_client, created["endpoint_id"], django_capture_on_commit_callbacks)
    [delivered] = receiver.requests
    tampered = delivered.body.replace(b'"webhook.ping"', b'"order.created"')
    stale = {**delivered.headers, "webhook-timestamp": str(int(time.time()) - 6 * 60)}

    handled: list[str] = []
    namespace = {
        "already_processed": lambda webhook_id: False,
        "handle": lambda kind, data: handled.append(kind),
    }
    exec(library.replace('"whsec_…"', repr(created["secret"])), namespace)  # noqa: S102  (the guide's sample)
    receive = namespace["receive"]
    assert receive(delivered.body, delivered.headers) == (204, "")
    assert handled == ["webhook.ping"]
    assert receive(tampered, delivered.headers) == (400, "bad signature")
    assert receive(delivered.body, stale) == (400, "bad signature")

    namespace = {}
    exec(plain.replace('"whsec_…"', repr(created["secret"])), namespace)  # noqa: S102
    verified = namespace["verified"]
    assert verified(delivered.body, delivered.headers) is True
    assert verified(tampered, delivered.headers) is False
    assert verified(delivered.body, stale) is False
    assert verified(delivered.body, {**delivered.headers, "webhook-signature": "v1,"}) is False
