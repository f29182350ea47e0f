"""The ``web`` process of the production shape: nginx on ``$PORT`` in front of gunicorn on loopback.

``python -m config.deploy.serve`` (the Procfile's ``web``) renders the nginx configuration (config/deploy/nginx) into a
runtime directory, starts gunicorn bound to 127.0.0.1 (so only this machine reaches it; a loopback port
rather than a unix socket, which nginx's unprivileged workers could not reach inside a private directory),
waits until it answers, then starts nginx. If either exits, the other is stopped and the exit status passed on; SIGTERM
and SIGINT stop both (nginx first, so no new request reaches a gunicorn that is leaving).

Environment: ``PORT`` (8000), ``HOST`` (0.0.0.0), ``WEB_CONCURRENCY`` (gunicorn workers, 4),
``WEB_THREADS`` (threads per worker, 4), ``NGINX_WORKERS`` (auto), ``PROMETHEUS_MULTIPROC_DIR`` (the
workers' metrics files; ``prometheus/`` in the runtime directory by default), ``UPSTREAM_PORT`` (gunicorn's port on
127.0.0.1; a free one by default), ``WEB_RUNTIME_DIR`` (a new temporary directory). ``TRUSTED_PROXY_COUNT`` defaults to 1 here: nginx appends the client's address to
X-Forwarded-For; set it to 2 when a load balancer that appends its own entry sits in front of nginx (nginx
then also passes on that balancer's X-Forwarded-Proto; otherwise it sets the header to its own scheme).
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from config.deploy import nginx

ROOT = Path(__file__).resolve().parents[2]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def gunicorn_command(upstream: str, *, workers: str, threads: str, extra: list[str]) -> list[str]:
    return [
        str(Path(sys.executable).with_name("gunicorn")),
        "--config",
        str(ROOT / "config" / "deploy" / "gunicorn_conf.py"),
        "config.wsgi",
        "--bind",
        upstream,
        "--workers",
        workers,
        "--worker-class",
        "gthread",
        "--threads",
        threads,
        # nginx opens one upstream connection per request (HTTP/1.0): nothing to keep alive.
        "--keep-alive",
        "0",
        *extra,
    ]


def wait_for_port(port: int, process: subprocess.Popen, timeout: float = 60) -> None:
    """Until gunicorn accepts on 127.0.0.1:``port``."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"gunicorn exited with status {process.returncode}")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError(f"gunicorn did not listen on 127.0.0.1:{port} within {timeout} s")


def main(argv: list[str]) -> int:
    runtime = Path(os.environ.get("WEB_RUNTIME_DIR") or tempfile.mkdtemp(prefix="partner-web-"))
    runtime.mkdir(parents=True, exist_ok=True)
    upstream = f"127.0.0.1:{os.environ.get('UPSTREAM_PORT') or free_port()}"
    # nginx is the public face (all interfaces by default, as gunicorn was); gunicorn stays on loopback.
    listen = f"{os.environ.get('HOST', '0.0.0.0')}:{os.environ.get('PORT', '8000')}"  # noqa: S104
    trusted_proxies = os.environ.get("TRUSTED_PROXY_COUNT", "1")
    conf = nginx.render(
        prefix=runtime,
        listen=listen,
        upstream=upstream,
        worker_processes=os.environ.get("NGINX_WORKERS", "auto"),
        # A load balancer trusted in front of nginx says which scheme its client used; otherwise nginx does.
        trust_forwarded_proto=int(trusted_proxies or 1) > 1,
    )
    env = {**os.environ, "TRUSTED_PROXY_COUNT": trusted_proxies}
    # Every gunicorn worker writes its metrics here; /metrics sums them (gunicorn_conf.py empties it at start).
    env.setdefault("PROMETHEUS_MULTIPROC_DIR", str(runtime / "prometheus"))
    app = subprocess.Popen(  # noqa: S603 - our own gunicorn, arguments from the operator's command line
        gunicorn_command(
            upstream,
            workers=os.environ.get("WEB_CONCURRENCY", "4"),
            threads=os.environ.get("WEB_THREADS", "4"),
            extra=argv,
        ),
        cwd=ROOT,
        env=env,
    )
    processes = [app]

    def stop(*_args) -> None:
        for process in reversed(processes):  # nginx first
            if process.poll() is None:
                process.send_signal(signal.SIGQUIT if process is not app else signal.SIGTERM)

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    try:
        wait_for_port(int(upstream.rsplit(":", 1)[1]), app)
    except RuntimeError as error:
        print(error, file=sys.stderr)
        stop()
        return 1
    processes.append(subprocess.Popen(nginx.command(conf), cwd=runtime))  # noqa: S603 - the rendered config
    print(f"serving on http://{listen} (nginx) → gunicorn at {upstream}", file=sys.stderr, flush=True)
    while all(process.poll() is None for process in processes):
        time.sleep(0.2)
    stop()
    for process in processes:
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
    return next((p.returncode for p in processes if p.returncode), 0)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
