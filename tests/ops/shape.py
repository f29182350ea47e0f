"""The Procfile shape as an operator runs it: every line of the Procfile, as written, through a shell, under
DJANGO_ENV=production against the tests' PostgreSQL and Redis, with ports, queues and runtime directories of its
own (two of them are two hosts), and Debian's Prometheus scraping it with the shipped configuration."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import time
import urllib.parse
import urllib.request
import uuid
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from tests.faults.live import BIN, ROOT, Process, Processes, free_port, http, production_env, wait_for

OBSERVABILITY = ROOT / "config" / "deploy" / "observability"
# The Procfile lines that run all the time, and the variable that sets each one's /metrics port.
METRICS_PORT_VARIABLES = {
    "worker": "WORKER_METRICS_PORT",
    "webhooks": "WEBHOOKS_METRICS_PORT",
    "webhooks_slow": "WEBHOOKS_SLOW_METRICS_PORT",
    "beat": "BEAT_METRICS_PORT",
    "inbound": "INBOUND_METRICS_PORT",
}
ROLES = ("web", *METRICS_PORT_VARIABLES)


def procfile() -> dict[str, str]:
    lines = (ROOT / "Procfile").read_text().splitlines()
    return dict(line.split(": ", 1) for line in lines if line.strip() and not line.startswith("#"))


def https(headers: dict[str, str] | None = None) -> dict[str, str]:
    """What the TLS-terminating load balancer in front of nginx adds (TRUSTED_PROXY_COUNT=2)."""
    return {"X-Forwarded-Proto": "https", "X-Forwarded-For": "198.51.100.7", **(headers or {})}


@dataclass
class Host:
    """One host's Procfile processes."""

    name: str
    processes: Processes
    env: dict[str, str]
    ports: dict[str, int]
    started: dict[str, Process] = field(default_factory=dict)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.ports['web']}"

    def targets(self) -> dict[str, str]:
        return {role: f"127.0.0.1:{port}" for role, port in self.ports.items() if role in ROLES}

    def start(self, roles=ROLES) -> None:
        lines = procfile()
        for role in roles:
            # From the project folder, as a process manager runs them; beat in the host's own folder, where it
            # keeps its schedule file (one per host, never the project's).
            self.started[role] = self.processes.spawn(
                f"{self.name}-{role}",
                ["/bin/sh", "-c", f"exec {lines[role]}"],
                self.env,
                cwd=self.cwd if role == "beat" else ROOT,
            )

    @property
    def cwd(self) -> Path:
        path = self.processes.tmp / self.name
        path.mkdir(exist_ok=True)
        return path

    def wait_serving(self, timeout: float = 90) -> None:
        def answering() -> bool:
            with contextlib.suppress(OSError):
                return http("GET", self.url + "/healthz", timeout=2).status == 200
            return False

        assert wait_for(answering, timeout=timeout), self.logs()

        def exporting() -> bool:
            for role in self.started:
                if role in METRICS_PORT_VARIABLES:
                    try:
                        http("GET", f"http://127.0.0.1:{self.ports[role]}/metrics", timeout=2)
                    except OSError:
                        return False
            return True

        assert wait_for(exporting, timeout=timeout), self.logs()

    def logs(self, tail: int = 2500) -> str:
        return "\n".join(f"--- {name}\n{p.output()[-tail:]}" for name, p in self.started.items())

    def kill(self) -> None:
        """SIGKILL to every process of the host (their process groups: gunicorn's workers and nginx, the
        Celery pools), as when the machine dies."""
        import signal

        for process in self.started.values():
            process.kill(signal.SIGKILL)


def host_env(
    name: str, tmp: Path, *, token: str, queues: dict[str, str], **overrides: str
) -> tuple[dict, dict]:
    """The environment a process manager gives each line of one host, and the host's ports."""
    ports = {
        "web": free_port(),
        **{role: free_port() for role in METRICS_PORT_VARIABLES},
        "smtp": free_port(),
    }
    env = production_env(
        PATH=f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}",
        PYTHONPATH=str(ROOT),
        PORT=str(ports["web"]),
        HOST="127.0.0.1",
        WEB_CONCURRENCY="2",
        WEB_THREADS="4",
        NGINX_WORKERS="1",
        WEB_RUNTIME_DIR=str(tmp / name / "web-runtime"),
        # A TLS-terminating balancer in front of nginx: the partner flow comes as https, the scrapes plain.
        TRUSTED_PROXY_COUNT="2",
        CELERY_CONCURRENCY="2",
        WEBHOOK_CONCURRENCY="1",
        WEBHOOK_SLOW_CONCURRENCY="1",
        METRICS_TOKEN=token,
        INBOUND_SMTP_LISTEN=f"127.0.0.1:{ports['smtp']}",
        WEBHOOK_ALLOW_HTTP="true",
        WEBHOOK_ALLOW_PRIVATE_TARGETS="true",
        STATIC_ROOT=str(tmp / "static"),
        MEDIA_ROOT=str(tmp / "media"),
        MEDIA_SHARED="true",
        **{variable: str(ports[role]) for role, variable in METRICS_PORT_VARIABLES.items()},
        **queues,
        **overrides,
    )
    env.pop("SECURE_SSL_REDIRECT")  # production's own: plain HTTP is redirected, except /metrics and health
    return env, ports


