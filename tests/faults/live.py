"""Real processes for the fault tests: gunicorn and Celery in the production shape, a TCP proxy that can
make Redis "die" and come back, and an SMTP server that can hang.

The shared Redis and PostgreSQL servers are never stopped: a dead Redis is the proxy in front of it
closing its port and resetting every open connection, which is what the web process sees when Redis
crashes.
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import signal
import socket
import socketserver
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

from django.conf import settings
from django.db import connection

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def database_url_of_tests() -> str:
    db = connection.settings_dict
    return (
        f"postgres://{db['USER'] or 'postgres'}@{db['HOST'] or '127.0.0.1'}:{db['PORT'] or 5432}/{db['NAME']}"
    )


def redis_url_via(port: int) -> str:
    """The tests' Redis URL (same db number), reached through a proxy listening on ``port``."""
    parts = urlsplit(settings.REDIS_URL)
    return urlunsplit(parts._replace(netloc=f"127.0.0.1:{port}"))


def real_clock_env() -> dict[str, str]:
    """This process's environment for a server of the tests' own that stands in for infrastructure (a redis-server):
    on the machine's real clock, like the shared PostgreSQL and Redis, even when `make test-dates` moves the
    clock of every other process (libfaketime's preload also breaks redis-server)."""
    return {k: v for k, v in os.environ.items() if k != "LD_PRELOAD" and not k.startswith("FAKETIME")}


@contextlib.contextmanager
def own_redis_server(directory: Path):
    """A redis-server of the test's own on a free port (the shared one is never stopped or frozen), answering
    when this yields ``(process, port)``; continued if it was stopped, and ended, afterwards."""
    port = free_port()
    server = subprocess.Popen(
        [
            "redis-server",
            "--port",
            str(port),
            "--bind",
            "127.0.0.1",
            "--save",
            "",
            "--appendonly",
            "no",
            "--dir",
            str(directory),
        ],  # fmt: skip
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
        env=real_clock_env(),
    )
    try:
        deadline = time.monotonic() + 10
        while (
            subprocess.run(
                ["redis-cli", "-p", str(port), "ping"], capture_output=True, env=real_clock_env(), timeout=5
            ).stdout.strip()
            != b"PONG"
        ):
            assert time.monotonic() < deadline, "redis-server did not start"
            time.sleep(0.05)
        yield server, port
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.kill(server.pid, signal.SIGCONT)
            server.terminate()
        server.wait(timeout=10)


def production_env(**overrides: str) -> dict[str, str]:
    """Environment of the production shape (DJANGO_ENV=production) against the test database."""
    env = {k: v for k, v in os.environ.items() if k != "DJANGO_SETTINGS_MODULE"}
    env.update(
        {
            "DJANGO_ENV": "production",
            "SECRET_KEY": settings.SECRET_KEY + "-production-shape-0123456789",
            "TOKEN_SIGNING_KEY": settings.TOKEN_SIGNING_KEY,
            "QUOTE_ENCRYPTION_KEY": settings.QUOTE_ENCRYPTION_KEY,
            "ALLOWED_HOSTS": "127.0.0.1",
            "PAYMENT_PLATFORM": "sandbox",
            "SECURE_SSL_REDIRECT": "False",  # no TLS on loopback
            "DATABASE_URL": database_url_of_tests(),
            "REDIS_URL": settings.REDIS_URL,
            "CACHE_KEY_PREFIX": settings.CACHES["default"].get("KEY_PREFIX", "ps"),
            "EMAIL_URL": "consolemail://",
            "MEDIA_SHARED": "true",  # one host: its MEDIA_ROOT is every host's
            "PYTHONUNBUFFERED": "1",
        }
    )
    env.update(overrides)
    return env


# --- HTTP --------------------------------------------------------------------------------------------
@dataclass
class Reply:
    status: int
    headers: dict[str, str]
    body: dict
    seconds: float

    @property
    def code(self) -> str | None:
        return (self.body.get("error") or {}).get("code")


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args, **kwargs):
        return None  # a 3xx is an answer to look at, not to follow


_OPENER = urllib.request.build_opener(_NoRedirect)


def http(
    method: str,
    url: str,
    *,
    json_body: dict | None = None,
    form: dict[str, str] | None = None,
    headers: dict[str, str] | None = None,
    timeout: float = 30,
) -> Reply:
    data = None
    headers = dict(headers or {})
    if json_body is not None:
        data = json.dumps(json_body).encode()
        headers["Content-Type"] = "application/json"
    elif form is not None:
        boundary = "----faults7MA4YWxkTrZu0gW"
        parts = [
            f'--{boundary}\r\nContent-Disposition: form-data; name="{k}"\r\n\r\n{v}\r\n'
            for k, v in form.items()
        ]
        data = ("".join(parts) + f"--{boundary}--\r\n").encode()
        headers["Content-Type"] = f"multipart/form-data; boundary={boundary}"
    request = urllib.request.Request(url, data=data, method=method, headers=headers)
    started = time.monotonic()
    try:
        with _OPENER.open(request, timeout=timeout) as response:
            status, raw, got = response.status, response.read(), dict(response.headers)
    except urllib.error.HTTPError as error:
        status, raw, got = error.code, error.read(), dict(error.headers)
    try:
        body = json.loads(raw) if raw else {}
    except ValueError:
        body = {"_text": raw.decode("utf-8", "replace")}
    return Reply(status, got, body, time.monotonic() - started)


