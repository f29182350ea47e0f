"""`make compose-test`: compose.yaml run exactly as docs/operations/install.md "Compose" prints it, with
podman-compose on this machine's podman: PostgreSQL and Redis (the local stand-ins of standins/), the one-shot
``release``, then every role; the README's partner flow, through the web container's published port, takes a
test-mode order to ``paid`` (partner_flow.py); then `down -v` leaves no container, volume or network behind.

Outside the suite of `make test`: `make compose-test` builds the images and installs the tool, then runs this.
"""

from __future__ import annotations

import os
import subprocess
import time
import uuid

from tests.deploy.partner_flow import printed_pairs, take_a_test_order_to_paid
from tests.faults.live import ROOT, free_port, wait_for

HERE = ROOT / "config" / "deploy" / "container"
PODMAN_COMPOSE = str(ROOT / "build" / "podman-compose" / "bin" / "podman-compose")
ROLES = ("web", "worker", "webhooks", "webhooks_slow", "beat", "inbound")
SERVICES = ("postgres", "redis", *ROLES)


def run(args: list[str], env: dict[str, str], timeout: float = 300) -> subprocess.CompletedProcess:
    return subprocess.run(args, cwd=ROOT, env=env, capture_output=True, text=True, timeout=timeout)  # noqa: S603


def install_compose_block() -> str:
    """docs/operations/install.md's "Compose" commands, as printed."""
    section = (ROOT / "docs/operations/install.md").read_text().split("\n### Compose\n", 1)[1]
    return section.split("\n### ", 1)[0].split("```sh\n", 1)[1].split("```", 1)[0]


