"""The production shape on loopback: a fresh PostgreSQL database, Redis, nginx in front of gunicorn (as the
Procfile's ``web`` runs them, config/deploy/serve.py) and one Celery worker; with ``through_nginx=False``
gunicorn bound directly, and ``start_bare()`` the bare Django project (bench/bare_project) as a ceiling.

Used by ``make bench`` (bench/run.py) and ``make soak`` (bench/soak.py). Everything it starts it stops,
by process group id, when the ``with`` block ends.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import requests

ROOT = Path(__file__).resolve().parent.parent
VENV_BIN = Path(sys.executable).parent
RESULTS = ROOT / "bench" / "results"

# Gunicorn settings of the production shape, chosen with bench/sweep.py on the 2-core machine: gthread,
# 4 processes of 4 threads. Threads overlap the waits of the write path (commits, Redis, the Celery
# publish): the order flow ran 60% faster than with 4 sync workers, reads were within a few percent.
# Keep-alive off: the proxy in front keeps the clients' connections; with it on, wrk's 16 long-lived
# connections piled onto one or two workers (the busiest did up to 100% of the work) and the figures
# swung from run to run. `make bench BENCH_ARGS="--workers N --threads N --gunicorn-extra ..."` overrides.
DEFAULT_WORKERS = 4
DEFAULT_THREADS = 4
DEFAULT_WORKER_CLASS = "gthread"
DEFAULT_GUNICORN_EXTRA = ("--keep-alive", "0")

# Rate limits are raised far out of reach for the load run: the benchmark measures the request path,
# not the limiter's refusals. The limiter still runs (and counts in Redis) on every request.
BENCH_RATE_LIMIT = 1_000_000_000
# The production settings every process of the benchmark runs with (bench/request_cpu.py too).
PRODUCTION_ENV = {
    # The service's settings plus the benchmark's hooks (bench/settings.py): the ceiling at /bench/bare, and the
    # counting middleware where BENCH_COUNT=1.
    "DJANGO_SETTINGS_MODULE": "bench.settings",
    "DJANGO_ENV": "production",
    "SECRET_KEY": "bench-secret-key-" + "x" * 40,
    "TOKEN_SIGNING_KEY": "bench-token-signing-key",
    "QUOTE_ENCRYPTION_KEY": "bench-quote-encryption-key",
    "ALLOWED_HOSTS": "127.0.0.1,localhost",
    # No TLS on loopback: the production redirect to https would answer every request with 301.
    "SECURE_SSL_REDIRECT": "False",
    "RATE_LIMIT_PER_MINUTE": str(BENCH_RATE_LIMIT),
    "TOKEN_RATE_LIMIT_PER_MINUTE": str(BENCH_RATE_LIMIT),
}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def database_url(base: str, name: str) -> str:
    parts = urlsplit(base)
    return urlunsplit(parts._replace(path="/" + name))


def recreate_database(url: str) -> None:
    """Drop and create the database named in ``url`` (a fresh database for every run)."""
    import psycopg

    name = urlsplit(url).path.lstrip("/")
    admin = database_url(url, "postgres")
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        conn.execute(f'CREATE DATABASE "{name}"')


def flush_redis(url: str) -> None:
    import redis

    redis.Redis.from_url(url).flushdb()


def rss_kib(pid: int) -> tuple[int, int]:
    """(VmRSS, VmHWM) of a process in KiB, from /proc."""
    values = {}
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(("VmRSS:", "VmHWM:")):
                name, value = line.split(":", 1)
                values[name] = int(value.split()[0])
    return values["VmRSS"], values["VmHWM"]


class PeakRss:
    """Samples a process's resident memory every 2 ms while the ``with`` block runs."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.before = rss_kib(pid)[0]
        self.peak = self.before
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)

    def _sample(self) -> None:
        while not self._stop.is_set():
            self.peak = max(self.peak, rss_kib(self.pid)[0])
            time.sleep(0.002)

    def __enter__(self) -> PeakRss:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()
        self.peak = max(self.peak, rss_kib(self.pid)[0])


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process so far, from /proc/<pid>/stat."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except FileNotFoundError:
        return 0.0
    # fields[0] is field 3 (state); utime and stime are fields 14 and 15.
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def services_cpu() -> dict[str, dict[int, float]]:
    """The CPU time so far of each process of PostgreSQL (the server and its backends) and Redis on this machine,
    by pid: what a scenario costs the machine beyond its web and Celery processes. The bench's database and
    Redis run here; nothing else uses them while it runs."""
    found: dict[str, dict[int, float]] = {"postgres": {}, "redis": {}}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                command = f.read(200).split(b"\0", 1)[0]
        except OSError:
            continue
        # A backend names itself "postgres: 15/main: …"; the server and Redis run under their program's path.
        name = os.path.basename(command.split(b":", 1)[0].split(b" ", 1)[0])
        group = "postgres" if name == b"postgres" else "redis" if name.startswith(b"redis-server") else None
        if group is not None:
            found[group][int(entry)] = cpu_seconds(int(entry))
    return found


