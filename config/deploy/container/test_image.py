"""`make image-test`: the roles of the image (config/deploy/container/Containerfile) run as containers with
Debian's podman against this machine's PostgreSQL and Redis, and the README's partner flow, as printed, takes a
test-mode order through them: the sandbox's transfer mail through the inbound container and a worker to
``ticket_received``, then the test-mode advance to ``paid``.

Outside the suite of `make test` (building the image takes minutes): `make image-test` builds it, then runs this.
A fresh database and queue names of its own; every container started here is removed at the end.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import uuid
from urllib.parse import urlsplit, urlunsplit

import psycopg

from tests.faults.live import ROOT, free_port, http, wait_for

IMAGE = os.environ.get("IMAGE", "localhost/partner-service:latest")
PODMAN = ["podman", "--runtime", "runc"]
# What these machines allow: runc (crun refuses the hybrid cgroups), no raised limits, the host's network.
RUN = ["run", "--network", "host", "--ulimit", "nofile=4096:4096", "--ulimit", "nproc=4096:4096"]
ROLES = ("web", "worker", "webhooks", "webhooks_slow", "beat", "inbound")


def readme_flow() -> str:
    """The README's "The partner flow" block, as printed."""
    section = (ROOT / "README.md").read_text().split("\n## The partner flow\n", 1)[1].split("\n## ", 1)[0]
    return section.split("```sh\n", 1)[1].split("```", 1)[0]


def printed_pairs(output: str) -> dict[str, tuple[str, str]]:
    found = re.findall(
        r"^\s*(live|test-mode) pair:\s+client_id (\S+)\s+client_secret (\S+)$", output, flags=re.M
    )
    return {kind: (client_id, secret) for kind, client_id, secret in found}


