"""Fixtures for the webhook tests: a real HTTP receiver on 127.0.0.1, notifications with realistic payloads,
and endpoints registered through the service."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from django.utils import timezone

from orders.models import Notification
from orders.serializers import OrderSerializer
from orders.webhooks import services
from tests.orders.conftest import create_order


@dataclass
class Received:
    path: str
    headers: dict[str, str]
    body: bytes

    @property
    def json(self) -> dict:
        return json.loads(self.body)


@dataclass
class Reply:
    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    body: bytes = b'{"ok":true}'
    delay: float = 0.0


class Receiver:
    """A threaded HTTP server that records every request and answers from a script (default: 200)."""

    def __init__(self) -> None:
        self.requests: list[Received] = []
        self.replies: list[Reply] = []
        self.default = Reply()
        self.lock = threading.Lock()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):  # noqa: N802
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length)
                with receiver.lock:
                    receiver.requests.append(
                        Received(
                            path=self.path, headers={k.lower(): v for k, v in self.headers.items()}, body=body
                        )
                    )
                    reply = receiver.replies.pop(0) if receiver.replies else receiver.default
                if reply.delay:
                    time.sleep(reply.delay)
                try:
                    self.send_response(reply.status)
                    for name, value in reply.headers.items():
                        self.send_header(name, value)
                    self.send_header("Content-Length", str(len(reply.body)))
                    self.end_headers()
                    self.wfile.write(reply.body)
                except (BrokenPipeError, ConnectionResetError):
                    pass

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        # A short poll: shutdown() at the end of each test waits for it (the default is half a second).
        self.thread = threading.Thread(target=self.server.serve_forever, args=(0.05,), daemon=True)

    def url(self, path: str = "/hook") -> str:
        return f"http://127.0.0.1:{self.port}{path}"

    def reply(self, *replies: Reply) -> None:
        self.replies.extend(replies)


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    server = Receiver()
    server.thread.start()
    yield server
    server.server.shutdown()
    server.server.server_close()


def order_notification(
    partner, *, type_: str = "order.created", livemode: bool = True, order=None
) -> Notification:
    """A notification as the orders app writes it: the order object as GET /v1/orders/{id} renders it."""
    if order is None:
        order = create_order(partner)
        # The order's own notifications (its creation, its confirmation) are dropped: these tests drive the
        # webhooks with the one notification made here. A dispatch already queued for them finds nothing.
        Notification.objects.filter(order=order).delete()
    notification = Notification(partner=partner, livemode=livemode, type=type_, order=order)
    notification.payload = {
        "id": notification.notification_id,
        "type": type_,
        "created_at": timezone.now().strftime("%Y-%m-%dT%H:%M:%SZ"),
        "livemode": livemode,
        "data": {
            "order": json.loads(json.dumps(OrderSerializer(order).data, default=str)),
            "previous_status": None if type_ == "order.created" else "accepted",
            "reason": None,
        },
    }
    notification.save()
    return notification


def register(partner, url: str, *, event_types=("*",), livemode: bool = True):
    endpoint, secret = services.endpoint_create(
        partner_pk=partner.pk, livemode=livemode, url=url, event_types=list(event_types)
    )
    return endpoint, secret