def bearer_auth(url: str, creds, headers: dict[str, str] | None = None) -> dict[str, str]:
    """The ``Authorization`` header of a token the live service at ``url`` issues for ``creds`` (a partner's
    credentials, as ``tests.conftest.make_partner`` makes them), beside ``headers``: those the caller sends with
    every request (the TLS proxy's, say), sent with the token's request too."""
    token = http(
        "POST",
        url + "/v1/auth/token",
        json_body={"client_id": creds.client_id, "client_secret": creds.client_secret, "grant_type": "client_credentials"},
        headers=headers,
    )  # fmt: skip
    assert token.status == 200, token.body
    return {**(headers or {}), "Authorization": f"Bearer {token.body['data']['access_token']}"}


# --- processes -----------------------------------------------------------------------------------------
@dataclass
class Process:
    name: str
    popen: subprocess.Popen
    log: Path

    def kill(self, sig: int = signal.SIGKILL) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.popen.pid, sig)
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.popen.wait(timeout=20)

    def output(self) -> str:
        return self.log.read_text(errors="replace") if self.log.exists() else ""


@dataclass
class Processes:
    """Starts processes in their own process group and stops exactly those at the end of the test."""

    tmp: Path
    started: list[Process] = field(default_factory=list)

    def spawn(self, name: str, args: list[str], env: dict[str, str], *, cwd: Path = ROOT) -> Process:
        log = self.tmp / f"{name}.log"
        handle = log.open("ab")
        popen = subprocess.Popen(
            args, cwd=cwd, env=env, stdout=handle, stderr=subprocess.STDOUT, start_new_session=True
        )
        handle.close()
        process = Process(name, popen, log)
        self.started.append(process)
        return process

    def web(
        self, env: dict[str, str], *, name: str = "web", workers: int = 1, config: str | None = None
    ) -> str:
        """gunicorn config.wsgi with the production settings file, or ``config`` (``workers`` × 4 threads);
        returns its base URL once it answers."""
        port = free_port()
        process = self.spawn(
            name,
            [
                str(BIN / "gunicorn"),
                "--config",
                str(ROOT / (config or "config/deploy/gunicorn_conf.py")),
                "config.wsgi",
                "--bind",
                f"127.0.0.1:{port}",
                "--workers",
                str(workers),
                "--worker-class",
                "gthread",
                "--threads",
                "4",
                "--timeout",
                "60",
            ],  # fmt: skip
            env,
        )
        url = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 60
        while True:
            if process.popen.poll() is not None:
                raise RuntimeError(f"gunicorn exited:\n{process.output()}")
            with contextlib.suppress(OSError):
                if http("GET", url + "/healthz", timeout=2).status == 200:
                    return url
            if time.monotonic() > deadline:
                raise RuntimeError(f"gunicorn did not answer:\n{process.output()}")
            time.sleep(0.1)

    def proxied_web(
        self,
        env: dict[str, str],
        *,
        name: str = "web-nginx",
        workers: int = 1,
        extra_args: list[str] | tuple[str, ...] = (),
    ) -> str:
        """The Procfile's web process (``python -m config.deploy.serve``): nginx on a free loopback port, with
        its own runtime directory under the test's tmp dir, in front of gunicorn (``workers`` × 4
        threads, plus ``extra_args`` on its command line) on another loopback port. Returns nginx's base
        URL once a request goes through."""
        port = free_port()
        env = {
            **env,
            "PORT": str(port),
            "HOST": "127.0.0.1",
            "WEB_CONCURRENCY": str(workers),
            "WEB_THREADS": "4",
            "NGINX_WORKERS": "1",
            "WEB_RUNTIME_DIR": str(self.tmp / name),
        }
        process = self.spawn(name, [sys.executable, "-m", "config.deploy.serve", *extra_args], env)
        url = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 30
        while True:
            if process.popen.poll() is not None:
                raise RuntimeError(f"config.deploy.serve exited:\n{process.output()}")
            with contextlib.suppress(OSError):
                if http("GET", url + "/healthz", timeout=2).status == 200:
                    return url
            if time.monotonic() > deadline:
                raise RuntimeError(f"nginx + gunicorn did not answer:\n{process.output()}")
            time.sleep(0.1)

    def celery_worker(
        self,
        env: dict[str, str],
        *,
        queue: str,
        name: str = "celery",
        pool: str = "solo",
        concurrency: int = 1,
    ) -> Process:
        """A worker consuming ``queue``; the tasks it publishes itself (a confirmation batch's next one) go to
        ``queue`` too (``TASK_QUEUE``), as the Procfile's worker publishes to the queue it consumes. ``pool``:
        ``solo`` (one process), or ``prefork`` as the Procfile's worker runs."""
        env = {"TASK_QUEUE": queue, **env}
        return self.spawn(
            name,
            [
                str(BIN / "celery"),
                "-A",
                "config",
                "worker",
                "--pool",
                pool,
                "--concurrency",
                str(concurrency),
                "--queues",
                queue,
                "--without-gossip",
                "--without-mingle",
                "--without-heartbeat",
                "--hostname",
                f"{name}-{os.getpid()}-{queue}@%h",
                "--loglevel",
                "INFO",
            ],  # fmt: skip
            env,
        )

    def stop_all(self) -> None:
        for process in reversed(self.started):
            if process.popen.poll() is None:
                process.kill(signal.SIGTERM)


