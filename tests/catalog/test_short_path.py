"""The route middleware's short path (config/api/routes.py): a catalog read runs the middleware it needs once,
in one place, resolves its URL once, and answers exactly what the whole chain answers."""

from unittest import mock

import pytest
from django.conf import settings
from django.core.handlers.base import BaseHandler
from django.test import override_settings
from rest_framework.test import APIClient

from config.api import routes
from config.api.middleware import ApiBodyLimitMiddleware, ChunkedBodyMiddleware
from config.core import pages
from partners.idempotency.gate import IdempotencyMiddleware
from tests.catalog.conftest import client_with_scope

pytestmark = pytest.mark.django_db

VOLATILE = {"X-Request-ID", "RateLimit-Remaining", "RateLimit-Reset", "RateLimit"}


def _answer(response) -> tuple:
    headers = {name: value for name, value in response.items() if name not in VOLATILE}
    body = response.json() if response.content else None
    if body is not None:
        body.pop("meta", None)
    return response.status_code, headers, body


def _requests(event, token: str, scopeless: APIClient) -> list[tuple[APIClient | None, str, dict]]:
    auth = {"HTTP_AUTHORIZATION": f"Bearer {token}"}
    return [
        (None, "/v1/events?limit=20", auth),
        (None, f"/v1/events/{event.event_id}", auth),
        (None, f"/v1/events/{event.event_id}/sections", auth),
        (None, f"/v1/events/{event.event_id}/sections/Lower%20101/rows", auth),
        (None, "/v1/events/evt_unknown", auth),
        (None, f"/v1/events/{event.event_id}/sections/Nowhere/rows", auth),
        (None, "/v1/events?limit=0", auth),
        (None, "/v1/events?date_from=", auth),
        (None, "/v1/events", {}),
        (None, "/v1/events", {"HTTP_AUTHORIZATION": "Bearer not-a-token"}),
        (None, "/v1/events", {**auth, "HTTP_HOST": "evil.example"}),
        (scopeless, "/v1/events", {}),
    ]


def test_a_catalog_read_answers_as_through_the_whole_chain(auth_client, partner, event):
    scopeless = client_with_scope(partner, "orders:write")
    whole_chain = [m for m in settings.MIDDLEWARE if m != routes.ROUTES_PATH]
    for client, path, extra in _requests(event, auth_client.token, scopeless):
        short = (client or APIClient()).get(path, **extra)
        with override_settings(MIDDLEWARE=whole_chain):
            client = client_with_scope(partner, "orders:write") if client is scopeless else None
            whole = (client or APIClient()).get(path, **extra)
        assert _answer(short) == _answer(whole), path
        assert short["X-Request-ID"].startswith("req_")
        tag = whole.get("ETag")
        if tag:
            conditional = {**extra, "HTTP_IF_NONE_MATCH": tag}
            short = APIClient().get(path, **conditional)
            with override_settings(MIDDLEWARE=whole_chain):
                whole = APIClient().get(path, **conditional)
            assert short.status_code == whole.status_code == 304
            assert _answer(short) == _answer(whole)


def test_a_catalog_read_skips_what_it_does_not_need_and_resolves_once(auth_client, event):
    refuse = mock.Mock(side_effect=AssertionError("not on a catalog read's path"))
    with (
        mock.patch.object(BaseHandler, "resolve_request", refuse),
        mock.patch.object(ChunkedBodyMiddleware, "__call__", refuse),
        mock.patch.object(ApiBodyLimitMiddleware, "__call__", refuse),
        mock.patch.object(IdempotencyMiddleware, "__call__", refuse),
        mock.patch.object(pages.PagesMiddleware, "__call__", refuse),
    ):
        client = APIClient()
        client.credentials(HTTP_AUTHORIZATION=f"Bearer {auth_client.token}")
        response = client.get(f"/v1/events/{event.event_id}/sections/Lower%20101/rows")
        assert response.status_code == 200, response.content
        assert response.resolver_match.route == "v1/events/<str:event_id>/sections/<path:name>/rows"
    assert refuse.call_count == 0


def test_a_read_with_a_body_or_another_method_takes_the_whole_chain(auth_client, event):
    too_big = str(settings.DATA_UPLOAD_MAX_MEMORY_SIZE + 1)
    response = auth_client.get("/v1/events", CONTENT_LENGTH=too_big)
    assert response.status_code == 413
    assert response.json()["error"]["code"] == "PAYLOAD_TOO_LARGE"
    response = auth_client.post("/v1/events", {}, format="json")
    assert response.status_code == 405
    assert response["Allow"] == "GET, HEAD, OPTIONS"


def test_a_middleware_the_short_path_does_not_know_or_a_new_order_turns_it_off():
    listed = list(settings.MIDDLEWARE)
    common = listed.index("config.api.middleware.CommonMiddleware")
    swapped = [*listed[:common], listed[common + 1], listed[common], *listed[common + 2 :]]
    without = [m for m in listed if m != "django.middleware.clickjacking.XFrameOptionsMiddleware"]
    for changed in ([*listed, "django.middleware.gzip.GZipMiddleware"], swapped, without):
        with override_settings(MIDDLEWARE=changed):
            assert routes.RouteMiddleware(lambda request: None).enabled is False, changed
    assert routes.RouteMiddleware(lambda request: None).enabled is True
    with override_settings(MIDDLEWARE=[m for m in listed if m != routes.METRICS_PATH]):
        assert routes.RouteMiddleware(lambda request: None).enabled is True


def test_a_host_is_checked_once_and_a_refused_one_every_time(auth_client, event):
    from django.http import HttpRequest

    routes._allowed_hosts.clear()
    path = f"/v1/events/{event.event_id}"
    with mock.patch.object(HttpRequest, "get_host", autospec=True, side_effect=HttpRequest.get_host) as check:
        for _ in range(3):
            assert auth_client.get(path, HTTP_HOST="localhost").status_code == 200
        assert check.call_count == 1
        for _ in range(2):
            response = auth_client.get(path, HTTP_HOST="evil.example")
            assert response.status_code == 400
        assert check.call_count == 3
        # A forwarded host is part of what was checked: the same Host with another one is checked again.
        with override_settings(USE_X_FORWARDED_HOST=True):
            response = auth_client.get(path, HTTP_HOST="localhost", HTTP_X_FORWARDED_HOST="evil.example")
            assert response.status_code == 400
    # A change of the allowed hosts forgets what was allowed.
    with override_settings(ALLOWED_HOSTS=["api.example"]):
        assert auth_client.get(path, HTTP_HOST="localhost").status_code == 400
        assert auth_client.get(path, HTTP_HOST="api.example").status_code == 200
    assert auth_client.get(path, HTTP_HOST="api.example").status_code == 400


def test_the_hosts_kept_are_bounded(auth_client, event, settings):
    settings.ALLOWED_HOSTS = [".example"]
    routes._allowed_hosts.clear()
    for n in range(routes.ALLOWED_HOSTS_KEPT + 20):
        assert auth_client.get(f"/v1/events/{event.event_id}", HTTP_HOST=f"h{n}.example").status_code == 200
    assert len(routes._allowed_hosts) == routes.ALLOWED_HOSTS_KEPT
