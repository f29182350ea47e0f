"""`make image-test`: the roles of the image (config/deploy/container/Containerfile) run as containers with
Debian's podman against this machine's PostgreSQL and Redis, and the README's partner flow, as printed, takes a
test-mode order through them to ``paid`` (partner_flow.py).

Outside the suite of `make test` (building the image takes minutes): `make image-test` builds it, then runs this.
A fresh database and queue names of its own; every container started here is removed at the end.
"""

from __future__ import annotations

import os
import subprocess
import uuid
from urllib.parse import urlsplit, urlunsplit

import psycopg

from tests.deploy.partner_flow import printed_pairs, take_a_test_order_to_paid
from tests.faults.live import free_port, wait_for

IMAGE = os.environ.get("IMAGE", "localhost/partner-service:latest")
PODMAN = ["podman", "--runtime", "runc"]
# What these machines allow: runc (crun refuses the hybrid cgroups), no raised limits, the host's network.
RUN = ["run", "--network", "host", "--ulimit", "nofile=4096:4096", "--ulimit", "nproc=4096:4096"]
ROLES = ("web", "worker", "webhooks", "webhooks_slow", "beat", "inbound")


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
            try:
                return podman("healthcheck", "run", containers[0], timeout=30).returncode == 0
            except subprocess.TimeoutExpired:  # a loaded machine: try again
                return False

        assert wait_for(healthy, timeout=120, interval=1), logs()
        order_id = take_a_test_order_to_paid(f"http://127.0.0.1:{port}/v1", pairs["test-mode"], logs)
        # Every role still runs.
        running = podman(
            "ps", "--format", "{{.Names}}", "--filter", f"name=partner-image-{tag}"
        ).stdout.split()
        assert sorted(running) == sorted(containers), logs()
        print(f"paid through the image's containers: {order_id}")
    finally:
        for container in containers:
            podman("rm", "-f", "-t", "10", container)
        with psycopg.connect(admin, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