def own_queues() -> dict[str, str]:
    """Queue names of the test's own (TASK_QUEUE, WEBHOOK_QUEUE, WEBHOOK_SLOW_QUEUE renamed), so nothing else on
    the Redis db takes its messages."""
    tag = uuid.uuid4().hex[:8]
    return {
        "TASK_QUEUE": f"ops-{tag}-tasks",
        "WEBHOOK_QUEUE": f"ops-{tag}-webhooks",
        "WEBHOOK_SLOW_QUEUE": f"ops-{tag}-webhooks-slow",
    }


def collect_static(env: dict[str, str]) -> None:
    result = subprocess.run(  # noqa: S603
        [str(BIN / "python"), "manage.py", "collectstatic", "--noinput"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert result.returncode == 0, result.stderr[-3000:]


# --- Prometheus ----------------------------------------------------------------------------------------------
def prometheus_config(tmp: Path, hosts: list[Host], token: str, *, interval: str = "1s") -> Path:
    """The shipped prometheus.yml, with only what this machine decides changed: the targets' addresses (every
    host's, as its comments say for several hosts), the token file's path, the rules' path and a 1-second
    interval so the test does not wait 15 s per scrape."""
    config = yaml.safe_load((OBSERVABILITY / "prometheus.yml").read_text())
    token_file = tmp / "metrics-token"
    token_file.write_text(token)
    config["global"]["scrape_interval"] = interval
    config["global"]["evaluation_interval"] = interval
    config["rule_files"] = [str(OBSERVABILITY / name) for name in config["rule_files"]]
    (job,) = config["scrape_configs"]
    job["authorization"]["credentials_file"] = str(token_file)
    shipped = {group["labels"]["process"] for group in job["static_configs"]}
    assert shipped == set(ROLES), shipped
    job["static_configs"] = [
        {"targets": [host.targets()[role] for host in hosts], "labels": {"process": role}} for role in ROLES
    ]
    path = tmp / "prometheus.yml"
    path.write_text(yaml.safe_dump(config))
    return path


@dataclass
class Prometheus:
    url: str
    process: Process

    def api(self, path: str, **params: str) -> dict:
        query = ("?" + urllib.parse.urlencode(params)) if params else ""
        with urllib.request.urlopen(self.url + path + query, timeout=10) as response:  # noqa: S310
            body = json.loads(response.read())
        assert body["status"] == "success", body
        return body["data"]

    def targets(self) -> list[dict]:
        return self.api("/api/v1/targets")["activeTargets"]

    def value(self, expr: str) -> float:
        result = self.api("/api/v1/query", query=expr)["result"]
        return float(result[0]["value"][1]) if result else 0.0


def start_prometheus(processes: Processes, config: Path) -> Prometheus:
    binary = shutil.which("prometheus")
    assert binary, "Debian's prometheus is not installed: `make install` installs it"
    port = free_port()
    process = processes.spawn(
        "prometheus",
        [
            binary,
            f"--config.file={config}",
            f"--storage.tsdb.path={config.parent / 'prometheus-data'}",
            f"--web.listen-address=127.0.0.1:{port}",
        ],
        dict(os.environ),
    )
    prometheus = Prometheus(f"http://127.0.0.1:{port}", process)

    def ready() -> bool:
        with (
            contextlib.suppress(OSError),
            urllib.request.urlopen(prometheus.url + "/-/ready", timeout=2) as r,
        ):  # noqa: S310
            return r.status == 200
        return False

    assert wait_for(ready, timeout=60), process.output()[-3000:]
    return prometheus


def poll(predicate, timeout: float, what: str, detail=lambda: "") -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.5)
    assert predicate(), f"{what}\n{detail()}"
