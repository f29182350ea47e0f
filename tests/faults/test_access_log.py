"""A token sent in the query string (``?access_token=…``, in any encoding, or inside the admin's ``next=``)
never reaches an access log: gunicorn's (with the production settings file, and bare, as
``gunicorn config.wsgi --access-logfile``), and nginx's in front of it (``python -m config.deploy.serve``)."""

import os
from pathlib import Path

import pytest

from bench.stack import children
from config.core.redaction import redact

from .live import BIN, free_port, http, production_env, wait_for

pytestmark = pytest.mark.django_db(transaction=True)

SECRET = "eyJ2IjoxLCJwIjoicHRuX1NFQ1JFVFRPS0VO.c2lnbmF0dXJlLXNob3VsZC1uZXZlci1iZS1sb2dnZWQ"
# Parts of the token a log could still carry if only its encoding changed.
PIECES = (SECRET, SECRET.split(".")[0], SECRET.split(".")[1])

# Every door a client has found to put a token in the request line.
HOSTILE = [
    f"/v1/events?limit=1&access_token={SECRET}",
    f"/v1/events?%61ccess_token={SECRET}&limit=1",
    f"/v1/events?access%5Ftoken={SECRET}&limit=1",
    f"/v1/events?access_token[]={SECRET}&limit=1",
    f"/v1/events?access_token%5B%5D={SECRET}&limit=1",
    f"/v1/events?%2561ccess_token={SECRET}&limit=1",
    f"/v1/events?ACCESS-TOKEN={SECRET}&limit=1",
    f"/v1/events?limit=1;token={SECRET}",
    f"/v1/events?client_secret={SECRET}&limit=1",
    f"/v1/events%3Faccess_token={SECRET}",
    f"/admin/login/?next=/admin/orders/order/%3Faccess_token%3D{SECRET}",
    f"/admin/login/?next=%2Fv1%2Fevents%3Flimit%3D1%26token%3D{SECRET}",
]


def send_hostile_requests(url: str) -> int:
    """Sends every hostile request (each with a token in its Referer and Authorization too), then the
    admin's own redirect: a page asked for with ``?access_token=`` sends the browser to the sign-in page
    with the token inside ``next=``. Returns the number of requests sent."""
    headers = {"Referer": f"https://partner.example/app?token={SECRET}", "Authorization": f"Bearer {SECRET}"}
    for path in HOSTILE:
        # Whatever the answer (the admin's sign-in page needs collectstatic in production: 500 here).
        http("GET", url + path, headers=headers)
    reply = http("GET", url + f"/admin/orders/order/?access_token={SECRET}")
    assert reply.status == 302, reply.status
    location = reply.headers["Location"]
    assert "next=" in location and SECRET in location  # the token really travels inside next=
    http("GET", url + location if location.startswith("/") else location)
    return len(HOSTILE) + 2


def assert_no_token(log: str) -> None:
    for piece in PIECES:
        assert piece not in log, next(line for line in log.splitlines() if piece in line)


def request_lines(log: str) -> list[str]:
    return [line for line in log.splitlines() if "/v1/events" in line or "/admin/" in line]


def test_the_production_access_log_carries_no_token_sent_any_way(processes):
    url = processes.web(production_env())
    web = processes.started[-1]
    sent = send_hostile_requests(url)
    assert wait_for(lambda: len(request_lines(web.output())) >= sent, timeout=10), web.output()[-3000:]
    log = web.output()
    assert_no_token(log)
    first = next(line for line in log.splitlines() if "/v1/events?limit=1&access_token" in line)
    assert "access_token=[redacted]" in first and "limit=1" in first  # the rest is still there to read
    assert "[redacted]" in next(line for line in log.splitlines() if "%61ccess_token" in line)


def _open_files(pid: int) -> list[str]:
    """What the process's descriptors name; one it closes while they are read (a connection of its own) is
    skipped."""
    files = []
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        try:
            files.append(os.readlink(fd))
        except FileNotFoundError:
            continue
    return files


def test_the_production_workers_keep_their_heartbeat_in_memory(processes):
    """Each worker touches its heartbeat file between requests: under the settings file it lives in /dev/shm,
    never on a disk-backed /tmp whose stalls would stall the worker."""
    url = processes.web(production_env(), workers=2)
    assert http("GET", url + "/healthz").status == 200
    workers = children(processes.started[-1].popen.pid)
    assert len(workers) == 2, workers
    for worker in workers:
        files = _open_files(worker)
        heartbeat = [name for name in files if "wgunicorn-" in name]
        assert heartbeat and all(name.startswith("/dev/shm/") for name in heartbeat), files


def test_bare_gunicorn_access_log_carries_no_token(processes, tmp_path):
    """``gunicorn config.wsgi --access-logfile FILE`` without the settings file: gunicorn's own logger and
    its default format (request line and referer) write what the application left in the environ."""
    access_log = tmp_path / "access.log"
    port = free_port()
    process = processes.spawn(
        "bare-gunicorn",
        [
            str(BIN / "gunicorn"),
            "config.wsgi",
            "--bind",
            f"127.0.0.1:{port}",
            "--access-logfile",
            str(access_log),
        ],
        production_env(),
    )
    url = f"http://127.0.0.1:{port}"
    assert wait_for(lambda: _answers(url), timeout=60), process.output()[-3000:]
    sent = send_hostile_requests(url)
    assert wait_for(lambda: len(request_lines(_read(access_log))) >= sent, timeout=10), _read(access_log)
    log = _read(access_log)
    assert_no_token(log)
    assert_no_token(process.output())
    line = next(line for line in log.splitlines() if "/v1/events?limit=1&access_token" in line)
    assert "access_token=[redacted]" in line and "partner.example/app?token=[redacted]" in line


