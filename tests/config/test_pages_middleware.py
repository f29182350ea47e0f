"""The pages' middleware (sessions, CSRF, the signed-in user, two-factor, messages, django-axes) runs for every
page and for no partner API request; the system check refuses a MIDDLEWARE without it."""

import pytest
from django.core import checks
from django.test import Client, override_settings

from config.core import pages

pytestmark = pytest.mark.django_db


def _seen_by_pages(monkeypatch) -> list[str]:
    """Records the path of every request the pages' inner chain sees."""
    seen: list[str] = []
    original = pages.PagesMiddleware.__call__

    def recording(self, request):
        if pages.is_page(request):
            seen.append(request.path)
        return original(self, request)

    monkeypatch.setattr(pages.PagesMiddleware, "__call__", recording)
    return seen


def test_api_requests_carry_no_session_cookie_and_need_no_csrf_token(auth_client, monkeypatch):
    seen = _seen_by_pages(monkeypatch)
    client = Client(enforce_csrf_checks=True, HTTP_AUTHORIZATION=f"Bearer {auth_client.token}")
    client.cookies["sessionid"] = "whatever"
    listed = client.get("/v1/events?limit=1")
    assert listed.status_code == 200
    assert "sessionid" not in listed.cookies and "csrftoken" not in listed.cookies
    assert "Cookie" not in listed.get("Vary", "")
    # A JSON POST without any CSRF token: the bearer token is the API's only credential.
    quote = client.post("/v1/quotes", {}, content_type="application/json")
    assert quote.status_code == 400 and quote.json()["error"]["code"] == "VALIDATION_ERROR"
    missing = client.get("/v1/no-such-thing")
    assert missing.status_code == 404 and missing.json()["error"]["code"] == "NOT_FOUND"
    assert seen == []
    # The security headers of every answer are still there.
    assert listed["X-Content-Type-Options"] == "nosniff" and listed["X-Frame-Options"] == "DENY"


def test_pages_still_run_the_pages_middleware(monkeypatch):
    seen = _seen_by_pages(monkeypatch)
    client = Client(enforce_csrf_checks=True)
    page = client.get("/portal/login")
    assert page.status_code == 200 and "csrftoken" in page.cookies
    refused = client.post("/portal/login", {"username": "a@example.com", "password": "x"})
    assert refused.status_code == 403  # no CSRF token
    admin = client.get("/admin/")
    assert admin.status_code == 302 and "/admin/login/" in admin["Location"]
    assert seen == ["/portal/login", "/portal/login", "/admin/"]


def test_the_check_refuses_a_middleware_list_without_the_pages_middleware(settings):
    without = [m for m in settings.MIDDLEWARE if m != pages.PAGES_PATH]
    with override_settings(MIDDLEWARE=without):
        assert [e.id for e in pages.pages_middleware_check(None)] == ["pages.E001"]
    twice = [*settings.MIDDLEWARE, "django.contrib.sessions.middleware.SessionMiddleware"]
    with override_settings(MIDDLEWARE=twice):
        assert [e.id for e in pages.pages_middleware_check(None)] == ["pages.E002"]
    assert pages.pages_middleware_check(None) == []
    # Registered: `manage.py check` (and every start) runs it with Django's own.
    assert pages.pages_middleware_check in checks.registry.registry.get_checks()
