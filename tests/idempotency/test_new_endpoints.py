"""A POST endpoint added later gets Idempotency-Key without a line of code in its view."""

import pytest

from tests.conftest import assert_error

from .conftest import REPLAYED, assert_replay_of, keyed

pytestmark = [pytest.mark.urls("tests.idempotency.urls_probe"), pytest.mark.django_db]


def test_a_new_post_endpoint_replays_and_checks_the_fingerprint(auth_client):
    first = auth_client.post("/v1/_new_things", {"name": "a"}, format="json", **keyed("thing"))
    replay = auth_client.post("/v1/_new_things", {"name": "a"}, format="json", **keyed("thing"))
    other = auth_client.post("/v1/_new_things", {"name": "b"}, format="json", **keyed("thing"))
    unkeyed = auth_client.post("/v1/_new_things", {"name": "a"}, format="json")

    assert first.status_code == 201
    assert_replay_of(first, replay)
    assert_error(other, 422, "IDEMPOTENCY_KEY_MISMATCH")
    assert unkeyed.json()["data"]["thing_id"] == first.json()["data"]["thing_id"] + 1  # ran once in between
    assert unkeyed.headers.get(REPLAYED) is None


def _api_views(resolver, prefix=""):
    """(route, DRF view class) for every route of the real URLconf."""
    from django.urls import URLPattern, URLResolver

    for pattern in resolver.url_patterns:
        route = prefix + str(pattern.pattern)
        if isinstance(pattern, URLResolver):
            yield from _api_views(pattern, route)
        elif isinstance(pattern, URLPattern) and hasattr(pattern.callback, "cls"):
            yield route, pattern.callback.cls


def test_no_post_view_of_the_api_opts_out_of_the_gate():
    """A view that set its own throttle_classes would silently lose Idempotency-Key: none does."""
    from django.urls import get_resolver

    from partners.idempotency.gate import IdempotencyGate

    checked = []
    for route, cls in _api_views(get_resolver("config.urls")):
        if route.startswith("v1/") and hasattr(cls, "post"):
            assert IdempotencyGate in cls().throttle_classes, route
            checked.append(route)
    assert {"v1/quotes", "v1/orders", "v1/orders/<str:order_id>/cancel"} <= set(checked), checked