def test_nginx_and_gunicorn_behind_it_log_no_token(processes, tmp_path):
    """The Procfile's web process, with gunicorn's access log in a file of its own (``python -m
    config.deploy.serve --access-logfile FILE``); nginx writes its lines to the process's output."""
    access_log = tmp_path / "gunicorn-access.log"
    env = production_env()
    url = processes.proxied_web(env, extra_args=["--access-logfile", str(access_log)])
    web = processes.started[-1]
    sent = send_hostile_requests(url)
    assert wait_for(lambda: len(request_lines(_read(access_log))) >= sent, timeout=10), _read(access_log)
    assert wait_for(lambda: len(request_lines(web.output())) >= sent, timeout=10), web.output()[-3000:]
    assert_no_token(_read(access_log))
    nginx_log = web.output()
    assert_no_token(nginx_log)
    # nginx logs the path only; the path whose encoded "?" started a query is cut there.
    assert any('"GET /v1/events HTTP/1.1" 401' in line for line in nginx_log.splitlines()), nginx_log[-3000:]
    assert any('"GET /v1/events?[redacted] HTTP/1.1" 404' in line for line in nginx_log.splitlines())


def test_a_client_cannot_claim_https_through_nginx(processes):
    """nginx sets X-Forwarded-Proto to the scheme it was reached with (plain HTTP here): a client's own
    ``X-Forwarded-Proto: https`` does not make Django believe the request was secure (which would, among
    other things, answer with HSTS and skip the HTTPS redirect)."""
    upstream = free_port()
    env = production_env(SECURE_SSL_REDIRECT="True", UPSTREAM_PORT=str(upstream))
    url = processes.proxied_web(env)
    forged = {"X-Forwarded-Proto": "https"}
    # Straight at gunicorn the header is believed (the service trusts its proxy to set it) ...
    direct = http("GET", f"http://127.0.0.1:{upstream}/v1/events", headers=forged)
    assert direct.status == 401 and "Strict-Transport-Security" in direct.headers, direct.headers
    # ... so through nginx, which sets it itself, the forged one must not arrive.
    reply = http("GET", url + "/v1/events", headers=forged)
    assert reply.status == 301, (reply.status, reply.headers)
    assert reply.headers["Location"].startswith("https://")
    assert "Strict-Transport-Security" not in reply.headers


def test_nginx_passes_a_trusted_load_balancer_scheme_on(processes):
    """With a load balancer of the operator's in front (TRUSTED_PROXY_COUNT=2), its X-Forwarded-Proto is
    the client's scheme: no redirect loop behind a TLS-terminating balancer."""
    env = production_env(SECURE_SSL_REDIRECT="True", TRUSTED_PROXY_COUNT="2")
    url = processes.proxied_web(env)
    reply = http("GET", url + "/v1/events", headers={"X-Forwarded-Proto": "https"})
    assert reply.status == 401, (reply.status, reply.headers)
    assert "Strict-Transport-Security" in reply.headers


def _answers(url: str) -> bool:
    try:
        return http("GET", url + "/healthz", timeout=2).status == 200
    except OSError:
        return False


def _read(path) -> str:
    return path.read_text(errors="replace") if path.exists() else ""


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("GET /v1/events?access_token=abc HTTP/1.1", "GET /v1/events?access_token=[redacted] HTTP/1.1"),
        ("a=1&ACCESS_TOKEN=x.y&b=2", "a=1&ACCESS_TOKEN=[redacted]&b=2"),
        ("token=abc", "token=[redacted]"),
        ("/p?q=arena&limit=5", "/p?q=arena&limit=5"),
        ("/p?mytoken=keep", "/p?mytoken=keep"),
        ("/p?%61ccess_token=abc&limit=5", "/p?%61ccess_token=[redacted]&limit=5"),
        ("/p?access%5Ftoken=abc", "/p?access%5Ftoken=[redacted]"),
        ("/p?access_token[]=abc&x=1", "/p?access_token[]=[redacted]&x=1"),
        ("/p?access_token%5B0%5D=abc", "/p?access_token%5B0%5D=[redacted]"),
        ("/p?%2561ccess%255Ftoken=abc", "/p?%2561ccess%255Ftoken=[redacted]"),
        ("/p?Refresh-Token=abc", "/p?Refresh-Token=[redacted]"),
        ("/admin/login/?next=/admin/x/%3Faccess_token%3Dabc", "/admin/login/?next=[redacted]"),
        ("/admin/login/?next=%2Fadmin%2F%3Fq%3D1%26token%3Dabc&x=1", "/admin/login/?next=[redacted]&x=1"),
        ("/admin/login/?next=/admin/orders/", "/admin/login/?next=/admin/orders/"),
        ("/v1/events%3Faccess_token=abc", "/v1/events?[redacted]"),
        ("/p?access_token%3Dabc", "/p?[redacted]"),
    ],
)
def test_redaction_keeps_everything_but_credential_values(raw, expected):
    assert redact(raw) == expected