# --- a TCP proxy that can play dead --------------------------------------------------------------------
class TcpProxy:
    """Forwards 127.0.0.1:<port> to ``target``. ``down()`` closes the port and resets every connection
    (what clients see when the server behind it crashes); ``up()`` listens on the same port again.

    ``cut_after``, if set, sees every chunk a client sends; when it answers true, the chunk is forwarded and
    then both sides of that connection are reset: the server may have run the statement, the client never hears
    its answer (the case a retry must not double)."""

    def __init__(self, target: tuple[str, int], cut_after: Callable[[bytes], bool] | None = None) -> None:
        self.target = target
        self.cut_after = cut_after
        self.port = free_port()
        self._listener: socket.socket | None = None
        self._conns: set[socket.socket] = set()
        self._lock = threading.Lock()
        self._stop = threading.Event()

    def up(self) -> None:
        listener = socket.socket()
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(("127.0.0.1", self.port))
        listener.listen(64)
        self._listener = listener
        self._stop.clear()
        threading.Thread(target=self._accept, args=(listener,), daemon=True).start()

    def down(self) -> None:
        self._stop.set()
        if self._listener is not None:
            with contextlib.suppress(OSError):
                self._listener.shutdown(socket.SHUT_RDWR)
            self._listener.close()
            self._listener = None
        with self._lock:
            conns, self._conns = self._conns, set()
        for conn in conns:
            with contextlib.suppress(OSError):
                # RST rather than FIN: the peer's next read or write fails at once.
                conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
                conn.close()

    def _accept(self, listener: socket.socket) -> None:
        while not self._stop.is_set():
            try:
                client, _ = listener.accept()
            except OSError:
                return
            try:
                upstream = socket.create_connection(self.target, timeout=2)
            except OSError:
                client.close()
                continue
            with self._lock:
                self._conns.update((client, upstream))
            threading.Thread(target=self._pipe, args=(client, upstream), daemon=True).start()

    def _pipe(self, a: socket.socket, b: socket.socket) -> None:
        peers = {a: b, b: a}
        cut = False
        try:
            while not self._stop.is_set():
                readable, _, _ = select.select([a, b], [], [], 0.2)
                for sock in readable:
                    data = sock.recv(65536)
                    if not data:
                        return
                    peers[sock].sendall(data)
                    if sock is a and self.cut_after is not None and self.cut_after(data):
                        cut = True
                        return
        except (OSError, ValueError):  # ValueError: ``down()`` closed a socket while select() held it
            return
        finally:
            for sock in (a, b):
                with contextlib.suppress(OSError):
                    if cut:  # RST rather than FIN, as ``down()`` does
                        sock.setsockopt(
                            socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00"
                        )
                    sock.close()
            with self._lock:
                self._conns.difference_update((a, b))


# --- an SMTP server that records messages, or hangs -----------------------------------------------------
class FakeSmtp:
    """Minimal SMTP: records each message it accepts. With ``hang`` set, a client that connects gets no
    greeting and waits: a sender stuck talking to the mail server."""

    def __init__(self) -> None:
        self.messages: list[str] = []
        self.hang = threading.Event()
        self.connected = threading.Event()
        outer = self

        class Handler(socketserver.StreamRequestHandler):
            def handle(self) -> None:
                outer.connected.set()
                while outer.hang.is_set():
                    time.sleep(0.05)
                self.wfile.write(b"220 fake ESMTP\r\n")
                data_mode, lines = False, []
                for raw in self.rfile:
                    line = raw.decode("utf-8", "replace").rstrip("\r\n")
                    if data_mode:
                        if line == ".":
                            outer.messages.append("\n".join(lines))
                            data_mode, lines = False, []
                            self.wfile.write(b"250 queued\r\n")
                        else:
                            lines.append(line)
                        continue
                    verb = line.split(" ", 1)[0].upper()
                    if verb in ("EHLO", "HELO"):
                        self.wfile.write(b"250 fake\r\n")
                    elif verb == "DATA":
                        data_mode = True
                        self.wfile.write(b"354 go on\r\n")
                    elif verb == "QUIT":
                        self.wfile.write(b"221 bye\r\n")
                        return
                    else:
                        self.wfile.write(b"250 ok\r\n")

        self.server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.hang.clear()
        self.server.shutdown()
        self.server.server_close()


def wait_for(predicate, timeout: float = 30.0, interval: float = 0.05) -> bool:
    """Poll for another process to reach a state (the clock of the service is never slept on)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(interval)
    return bool(predicate())