def test_compose_runs_every_role_and_takes_a_test_order_to_paid(tmp_path):
    started = time.monotonic()
    project = f"partner-compose-{uuid.uuid4().hex[:8]}"
    web_port = free_port()
    # The secrets file compose.yaml reads (PARTNER_SERVICE_ENV), as an operator writes it; the sandbox's payouts
    # and the webhooks sped up for a test.
    settings = {
        "SECRET_KEY": "compose-test-secret-key-" + "x" * 40,
        "TOKEN_SIGNING_KEY": "compose-test-token-key",
        "QUOTE_ENCRYPTION_KEY": "compose-test-quote-key",
        "ALLOWED_HOSTS": "127.0.0.1,localhost",
        "PAYMENT_PLATFORM": "sandbox",
        "METRICS_TOKEN": "compose-test-metrics-token",
        "MEDIA_SHARED": "true",
        "SECURE_SSL_REDIRECT": "False",  # no TLS in front of the published port
        "PUBLIC_BASE_URL": f"http://127.0.0.1:{web_port}",
        "WEB_CONCURRENCY": "2",
        "CELERY_CONCURRENCY": "2",
        "WEBHOOK_CONCURRENCY": "1",
        "WEBHOOK_SLOW_CONCURRENCY": "1",
        "PAYOUTS_PROGRESS_INTERVAL_SECONDS": "2",
        "SANDBOX_PAYOUT_SCHEDULE_AFTER_SECONDS": "1",
        "SANDBOX_PAYOUT_PAID_AFTER_SECONDS": "2",
    }
    env_file = tmp_path / "partner-service.env"
    env_file.write_text("".join(f"{name}={value}\n" for name, value in settings.items()))
    # What the printed lines leave to the operator: the project's name, the secrets file, the host's ports.
    env = {
        **os.environ,
        "COMPOSE_PROJECT_NAME": project,
        "PARTNER_SERVICE_ENV": str(env_file),
        "WEB_PORT": str(web_port),
        "INBOUND_PORT": str(free_port()),
    }
    # What the printed lines export, for the commands below that are not among them.
    env_after = {
        **env,
        "CONTAINERS_CONF": str(HERE / "containers.conf"),
        "POSTGRES_IMAGE": "localhost/postgres-standin:15-bookworm",
        "REDIS_IMAGE": "localhost/redis-standin:7-bookworm",
    }

    def compose(*args: str, timeout: float = 600) -> subprocess.CompletedProcess:
        return run([PODMAN_COMPOSE, "-f", str(HERE / "compose.yaml"), *args], env_after, timeout)

    def podman(*args: str, timeout: float = 120) -> subprocess.CompletedProcess:
        return run(["podman", *args], env_after, timeout)

    def container(service: str) -> str:
        return f"{project}_{service}_1"

    def logs() -> str:
        tails = {service: podman("logs", "--tail", "30", container(service)) for service in SERVICES}
        return "\n".join(f"--- {service}\n{tail.stdout}{tail.stderr}" for service, tail in tails.items())

    def healthy(service: str) -> bool:
        # The service's healthcheck (compose.yaml's, or the image's HEALTHCHECK for web), run now: podman 4.3
        # runs healthchecks on a systemd timer, and these machines have no systemd.
        try:
            return podman("healthcheck", "run", container(service), timeout=30).returncode == 0
        except subprocess.TimeoutExpired:  # a loaded machine: try again
            return False

    def project_objects() -> list[str]:
        label = f"label=io.podman.compose.project={project}"
        return [
            *podman("ps", "-a", "--filter", label, "--format", "{{.Names}}").stdout.split(),
            *podman("volume", "ls", "--filter", label, "--format", "{{.Name}}").stdout.split(),
            *podman("network", "ls", "--filter", label, "--format", "{{.Name}}").stdout.split(),
        ]

    volumes: set[str] = set()  # every volume the containers mounted, anonymous ones included
    try:
        printed = run(["/bin/bash", "-c", "set -euo pipefail\n" + install_compose_block()], env, timeout=900)
        out = printed.stdout + printed.stderr
        assert printed.returncode == 0, out[-4000:] + logs()
        for service in SERVICES:
            mounts = podman("inspect", "--format", "{{range .Mounts}}{{.Name}} {{end}}", container(service))
            volumes.update(mounts.stdout.split())
        # The one-shot release ran before the roles, migrated the empty database and exited 0 (run --rm: gone).
        assert "Applying partners.0001_initial..." in out, out[-4000:]  # then " OK", in colour on the tty
        left_release = podman("ps", "-a", "--filter", f"label=io.podman.compose.project={project}", "--filter", "label=com.docker.compose.service=release", "--format", "{{.Names}}")  # fmt: skip
        assert left_release.stdout.split() == [], left_release.stdout
        applied = compose(
            "exec", "-T", "postgres", "psql", "-U", "partner", "-d", "partner", "-tAc", "SELECT count(*) FROM django_migrations"
        )  # fmt: skip
        assert applied.returncode == 0 and int(applied.stdout.strip()) > 0, applied.stdout + applied.stderr
        assert wait_for(lambda: healthy("web"), timeout=180, interval=2), logs()
        check = compose("exec", "-T", "web", "python", "manage.py", "migrate", "--check")
        assert check.returncode == 0, check.stdout + check.stderr
        print(f"\ncompose up, release run, every role up and web healthy: {time.monotonic() - started:.0f} s")

        # The demo partner and catalog the README's flow starts from, made inside the web container.
        setup = compose("exec", "-T", "web", "python", "manage.py", "demo_setup", "--host", "127.0.0.1", "--port", str(web_port))  # fmt: skip
        assert setup.returncode == 0, setup.stdout[-2000:] + setup.stderr[-2000:]
        pairs = printed_pairs(setup.stdout)

        order_id = take_a_test_order_to_paid(f"http://127.0.0.1:{web_port}/v1", pairs["test-mode"], logs)

        # Every service still runs.
        running = podman(
            "ps", "--filter", f"label=io.podman.compose.project={project}", "--format", "{{.Names}}"
        )
        assert sorted(running.stdout.split()) == sorted(container(s) for s in SERVICES), logs()
        print(f"paid through compose's containers: {order_id}")
    finally:
        down = compose("down", "-v", "-t", "10")
    assert down.returncode == 0, down.stdout[-2000:] + down.stderr[-2000:]
    left = project_objects() + [v for v in sorted(volumes) if podman("volume", "exists", v).returncode == 0]
    assert left == [], f"left behind by compose down -v: {left}"
    print(f"compose down -v, nothing left: {time.monotonic() - started:.0f} s in all")
