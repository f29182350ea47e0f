"""Shared fixtures: ``api_client``, ``partner``, ``auth_client`` and friends (docs/development.md "Tests and markers")."""

from dataclasses import dataclass

import pytest
import time_machine
from django.core.cache import cache
from rest_framework.test import APIClient

from config.celery import app as celery_app

# The partner portal's signed-in users (``portal``, ``ready_portal``, ``other_portal``): the pages of every app
# are tested beside that app's other tests.
pytest_plugins = ["tests.portal.fixtures"]


def pytest_configure(config):
    config.addinivalue_line(
        "markers", "slow: starts the service's real processes (`make run`); takes a minute"
    )


@pytest.fixture(autouse=True)
def _isolated_environment(settings, tmp_path):
    """Each test: its own MEDIA_ROOT, an empty shared cache, Celery tasks run in-process, and the settings that
    make the test process deterministic (the settings' defaults are production's, whoever runs them).

    Running tasks in-process is this harness's choice for unit tests, never a mode of the service (which always
    publishes to the broker): the flows that need the real processes (an order reaching ``paid`` through a
    worker and beat, notifications delivered by the webhooks worker) are proven by the tests that start them
    (tests/ops, tests/faults, tests/config/test_walkthrough.py; docs/development.md "Tests and markers")."""
    # Revocations read from the database once an hour, not every 2 s: a query-count test does not meet that
    # read on some runs and not on others. The tests of the bound set it themselves (tests/partners).
    settings.TOKEN_REVOCATION_POLL_SECONDS = 3600
    # No in-process copy of catalog answers: a test that is not `transaction=True` never runs the on-commit hook
    # that replaces the catalog's version, so every test sees every write at once only without it.
    settings.CATALOG_LOCAL_CACHE_SECONDS = 0
    settings.MEDIA_ROOT = tmp_path / "media"
    settings.STORAGES = {**settings.STORAGES}
    if settings.STORAGES["default"]["BACKEND"].endswith("FileSystemStorage"):
        settings.STORAGES["default"] = {
            "BACKEND": "django.core.files.storage.FileSystemStorage",
            "OPTIONS": {"location": tmp_path / "media", "base_url": None},
        }
    cache.clear()
    previous = celery_app.conf.task_always_eager
    celery_app.conf.task_always_eager = True
    yield
    celery_app.conf.task_always_eager = previous
    cache.clear()


@pytest.fixture(autouse=True)
def _clock_of_the_test(request):
    """``@pytest.mark.travel(when)``, on a test or in a module's ``pytestmark``: the test runs on a clock that starts
    at ``when`` (before any other fixture: tokens, orders and sessions are made on it) and ticks on. Data written for
    given days, and pages that show "today", then mean the same whatever day the suite runs on."""
    marker = request.node.get_closest_marker("travel")
    if marker is None:
        yield
        return
    with time_machine.travel(marker.args[0], tick=True):
        yield


@dataclass
class PartnerWithCredentials:
    partner: object
    client_id: str
    client_secret: str


def make_partner(
    *,
    name: str = "Acme Tickets",
    payment_methods: bool = True,
    suspended: bool = False,
    email: str = "ops@acme.example",
):
    from partners import services

    issued = services.partner_create(name=name, contact_email=email, suspended=suspended)
    if payment_methods:
        from payouts.services.methods import payment_methods_create_sandbox

        payment_methods_create_sandbox(partner=issued.partner)
    return PartnerWithCredentials(issued.partner, issued.client_id, issued.client_secret)


def issue_token(client: APIClient, creds: PartnerWithCredentials) -> str:
    response = client.post(
        "/v1/auth/token",
        {
            "client_id": creds.client_id,
            "client_secret": creds.client_secret,
            "grant_type": "client_credentials",
        },
        format="json",
    )
    assert response.status_code == 200, response.content
    return response.json()["data"]["access_token"]


@pytest.fixture
def api_client() -> APIClient:
    return APIClient()


@pytest.fixture
def partner_creds(db) -> PartnerWithCredentials:
    """An active partner with a payout account and a card on file, and its credentials."""
    return make_partner()


@pytest.fixture
def partner(partner_creds):
    return partner_creds.partner


@pytest.fixture
def auth_client(partner_creds) -> APIClient:
    """A client sending a valid bearer token of ``partner``."""
    client = APIClient()
    token = issue_token(client, partner_creds)
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {token}")
    client.token = token
    return client


@pytest.fixture
def other_partner_creds(db) -> PartnerWithCredentials:
    return make_partner(name="Other Resale Co", email="ops@other.example")


@pytest.fixture
def other_auth_client(other_partner_creds) -> APIClient:
    client = APIClient()
    token = issue_token(client, other_partner_creds)
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {token}")
    client.token = token
    return client


def assert_error(response, status: int, code: str) -> dict:
    """The response is the error envelope with this status and code; returns ``error``."""
    assert response.status_code == status, (response.status_code, response.content[:500])
    body = response.json()
    assert body["success"] is False
    assert body["error"]["code"] == code, body
    assert isinstance(body["error"]["message"], str) and body["error"]["message"]
    assert body["meta"]["request_id"]
    assert body["meta"]["timestamp"].endswith("Z")
    assert "data" not in body
    return body["error"]


def login_with_password(client, *, username: str, password: str) -> bool:
    """``client.login`` through every authentication backend, sign-in throttling included (which needs the
    request that Django's test client does not pass)."""
    from django.contrib.auth import authenticate
    from django.test import RequestFactory

    user = authenticate(RequestFactory().post("/portal/login"), username=username, password=password)
    if user is None:
        return False
    client.force_login(user, backend="django.contrib.auth.backends.ModelBackend")
    return True


@pytest.fixture
def processes(tmp_path):
    """Processes the test starts (gunicorn, Celery, …: ``tests.faults.live.Processes``); every one is stopped at
    the end."""
    from tests.faults.live import Processes

    started = Processes(tmp_path)
    yield started
    started.stop_all()