def children(pid: int) -> list[int]:
    try:
        with open(f"/proc/{pid}/task/{pid}/children") as f:
            return [int(p) for p in f.read().split()]
    except FileNotFoundError:
        return []


@dataclass
class Server:
    name: str
    port: int  # where clients connect: nginx's port, or gunicorn's when started without nginx
    process: subprocess.Popen  # gunicorn's master (its workers are its children)
    log: Path
    upstream_port: int | None = None  # gunicorn's own port behind nginx

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def worker_pids(self) -> list[int]:
        return children(self.process.pid)


@dataclass
class Stack:
    """One database + Redis namespace, and the processes serving it."""

    database: str
    run_dir: Path
    redis_url: str = "redis://127.0.0.1:6379/6"
    cache_prefix: str = "bench"
    workers: int = DEFAULT_WORKERS
    threads: int = DEFAULT_THREADS
    worker_class: str = DEFAULT_WORKER_CLASS
    base_database_url: str = "postgres://postgres@127.0.0.1:5432/postgres"
    gunicorn_extra: list[str] = field(default_factory=lambda: list(DEFAULT_GUNICORN_EXTRA))
    extra_env: dict[str, str] = field(default_factory=dict)
    # nginx in front of each gunicorn, as in production (config/deploy/nginx); False measures gunicorn bare.
    through_nginx: bool = True
    processes: list[subprocess.Popen] = field(default_factory=list)
    servers: list[Server] = field(default_factory=list)

    @property
    def database_url(self) -> str:
        return database_url(self.base_database_url, self.database)

    def env(self) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("DJANGO_", "DATABASE_"))}
        env.update(
            {
                **PRODUCTION_ENV,
                "DATABASE_URL": self.database_url,
                "REDIS_URL": self.redis_url,
                "CACHE_KEY_PREFIX": self.cache_prefix,
                # No BENCH_COUNT: the timed servers carry no counting middleware (bench/counting.py); the counting
                # pass starts a server of its own with env={"BENCH_COUNT": "1"}.
                "MEDIA_ROOT": str(self.run_dir / "media"),
                "MEDIA_SHARED": "true",  # one host
                "STATIC_ROOT": str(self.run_dir / "static"),
                # Four slashes: django-environ drops the first one of the path ("filemail:///x" is "x").
                "EMAIL_URL": f"filemail:///{self.run_dir / 'mail'}",
                "PAYMENT_PLATFORM": "sandbox",
                "PYTHONUNBUFFERED": "1",
            }
        )
        env.update(self.extra_env)
        return env

    # --- setup -----------------------------------------------------------------------------------
    def manage(self, *args: str, capture: bool = False, timeout: float = 900) -> str:
        result = subprocess.run(
            [str(VENV_BIN / "python"), "manage.py", *args],
            cwd=ROOT,
            env=self.env(),
            check=False,
            capture_output=True,
            text=True,
            timeout=timeout,
        )
        if result.returncode != 0:
            raise RuntimeError(f"manage.py {' '.join(args)} failed:\n{result.stdout}\n{result.stderr}")
        return result.stdout if capture else ""

    def prepare(self, *, fresh: bool = True) -> None:
        self.run_dir.mkdir(parents=True, exist_ok=True)
        for sub in ("media", "mail", "static"):
            shutil.rmtree(self.run_dir / sub, ignore_errors=True)
            (self.run_dir / sub).mkdir(parents=True)
        if fresh:
            recreate_database(self.database_url)
        self.manage("migrate", "--noinput")

    def has_command(self, name: str) -> bool:
        out = self.manage("help", "--commands", capture=True)
        return name in out.split()

    def seed(self, events: int, seed: int = 1) -> bool:
        if not self.has_command("seed_catalog"):
            return False
        self.manage("seed_catalog", "--events", str(events), "--seed", str(seed), timeout=1800)
        return True

    def create_partner(self, name: str) -> dict[str, str]:
        out = self.manage("create_partner", "--name", name, "--with-payment-methods", "--json", capture=True)
        return json.loads(out.strip().splitlines()[-1])

    def shell(self, code: str) -> str:
        return self.manage("shell", "-c", code, capture=True)

    # --- processes ---------------------------------------------------------------------------------
    def _spawn(self, args: list[str], log: Path, env: dict[str, str] | None = None) -> subprocess.Popen:
        handle = open(log, "ab")  # noqa: SIM115 - kept open for the child's lifetime
        process = subprocess.Popen(
            args,
            cwd=ROOT,
            env={**self.env(), **(env or {})},
            stdout=handle,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        self.processes.append(process)
        return process

    def start_web(
        self,
        name: str = "web",
        *,
        workers: int | None = None,
        threads: int | None = None,
        worker_class: str | None = None,
        env: dict[str, str] | None = None,
    ) -> Server:
        port = upstream = free_port()
        workers = workers or self.workers
        threads = threads or self.threads
        worker_class = worker_class or self.worker_class
        args = self._gunicorn(
            "config.wsgi", port=upstream, workers=workers, threads=threads, worker_class=worker_class
        )
        log = self.run_dir / f"{name}.log"
        env = dict(env or {})
        # As in production: every worker writes its metrics to a directory of its server (multiprocess mode).
        metrics_dir = self.run_dir / f"prometheus-{name}"
        metrics_dir.mkdir(parents=True, exist_ok=True)
        for stale in metrics_dir.glob("*.db"):
            stale.unlink()
        env.setdefault("PROMETHEUS_MULTIPROC_DIR", str(metrics_dir))
        if self.through_nginx:
            env.setdefault("TRUSTED_PROXY_COUNT", "1")  # nginx appends the client to X-Forwarded-For
        gunicorn = self._spawn(args, log, env)
        if self.through_nginx:
            port = free_port()
            self._start_nginx(name, listen=port, upstream=upstream)
        server = Server(
            name=name,
            port=port,
            process=gunicorn,
            log=log,
            upstream_port=upstream if self.through_nginx else None,
        )
        self.servers.append(server)
        self._wait_ready(server, workers)
        return server

    def _gunicorn(self, app: str, *, port: int, workers: int, threads: int, worker_class: str) -> list[str]:
        """The gunicorn command line of every server the bench starts: the service's and the bare project's."""
        return [
            str(VENV_BIN / "gunicorn"),
            app,
            "--bind",
            f"127.0.0.1:{port}",
            "--workers",
            str(workers),
            "--worker-class",
            worker_class,
            "--threads",
            str(threads),
            "--backlog",
            "2048",
            "--timeout",
            "60",
            "--log-level",
            "warning",
            *self.gunicorn_extra,
        ]

    def start_bare(self, name: str = "bare", *, workers: int | None = None) -> Server:
        """The bare Django project (bench/bare_project) under the same gunicorn flags as the service, never
        behind nginx: the direct mode's ceiling."""
        port = free_port()
        workers = workers or self.workers
        args = self._gunicorn(
            "bench.bare_project.wsgi",
            port=port,
            workers=workers,
            threads=self.threads,
            worker_class=self.worker_class,
        )
        log = self.run_dir / f"{name}.log"
        server = Server(name=name, port=port, process=self._spawn(args, log), log=log)
        self.servers.append(server)
        self._wait_ready(server, workers)
        return server

    def _start_nginx(self, name: str, *, listen: int, upstream: int) -> subprocess.Popen:
        from config.deploy import nginx

        conf = nginx.render(
            prefix=self.run_dir / f"{name}-nginx",
            listen=f"127.0.0.1:{listen}",
            upstream=f"127.0.0.1:{upstream}",
        )
        return self._spawn(nginx.command(conf), self.run_dir / f"{name}-nginx.log")

    def _wait_ready(self, server: Server, workers: int, timeout: float = 60) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if server.process.poll() is not None:
                raise RuntimeError(f"gunicorn {server.name} exited; see {server.log}")
            try:
                if requests.get(server.url + "/healthz", timeout=2).status_code == 200 and (
                    len(server.worker_pids()) >= workers
                ):
                    return
            except requests.RequestException:
                pass
            time.sleep(0.2)
        raise RuntimeError(f"gunicorn {server.name} did not answer within {timeout}s; see {server.log}")

    def start_worker(
        self,
        *,
        concurrency: int = 1,
        beat: bool = False,
        name: str = "celery",
        queues: str | None = None,
        as_procfile: bool = False,
    ) -> subprocess.Popen:
        """A Celery worker. ``as_procfile``: exactly the Procfile's ``worker`` line (``--queues`` and
        ``--concurrency`` as given, log level WARNING), without the bench's own gossip, mingle and host name flags."""
        args = [
            str(VENV_BIN / "celery"),
            "-A",
            "config",
            "worker",
            *(["--queues", queues] if queues else []),
            "--loglevel",
            "WARNING",
            "--concurrency",
            str(concurrency),
        ]
        if not as_procfile:
            args += ["--without-gossip", "--without-mingle", "--hostname", f"{name}-{os.getpid()}@%h"]
        if beat:
            args += ["--beat", "--schedule", str(self.run_dir / "celerybeat-schedule")]
        process = self._spawn(args, self.run_dir / f"{name}.log")
        time.sleep(2)
        if process.poll() is not None:
            raise RuntimeError(f"celery worker exited; see {self.run_dir / (name + '.log')}")
        return process

    def stop(self) -> None:
        for process in reversed(self.processes):
            if process.poll() is None:
                try:
                    os.killpg(process.pid, signal.SIGTERM)
                except ProcessLookupError:
                    continue
        for process in reversed(self.processes):
            try:
                process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(process.pid, signal.SIGKILL)
                process.wait(timeout=5)
        self.processes.clear()
        self.servers.clear()

    def __enter__(self) -> Stack:
        return self

    def __exit__(self, *exc) -> None:
        self.stop()
