"""nginx in front of gunicorn: renders ``nginx.conf.template`` into a runtime directory of its own.

Everything nginx writes (pid, temporary bodies) lives under that directory, so it runs without root and
without touching /etc or /var (tests and benchmarks start their own on a free loopback port).
"""

from __future__ import annotations

import os
import pwd
import shutil
from pathlib import Path

TEMPLATE = Path(__file__).with_name("nginx.conf.template")
_TEMP_DIRS = ("client_body", "proxy", "fastcgi", "uwsgi", "scgi")
# Multipart bodies carry the 10 MB PDF plus the fields and part headers around it; kept in step with
# config/api/middleware.py (body_limit), which applies the same bound to chunked bodies without nginx.
MAX_BODY = "11m"


def nginx_binary() -> str:
    found = shutil.which("nginx") or shutil.which("nginx", path="/usr/sbin:/usr/local/sbin")
    if not found:
        raise RuntimeError("nginx is not installed: `make install` installs Debian's nginx")
    return found


def render(
    *,
    prefix: Path,
    listen: str,
    upstream: str,
    worker_processes: str = "auto",
    trust_forwarded_proto: bool = False,
) -> Path:
    """Write ``prefix/nginx.conf`` for nginx listening on ``listen`` (``host:port``) in front of
    ``upstream`` (``unix:/path.sock`` or ``127.0.0.1:port``); returns its path.

    nginx sets ``X-Forwarded-Proto`` to the scheme it was reached with; a client's header never gets
    through. ``trust_forwarded_proto`` (a proxy of the operator's sits in front and sets it) passes that
    proxy's header on instead."""
    prefix.mkdir(parents=True, exist_ok=True)
    user = ""
    if os.geteuid() == 0:
        # Started as root (a container): the workers drop to nobody, who must reach the temp dirs.
        user = "user nobody nogroup;"
        nobody = pwd.getpwnam("nobody")
        prefix.chmod(0o755)
    for name in _TEMP_DIRS:
        path = prefix / name
        path.mkdir(exist_ok=True)
        if user:
            os.chown(path, nobody.pw_uid, nobody.pw_gid)
    text = TEMPLATE.read_text()
    for key, value in {
        "@@USER@@": user,
        "@@WORKER_PROCESSES@@": worker_processes,
        "@@PREFIX@@": str(prefix),
        "@@LISTEN@@": listen,
        "@@UPSTREAM@@": upstream,
        "@@MAX_BODY@@": MAX_BODY,
        "@@MAX_BODY_TEXT@@": MAX_BODY.replace("m", " MB"),
        "@@FORWARDED_PROTO@@": "$proxy_forwarded_proto" if trust_forwarded_proto else "$scheme",
    }.items():
        text = text.replace(key, value)
    conf = prefix / "nginx.conf"
    conf.write_text(text)
    return conf


def command(conf: Path) -> list[str]:
    """The nginx command line for a rendered ``conf`` (foreground; its startup errors to stderr)."""
    return [nginx_binary(), "-p", str(conf.parent), "-c", str(conf), "-e", "stderr"]


def max_body_bytes() -> int:
    """``MAX_BODY`` in bytes."""
    return int(MAX_BODY.rstrip("m")) * 1024 * 1024
