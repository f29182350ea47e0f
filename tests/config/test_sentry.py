"""Error reports: with SENTRY_DSN a failing request reaches Sentry with its request id and no secret in it;
without, nothing is set up."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import sentry_sdk
from django.http import HttpResponse
from django.test import Client
from django.urls import include, path
from django.views.decorators.csrf import csrf_exempt
from sentry_sdk.transport import Transport

from config.core.sentry import sentry_init

ROOT = Path(__file__).resolve().parents[2]

BEARER = "eyJ2IjoxLCJwIjoicHRuXzEyMyJ9.q1w2e3r4t5y6u7i8o9p0a1s2d3f4g5h6j7k8l9z0x1c"
ACCESS_TOKEN = "eyJ2IjoxLCJwIjoicHRuXzQ1NiJ9.Zx9Yw8Vu7Ts6Rq5Po4Nm3Lk2Ji1Hg0Fe9Dc8Ba7Zy6"
CLIENT_SECRET = "sec_Qm9vYmFyYmF6cXV4cXV1eHF1dXpxdXV6cXV1eg-_x1"
WEBHOOK_SECRET = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw2rE5tfKPv4w="
CARD = "4242424242424242"
CARD_SPACED = "4000 0566 5566 5556"
CVC = "737"
SECRETS = [BEARER, ACCESS_TOKEN, CLIENT_SECRET, WEBHOOK_SECRET, CARD, CARD_SPACED, "4000056655665556"]


@csrf_exempt
def failing_view(request):
    client_secret = request.POST.get("client_secret")
    card_number = request.POST.get("card_number")
    signing = request.POST.get("note")
    token = request.GET.get("access_token")
    message = (
        f"could not register {client_secret} with {signing} for card {card_number} / {CARD_SPACED} ({token})"
    )
    raise RuntimeError(message)


def ok_view(request):
    return HttpResponse("ok")


urlpatterns = [
    path("_sentry_boom", failing_view),
    path("", include("config.urls")),
]


class CapturingTransport(Transport):
    def __init__(self, options=None):
        super().__init__(options)
        self.envelopes = []

    def capture_envelope(self, envelope) -> None:
        self.envelopes.append(envelope)

    def events(self) -> list[dict]:
        return [
            item.payload.json
            for envelope in self.envelopes
            for item in envelope.items
            if item.headers.get("type") == "event"
        ]

    def serialized(self) -> str:
        return "".join(envelope.serialize().decode("utf-8", "replace") for envelope in self.envelopes)


@pytest.fixture
def sentry_capture(settings):
    settings.ROOT_URLCONF = __name__
    transport = CapturingTransport()
    sentry_init(dsn="https://public@o0.ingest.sentry.example/1", transport=transport)
    yield transport
    sentry_sdk.get_client().close()
    sentry_sdk.init(dsn=None)


@pytest.mark.django_db
def test_a_failing_request_reaches_sentry_tagged_with_its_request_id_and_without_any_secret(sentry_capture):
    client = Client(raise_request_exception=False)
    response = client.post(
        f"/_sentry_boom?access_token={ACCESS_TOKEN}&page=2",
        {
            "client_secret": CLIENT_SECRET,
            "card_number": CARD,
            "cvc": CVC,
            "note": WEBHOOK_SECRET,
        },
        HTTP_AUTHORIZATION=f"Bearer {BEARER}",
        HTTP_X_REQUEST_ID="req_sentryprobe0000000000001",
    )
    assert response.status_code == 500
    sentry_sdk.flush()

    events = sentry_capture.events()
    assert len(events) == 1
    event = events[0]
    assert event["tags"]["request_id"] == "req_sentryprobe0000000000001"
    assert event["exception"]["values"][-1]["type"] == "RuntimeError"
    serialized = sentry_capture.serialized() + json.dumps(event)
    for secret in SECRETS:
        assert secret not in serialized, secret
    # The report is still useful: the path and the harmless query value are there.
    assert "/_sentry_boom" in serialized
    assert "page=2" in serialized


def test_without_sentry_dsn_nothing_is_set_up():
    env = {k: v for k, v in os.environ.items() if k != "SENTRY_DSN"}
    env["DJANGO_SETTINGS_MODULE"] = "config.settings"
    code = (
        "import django; django.setup(); import sentry_sdk; "
        "print('active' if sentry_sdk.get_client().is_active() else 'inactive')"
    )
    result = subprocess.run(  # noqa: S603 - our own interpreter
        [sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, timeout=60
    )
    assert result.stdout.strip().splitlines()[-1] == "inactive", result.stderr
    with_dsn = subprocess.run(  # noqa: S603
        [sys.executable, "-c", code],
        cwd=ROOT,
        env={**env, "SENTRY_DSN": "https://public@o0.ingest.sentry.example/1"},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert with_dsn.stdout.strip().splitlines()[-1] == "active", with_dsn.stderr
