"""The short path's response hooks and header setter (config/api/headers.py) give what the chain's middleware
(Django's, and its common middleware as ``config.api.middleware`` keeps it) and ``HttpResponse.__setitem__`` give:
the same headers, in the same order, with the same values and errors."""

import pytest
from django.http import (
    BadHeaderError,
    HttpResponse,
    HttpResponseNotFound,
    HttpResponseNotModified,
    JsonResponse,
    StreamingHttpResponse,
)
from django.middleware.clickjacking import XFrameOptionsMiddleware
from django.middleware.security import SecurityMiddleware
from django.test import RequestFactory, override_settings
from django.views.decorators.clickjacking import xframe_options_exempt

from config.api.headers import ResponseHooks, put
from config.api.middleware import CommonMiddleware


def _responses() -> list:
    with_own = JsonResponse({"a": 1}, status=201)
    with_own["X-Frame-Options"] = "SAMEORIGIN"
    with_own["Referrer-Policy"] = "no-referrer"
    with_own["Content-Length"] = "7"
    with_own["Strict-Transport-Security"] = "max-age=5"
    exempt = xframe_options_exempt(lambda request: HttpResponse(b"page"))(None)
    return [
        JsonResponse({"data": {"quote_id": "qte_x"}}, status=201),
        HttpResponse(b"{}", content_type="application/json"),
        HttpResponseNotModified(),
        HttpResponseNotFound(b"missing"),
        HttpResponse(status=400),
        StreamingHttpResponse(iter([b"a", b"b"])),
        with_own,
        exempt,
    ]


def _headers(response) -> list[tuple[str, str]]:
    return list(response.items())


def _through_both(request, make_middleware):
    xframe, common, security = make_middleware()
    hooks = ResponseHooks(xframe, common, security)
    for ours, theirs in zip(_responses(), _responses(), strict=True):
        for hook, own in (
            (hooks.framed, xframe.process_response),
            (hooks.common_done, common.process_response),
            (hooks.secured, security.process_response),
        ):
            ours, theirs = hook(request, ours), own(request, theirs)
        assert type(ours) is type(theirs)
        assert _headers(ours) == _headers(theirs), _headers(theirs)


def _middleware():
    def get_response(request):
        raise AssertionError("the hooks never call the view")

    return (
        XFrameOptionsMiddleware(get_response),
        CommonMiddleware(get_response),
        SecurityMiddleware(get_response),
    )


@pytest.mark.parametrize("secure", [False, True])
@pytest.mark.parametrize(
    "overrides",
    [
        {},
        {
            "SECURE_HSTS_SECONDS": 3600,
            "SECURE_HSTS_INCLUDE_SUBDOMAINS": True,
            "SECURE_HSTS_PRELOAD": True,
            "X_FRAME_OPTIONS": "sameorigin",
            "SECURE_REFERRER_POLICY": ["same-origin", "strict-origin"],
        },
        {
            "SECURE_CONTENT_TYPE_NOSNIFF": False,
            "SECURE_REFERRER_POLICY": None,
            "SECURE_CROSS_ORIGIN_OPENER_POLICY": None,
        },
    ],
)
def test_the_hooks_add_what_the_middleware_adds(secure, overrides):
    with override_settings(**overrides):
        request = RequestFactory().get("/v1/events", secure=secure)
        _through_both(request, _middleware)


def test_a_hooks_answer_keeps_its_security_headers_per_kind_of_request():
    with override_settings(SECURE_HSTS_SECONDS=60):
        hooks = ResponseHooks(*_middleware())
        plain = hooks.secured(RequestFactory().get("/"), HttpResponse())
        secure = hooks.secured(RequestFactory().get("/", secure=True), HttpResponse())
        again = hooks.secured(RequestFactory().get("/"), HttpResponse())
    assert "Strict-Transport-Security" not in plain
    assert secure["Strict-Transport-Security"] == "max-age=60"
    assert _headers(again) == _headers(plain)


@pytest.mark.parametrize(
    "value",
    ["req_abc", '"default";q=100;w=60', "", " spaced ", "caf\u00e9", "\u2603 snow", 42, b"bytes"],
)
def test_put_sets_what_the_response_setter_sets(value):
    ours, theirs = HttpResponse(), HttpResponse()
    put(ours, "X-Request-ID", value)
    theirs["X-Request-ID"] = value
    assert _headers(ours) == _headers(theirs)
    assert ours.headers._store == theirs.headers._store


@pytest.mark.parametrize("value", ["a\nb", "a\rb", "caf\u00e9\n"])
def test_put_refuses_a_newline_as_the_response_setter_does(value):
    with pytest.raises(BadHeaderError):
        put(HttpResponse(), "X-Request-ID", value)


def test_a_304_gets_no_content_length_and_every_other_answer_its_own():
    """RFC 9110 8.6: a 304 may carry only the length of the 200 it stands for; Django's common middleware gave it
    ``Content-Length: 0``. The chain's common middleware and the short path's hook both leave it without one."""
    request = RequestFactory().get("/v1/events")
    xframe, common, security = _middleware()
    hooks = ResponseHooks(xframe, common, security)
    for answer in (common.process_response, hooks.common_done):
        assert "Content-Length" not in answer(request, HttpResponseNotModified())
        assert answer(request, HttpResponse(b"12345"))["Content-Length"] == "5"
        assert answer(request, HttpResponse(status=204))["Content-Length"] == "0"
