"""Every endpoint that takes an id refuses another partner's object, and leaves it untouched."""

from django.urls import URLPattern, URLResolver, get_resolver

from orders.models import Order
from quotes.models import Quote
from tests.conftest import assert_error
from tests.quotes.factories import quotes_written

from .conftest import ORDER_FORM, portal_client

# Every route with a parameter, and why it is covered. A new one fails test_every_id_route_is_covered
# until a test here shows that it refuses another partner's object (or says why it has no owner).
ID_ROUTES = {
    "v1/events/<str:event_id>": "public catalog: not owned by a partner",
    "v1/events/<str:event_id>/sections": "public catalog: not owned by a partner",
    "v1/events/<str:event_id>/sections/<path:name>/rows": "public catalog: not owned by a partner",
    "v1/quotes/<path:quote_id>": "test_quotes_of_another_partner_are_forbidden",
    "v1/orders/<str:order_id>": "test_orders_of_another_partner_are_not_found",
    "v1/orders/<str:order_id>/cancel": "test_orders_of_another_partner_are_not_found",
    "v1/notifications/<str:notification_id>": "tests/testmode/test_isolation.py::"
    "test_another_partners_notification_and_test_order_are_not_found",
    "v1/test/orders/<str:order_id>/advance": "tests/testmode/test_isolation.py (same test)",
    "v1/test/orders/<str:order_id>/simulate_transfer": "tests/testmode/test_isolation.py (same test)",
    "portal/orders/<str:order_id>": "test_portal_order_page_of_another_partner_is_not_found",
    "v1/webhook_endpoints/<str:endpoint_id>": "tests/webhooks/test_api.py::test_another_partners_endpoint_is_not_found",
    "v1/webhook_endpoints/<str:endpoint_id>/rotate_secret": "tests/webhooks/test_api.py (same test)",
    "v1/webhook_endpoints/<str:endpoint_id>/ping": "tests/webhooks/test_api.py (same test)",
    "v1/webhook_endpoints/<str:endpoint_id>/deliveries": "tests/webhooks/test_api.py (same test)",
    "v1/webhook_endpoints/<str:endpoint_id>/resend": "tests/webhooks/test_api.py (same test)",
    "portal/settings/webhooks/<str:endpoint_id>": "tests/webhooks/test_portal.py::test_list_shows_only_the_own_partners_endpoints",
    "portal/settings/webhooks/<str:endpoint_id>/secret": "tests/webhooks/test_portal.py (same test)",
    "portal/settings/webhooks/<str:endpoint_id>/status": "tests/webhooks/test_portal.py (same test)",
    "portal/settings/webhooks/<str:endpoint_id>/rotate": "tests/webhooks/test_portal.py (same test)",
    "portal/settings/webhooks/<str:endpoint_id>/ping": "tests/webhooks/test_portal.py (same test)",
    "portal/settings/webhooks/<str:endpoint_id>/resend": "tests/webhooks/test_portal.py (same test)",
    "portal/settings/webhooks/<str:endpoint_id>/delete": "tests/webhooks/test_portal.py (same test)",
    "portal/^statements/(?P<month>[0-9]{4}-[0-9]{2})$": "a month, not an id: the statement reads only "
    "request.partner's rows (tests/portal/test_statements.py)",
    "portal/^statements/(?P<month>[0-9]{4}-[0-9]{2})\\.csv$": "a month, not an id: the statement reads only "
    "request.partner's rows (tests/portal/test_statements.py)",
    "portal/reset/<uidb64>/<token>": "Django's signed password-reset link: bound to one user, not an id",
    "portal/welcome/<uidb64>/<token>": "Django's signed set-password link: bound to one user, not an id",
}


def _routes(resolver: URLResolver, prefix: str = "") -> list[str]:
    found = []
    for pattern in resolver.url_patterns:
        route = prefix + str(pattern.pattern)
        if isinstance(pattern, URLResolver):
            found.extend(_routes(pattern, route))
        elif isinstance(pattern, URLPattern):
            found.append(route)
    return found


def test_every_id_route_is_covered():
    with_params = {
        r for r in _routes(get_resolver()) if "<" in r and r.startswith(("v1/", "portal/", "sandbox/"))
    }
    assert with_params == set(ID_ROUTES), with_params ^ set(ID_ROUTES)


def test_quotes_of_another_partner_are_forbidden(auth_client, other_auth_client, owned):
    for quote_id in (owned.quote_id, owned.consumed_quote_id):
        assert_error(other_auth_client.get(f"/v1/quotes/{quote_id}"), 403, "FORBIDDEN")
    # Ordering with another partner's quote is refused and does not use the quote up.
    response = other_auth_client.post(
        "/v1/orders", {"quote_id": owned.quote_id, **ORDER_FORM}, format="multipart"
    )
    assert_error(response, 403, "FORBIDDEN")
    quotes_written()
    assert Quote.objects.filter(consumed_at__isnull=True).count() == 1
    mine = auth_client.post("/v1/orders", {"quote_id": owned.quote_id, **ORDER_FORM}, format="multipart")
    assert mine.status_code == 201, mine.content


def test_orders_of_another_partner_are_not_found(auth_client, other_auth_client, owned):
    assert_error(other_auth_client.get(f"/v1/orders/{owned.order_id}"), 404, "ORDER_NOT_FOUND")
    assert_error(other_auth_client.post(f"/v1/orders/{owned.order_id}/cancel"), 404, "ORDER_NOT_FOUND")
    assert Order.objects.get(order_id=owned.order_id).status == Order.Status.ACCEPTED
    # Lists and their filters never show another partner's orders.
    event_id = auth_client.get(f"/v1/orders/{owned.order_id}").json()["data"]["event_id"]
    for query in ("", f"?event_id={event_id}", "?status=accepted"):
        response = other_auth_client.get(f"/v1/orders{query}")
        assert response.status_code == 200 and response.json()["data"]["results"] == [], query
    assert [o["order_id"] for o in auth_client.get("/v1/orders").json()["data"]["results"]] == [
        owned.order_id
    ]


def test_portal_order_page_of_another_partner_is_not_found(partner, other_partner_creds, owned):
    mine = portal_client(partner, "ops@acme.example")
    theirs = portal_client(other_partner_creds.partner, "ops@other.example")
    assert mine.get(f"/portal/orders/{owned.order_id}").status_code == 200
    response = theirs.get(f"/portal/orders/{owned.order_id}")
    assert response.status_code == 404
    assert owned.order_id not in response.content.decode()
    assert owned.order_id not in theirs.get("/portal/orders").content.decode()
