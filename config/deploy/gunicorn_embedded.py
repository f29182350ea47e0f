"""gunicorn settings of the embedded default (``make run``): one process that also runs the periodic work.

Everything of the production settings file (the access log that never writes a credential, the limits),
plus the hook that starts the in-process scheduler (``config.deploy.scheduler``) once the worker has loaded the
application, and the master's hooks that run the SMTP receiver (``manage.py inbound_smtp``) beside it. The
command line sets the bind address, workers and threads.
"""

from config.deploy.gunicorn_conf import *  # noqa: F403


def post_worker_init(worker) -> None:
    from config.deploy.scheduler import start_embedded_scheduler

    start_embedded_scheduler()


# --- the SMTP receiver (docs/operations/receiving-mail.md "Receiving mail") --------------------------------------------------
# `make run` serves the whole flow, transfer e-mails included: the master starts `manage.py inbound_smtp` once
# it has bound the web port, as its own child process, and stops it when it exits. The child is told by the
# kernel to die with the master (PR_SET_PDEATHSIG), so a killed `make run` leaves no receiver behind. A port
# already in use (a second `make run`, a receiver started by hand) stops the start with a clear message.
_receiver = None
_RECEIVER_START_SECONDS = 30.0


def _die_with_parent() -> None:
    import contextlib
    import ctypes
    import signal

    with contextlib.suppress(OSError):
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG


def _smtp_wanted() -> bool:
    import os

    channels = [c.strip() for c in os.environ.get("INBOUND_CHANNELS", "smtp").split(",")]
    return "smtp" in channels


def _answers(address: tuple[str, int]) -> bool:
    import socket

    with socket.socket(socket.AF_INET6 if ":" in address[0] else socket.AF_INET) as probe:
        probe.settimeout(0.5)
        return probe.connect_ex(address) == 0


def when_ready(server) -> None:
    import os
    import subprocess
    import sys
    import time

    global _receiver
    if not _smtp_wanted():
        server.log.info("INBOUND_CHANNELS has no smtp: no SMTP receiver started")
        return
    listen = os.environ.get("INBOUND_SMTP_LISTEN", "127.0.0.1:2525")
    host, _, port = listen.rpartition(":")
    address = (host.strip("[]") or "127.0.0.1", int(port))
    if _answers(address):
        server.log.error(
            "%s is in use: another SMTP receiver (a second `make run`, or `manage.py inbound_smtp`) is "
            "listening there. Stop it, or set INBOUND_SMTP_LISTEN=host:port to another port. Stopping.",
            listen,
        )
        server.halt(reason="SMTP port in use", exit_status=1)
        return
    _receiver = subprocess.Popen(  # noqa: S603 (our own interpreter and manage.py)
        [sys.executable, "manage.py", "inbound_smtp", "--listen", listen],
        preexec_fn=_die_with_parent,
    )
    deadline = time.monotonic() + _RECEIVER_START_SECONDS
    while time.monotonic() < deadline:
        if _receiver.poll() is not None:
            server.log.error(
                "The SMTP receiver did not start on %s (see its message above): stopping. Set "
                "INBOUND_SMTP_LISTEN=host:port for another port.",
                listen,
            )
            _receiver = None
            server.halt(reason="SMTP receiver failed to start", exit_status=1)
            return
        if _answers(address):
            server.log.info("SMTP receiver (pid %s) on %s", _receiver.pid, listen)
            return
        time.sleep(0.2)
    server.log.warning("The SMTP receiver is still starting on %s", listen)


def on_exit(server) -> None:
    import subprocess

    global _receiver
    if _receiver is None or _receiver.poll() is not None:
        return
    _receiver.terminate()
    try:
        _receiver.wait(timeout=25)
    except subprocess.TimeoutExpired:
        _receiver.kill()
    _receiver = None