def bash(export_line: str, block: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in ("API", "CLIENT_ID", "CLIENT_SECRET", "TOKEN")}
    return subprocess.run(  # noqa: S603
        ["/bin/bash", "-c", f"set -eo pipefail\n{export_line}\n{block}"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=180
    )  # fmt: skip


def podman(*args: str, timeout: float = 300) -> subprocess.CompletedProcess:
    return subprocess.run([*PODMAN, *args], capture_output=True, text=True, timeout=timeout)  # noqa: S603


def test_the_image_runs_every_role_and_takes_a_test_order_to_paid(tmp_path):
    database_url = os.environ["DATABASE_URL"]
    name = f"{urlsplit(database_url).path.lstrip('/')}_image_{uuid.uuid4().hex[:6]}"
    admin = urlunsplit(urlsplit(database_url)._replace(scheme="postgresql", path="/postgres"))
    tag = uuid.uuid4().hex[:8]
    port = free_port()
    media = tmp_path / "media"
    media.mkdir()
    os.chown(media, 10001, -1)  # the image's user
    env = {
        "DATABASE_URL": urlunsplit(urlsplit(database_url)._replace(path=f"/{name}")),
        "REDIS_URL": os.environ["REDIS_URL"],
        "SECRET_KEY": "image-test-secret-key-" + "x" * 40,
        "TOKEN_SIGNING_KEY": "image-test-token-key",
        "QUOTE_ENCRYPTION_KEY": "image-test-quote-key",
        "ALLOWED_HOSTS": "127.0.0.1",
        "PAYMENT_PLATFORM": "sandbox",
        "MEDIA_SHARED": "true",
        "SECURE_SSL_REDIRECT": "False",  # no TLS on loopback
        "PORT": str(port),
        "HOST": "127.0.0.1",
        "WEB_CONCURRENCY": "2",
        "CELERY_CONCURRENCY": "2",
        "WEBHOOK_CONCURRENCY": "1",
        "WEBHOOK_SLOW_CONCURRENCY": "1",
        "INBOUND_SMTP_LISTEN": f"127.0.0.1:{free_port()}",
        "CACHE_KEY_PREFIX": f"image-{tag}",
        "TASK_QUEUE": f"image-{tag}-tasks",
        "WEBHOOK_QUEUE": f"image-{tag}-webhooks",
        "WEBHOOK_SLOW_QUEUE": f"image-{tag}-webhooks-slow",
        "PAYOUTS_PROGRESS_INTERVAL_SECONDS": "2",
        "SANDBOX_PAYOUT_SCHEDULE_AFTER_SECONDS": "1",
        "SANDBOX_PAYOUT_PAID_AFTER_SECONDS": "2",
        **{f"{role.upper()}_METRICS_PORT": str(free_port()) for role in ("worker", "webhooks", "webhooks_slow", "beat", "inbound")},
        "PUBLIC_BASE_URL": f"http://127.0.0.1:{port}",
    }  # fmt: skip
    common = [*RUN, "-v", f"{media}:/srv/data/media", *(f"--env={k}={v}" for k, v in env.items())]
    containers = []
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    try:
        # release, then the demo partner and catalog (the README's flow starts from what make run prints).
        release = podman(*common, "--rm", IMAGE, "release")
        assert release.returncode == 0, release.stdout[-2000:] + release.stderr[-2000:]
        setup = podman(*common, "--rm", IMAGE, "python", "manage.py", "demo_setup", "--host", "127.0.0.1", "--port", str(port))  # fmt: skip
        assert setup.returncode == 0, setup.stderr[-2000:]
        pairs = printed_pairs(setup.stdout)

        for role in ROLES:
            container = f"partner-image-{tag}-{role}"
            started = podman(*common, "-d", "--name", container, IMAGE, role)
            assert started.returncode == 0, started.stderr
            containers.append(container)

        def logs() -> str:
            return "\n".join(f"--- {c}\n{podman('logs', '--tail', '30', c).stderr}" for c in containers)

        def healthy() -> bool:  # the image's HEALTHCHECK, on /healthz
            return podman("healthcheck", "run", containers[0], timeout=30).returncode == 0

        assert wait_for(healthy, timeout=120, interval=1), logs()
        api = f"http://127.0.0.1:{port}/v1"
        export_line = f"export API={api} CLIENT_ID={pairs['test-mode'][0]} CLIENT_SECRET={shlex.quote(pairs['test-mode'][1])}"  # fmt: skip
        result = bash(export_line, readme_flow())
        assert result.returncode == 0, result.stdout + result.stderr + logs()
        answers = [json.loads(line) for line in result.stdout.splitlines()]
        order = answers[-1]["data"]
        # The sandbox's transfer mail went to the inbound container; a worker reads it (not at once, as under
        # make run), then the order goes on to paid through the payout.
        assert answers[-2]["data"]["order_id"] == order["order_id"], answers[-2]
        assert (order["livemode"], order["status"]) in (
            (False, "awaiting_transfer"),
            (False, "ticket_received"),
        )

        token = http("POST", f"{api}/auth/token", json_body={"client_id": pairs["test-mode"][0], "client_secret": pairs["test-mode"][1], "grant_type": "client_credentials"})  # fmt: skip
        auth = {"Authorization": f"Bearer {token.body['data']['access_token']}"}

        def status() -> str:
            return http("GET", f"{api}/orders/{order['order_id']}", headers=auth).body["data"]["status"]

        # The transfer mail, through the inbound container and a worker, moves it to ticket_received.
        assert wait_for(lambda: status() == "ticket_received", timeout=180, interval=1), logs()
        # Test orders are never paid out: the test-mode advance walks the payout steps, through the same life cycle.
        advanced = http("POST", f"{api}/test/orders/{order['order_id']}/advance", json_body={"to": "paid"}, headers=auth)  # fmt: skip
        assert advanced.status == 200, advanced.body
        assert status() == "paid", logs()
        # Every role still runs.
        running = podman(
            "ps", "--format", "{{.Names}}", "--filter", f"name=partner-image-{tag}"
        ).stdout.split()
        assert sorted(running) == sorted(containers), logs()
        print(f"paid through the image's containers: {order['order_id']}")
    finally:
        for container in containers:
            podman("rm", "-f", "-t", "10", container)
        with psycopg.connect(admin, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
