"""The WSGI application hands the server an environ without credentials once it has answered, and the
application itself still reads the request as sent."""

import json
import random

from config.core import redaction
from config.core.redaction import _ENVIRON_KEYS, _NAMES, _SUFFIXES, RedactLogEnviron, could_carry_credential

SECRET = "eyJ2IjoxLCJwIjoicHRuX1NFQ1JFVFRPS0VO.c2lnbmF0dXJl"


def environ(query: str) -> dict:
    return {
        "REQUEST_METHOD": "GET",
        "PATH_INFO": "/v1/events",
        "QUERY_STRING": query,
        "RAW_URI": f"/v1/events?{query}",
        "REQUEST_URI": f"/v1/events?{query}",
        "HTTP_REFERER": f"https://partner.example/app?token={SECRET}",
        "SERVER_PROTOCOL": "HTTP/1.1",
    }


def test_the_application_reads_the_query_and_the_server_logs_it_redacted():
    seen: list[str] = []

    def app(env, start_response):
        start_response("200 OK", [("Content-Type", "text/plain")])
        seen.append(env["QUERY_STRING"])

        def body():
            seen.append(env["QUERY_STRING"])  # a streaming answer still reads the request as sent
            yield b"ok"

        return body()

    env = environ(f"limit=1&%61ccess_token={SECRET}")
    result = RedactLogEnviron(app)(env, lambda *args: None)
    assert SECRET in env["RAW_URI"]  # nothing changes before the answer is out
    assert b"".join(result) == b"ok"
    result.close()
    assert seen == [f"limit=1&%61ccess_token={SECRET}"] * 2
    for key in ("RAW_URI", "REQUEST_URI", "QUERY_STRING", "HTTP_REFERER"):
        assert SECRET not in env[key], key
    assert env["RAW_URI"] == "/v1/events?limit=1&%61ccess_token=[redacted]"


def test_an_error_that_escapes_django_is_answered_without_the_token_reaching_the_server(caplog):
    def app(env, start_response):
        raise RuntimeError("the 500 page itself failed")

    started: list[tuple] = []
    env = environ(f"access_token[]={SECRET}")
    body = b"".join(RedactLogEnviron(app)(env, lambda *args: started.append(args)))
    assert started[0][0] == "500 Internal Server Error"
    payload = json.loads(body)
    assert payload["error"]["code"] == "INTERNAL_ERROR"
    assert payload["meta"]["request_id"] == dict(started[0][1])["X-Request-ID"]
    assert SECRET not in env["RAW_URI"] and SECRET not in env["QUERY_STRING"]
    assert "GET /v1/events" in caplog.text and SECRET not in caplog.text


def test_the_environ_is_redacted_once_whether_the_server_reads_the_answer_or_closes_it_early(monkeypatch):
    calls: list[str] = []
    real = redaction.redact_environ
    monkeypatch.setattr(redaction, "redact_environ", lambda env: calls.append("x") or real(env))

    def app(env, start_response):
        start_response("200 OK", [("Content-Type", "text/plain")])
        return [b"a", b"b"]

    read = environ(f"token={SECRET}")
    result = RedactLogEnviron(app)(read, lambda *args: None)
    assert b"".join(result) == b"ab"
    result.close()
    assert calls == ["x"] and SECRET not in read["RAW_URI"]

    calls.clear()
    cut = environ(f"token={SECRET}")
    result = RedactLogEnviron(app)(cut, lambda *args: None)
    next(iter(result))  # the client went away after the first chunk
    result.close()
    assert calls == ["x"] and SECRET not in cut["RAW_URI"] and SECRET not in cut["QUERY_STRING"]


# Values the quick check lets through untouched, and ones it must hand to the redactors.
_PLAIN = [
    "/v1/auth/token",
    "/v1/events?limit=20",
    "limit=20&cursor=eyJvIjpb.FcZk",
    "/v1/events/evt_1/sections/Floor A/rows",
    "a+b=c",
]
_SUSPECT = [
    "/v1/events?access_token=x",
    "/v1/events?ApiKey=x",
    "x=1&Client-Secret=y",
    "/p?next=/admin/%3Ftok%65n%3Dabc",
    "/v1/events%3Faccess_token=x",
    "PASSWD=1",
    "/v1/events?a%5Bb%5D=1",
]


def test_the_quick_check_hands_every_value_that_could_hold_a_credential_to_the_redactors():
    for value in _PLAIN:
        assert not could_carry_credential(value), value
        for redactor in _ENVIRON_KEYS.values():
            assert redactor(value) == value, (redactor, value)
    for value in _SUSPECT:
        assert could_carry_credential(value), value
    for name in (*_NAMES, *(f"x{suffix}" for suffix in _SUFFIXES)):
        assert could_carry_credential(f"/p?{name.upper()}=1"), name


def test_no_value_without_a_percent_sign_that_the_quick_check_passes_is_changed_by_a_redactor():
    """Drawn from pieces of credential names and of queries: whatever the quick check lets through, every
    redactor leaves as it is; and some values it stops are ones a redactor changes."""
    pieces = [
        "key",
        "Token",
        "SECRET",
        "pass",
        "wd",
        "word",
        "api",
        "auth",
        "bearer",
        "access",
        "id",
        "limit",
    ]
    pieces += list("_-[]=&;?#/+ .:xyz0")
    draw = random.Random(20261129)
    passed = changed = 0
    for _ in range(20000):
        value = "".join(draw.choice(pieces) for _ in range(draw.randint(1, 10)))
        if could_carry_credential(value):
            changed += any(redactor(value) != value for redactor in _ENVIRON_KEYS.values())
            continue
        passed += 1
        for redactor in _ENVIRON_KEYS.values():
            assert redactor(value) == value, (redactor, value)
    # Both sides are drawn often: the test compares something.
    assert passed > 1000 and changed > 100, (passed, changed)
