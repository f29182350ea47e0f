"""The WSGI application hands the server an environ without credentials once it has answered, and the
application itself still reads the request as sent."""

import json

from config.core.redaction import RedactLogEnviron

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
