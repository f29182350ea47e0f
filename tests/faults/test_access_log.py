"""A token sent in the query string (``?access_token=…``) never reaches the access log."""

import pytest

from config.gunicorn_conf import redact

from .live import http, production_env, wait_for

pytestmark = pytest.mark.django_db(transaction=True)

SECRET = "eyJ2IjoxLCJwIjoicHRuX1NFQ1JFVFRPS0VO.c2lnbmF0dXJlLXNob3VsZC1uZXZlci1iZS1sb2dnZWQ"


def test_query_string_tokens_never_reach_the_access_log(processes):
    url = processes.web(production_env())
    reply = http(
        "GET",
        url + f"/v1/events?limit=5&access_token={SECRET}&client_secret=sec_leaky",
        headers={
            "Referer": f"https://partner.example/app?token={SECRET}",
            "Authorization": f"Bearer {SECRET}",
        },
    )
    assert reply.status == 401
    web = processes.started[-1]
    assert wait_for(lambda: "/v1/events" in web.output(), timeout=10), web.output()[-2000:]
    log = web.output()
    line = next(line for line in log.splitlines() if "/v1/events" in line)
    assert SECRET not in log and "sec_leaky" not in log
    assert "access_token=[redacted]" in line and "client_secret=[redacted]" in line
    assert "limit=5" in line  # the rest of the query string is still there to read
    assert reply.headers["X-Request-ID"] in line


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("GET /v1/events?access_token=abc HTTP/1.1", "GET /v1/events?access_token=[redacted] HTTP/1.1"),
        ("a=1&ACCESS_TOKEN=x.y&b=2", "a=1&ACCESS_TOKEN=[redacted]&b=2"),
        ("token=abc", "token=[redacted]"),
        ("/p?q=arena&limit=5", "/p?q=arena&limit=5"),
        ("/p?mytoken=keep", "/p?mytoken=keep"),
    ],
)
def test_redaction_keeps_everything_but_credential_values(raw, expected):
    assert redact(raw) == expected
